"""MCP servers' tools in the registry, under the same contract, rules and lifecycle as any tool.

This package sits beside the built-in tools: it builds Tools and imports the runtime, never the loop, the
UI or the magics. The `mcp` SDK is imported only when a server starts. Modules import one way,
each only from those above it in this list:
- `config`: the `.mcp.json` shape (stdio and streamable HTTP), from files and from code;
- `trust`: project servers start only after the person approved them, remembered per project;
- `elicitation`: a server's question for the person (a form), its answer and its checks;
- `loop`: the background event loop every session lives on, so servers outlive a run;
- `stdio`: the stdio transport: a linear line reader with a limit on one message;
- `jupyter_redirect`: the OAuth redirect through the Jupyter server: the files in Jupyter's
  runtime directory by which the server's handler hands it to the waiting kernel;
- `server_extension`: the Jupyter server extension, that handler
  (`<base_url>/ipy-agent/oauth/callback`);
- `oauth`: OAuth 2.1 for HTTP servers (the SDK's flow): the token files, the person's link or
  `Agent(mcp_authorize=...)`, the loopback redirect;
- `connection`: one server's session, its faults and restarts;
- `results`: an MCP tool result as tool_result blocks;
- `tools`: a server tool as a `Tool`;
- `resources`: servers' resources as ListMcpResourcesTool and ReadMcpResourceTool;
- `manager`: what the agent uses: sync before each request, the tools, close;
- `prompts`: `/mcp__server__prompt args` and `@server:uri` in the person's prompt;
- `report`: the text of `%agent_mcp`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .config import McpConfigError, ServerConfig, load_mcp_files, parse_servers, user_config_dir
    from .manager import McpManager, close_all
    from .trust import TrustStore

__all__ = [
    "McpConfigError",
    "McpManager",
    "ServerConfig",
    "TrustStore",
    "close_all",
    "load_mcp_files",
    "parse_servers",
    "user_config_dir",
]

# Each name and the module that defines it, imported on first use: the settings read
# `user_config_dir` at `%load_ext`, which must not start the manager's imports.
_EXPORTS = {
    "McpConfigError": "config",
    "McpManager": "manager",
    "ServerConfig": "config",
    "TrustStore": "trust",
    "close_all": "manager",
    "load_mcp_files": "config",
    "parse_servers": "config",
    "user_config_dir": "config",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
