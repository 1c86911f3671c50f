"""MCP servers' tools in the registry, under the same contract, rules and lifecycle as any tool.

- config.py: the `.mcp.json` shape (stdio and streamable HTTP), from files and from code;
- trust.py: project servers start only after the person approved them, remembered per project;
- loop.py: the background event loop every session lives on, so servers outlive a run;
- connection.py: one server's session, its faults and restarts;
- tools.py / results.py: a server tool as a `Tool`, and its result as tool_result blocks;
- manager.py: what the agent uses: sync before each request, the tools, close;
- report.py: the text of `%agent_mcp`.

This package sits beside `tools/`: it builds Tools and imports the runtime, never the agent, the
UI or the magics. The `mcp` SDK is imported only when a server starts.
"""

from __future__ import annotations

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
