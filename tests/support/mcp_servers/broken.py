"""An MCP server that never starts: it complains on stderr and exits, as a misconfigured one does."""

import sys

print("broken: starting", file=sys.stderr)
print("broken: missing configuration: set TOOLBOX_TOKEN", file=sys.stderr, flush=True)
sys.exit(2)
