"""`%agent` and its companion magics: the edge where IPython meets the runtime.

- run.py: `AgentMagics`, its configuration (traitlets: `%config AgentMagics.permission_mode`,
  `c.AgentMagics.allow` in ipython_config.py), and `%agent` / `%%agent`: preparing a request
  (options, model, agent, rules, UI) and running it in the foreground or the background;
- companions.py: `%agent_inspect`, `%agent_trace`, `%agent_history`, `%agent_context`,
  `%agent_tools`, `%agent_rules`, `%agent_mcp`, `%agent_stop`, `%agent_compact`, `%agent_reset`,
  `%agent_save` (the base class of `AgentMagics`);
- extension.py: `%load_ext ipy_agent` and `%unload_ext ipy_agent`.

How a cell awaits its run is cell_runner.py; its names are importable from here too.
"""

from __future__ import annotations

from .cell_runner import agent_transformer, current_magics, run_agent_cell, terminal_transformer
from .extension import load_ipython_extension, unload_ipython_extension
from .run import AgentMagics

__all__ = ["AgentMagics", "load_ipython_extension", "unload_ipython_extension", "run_agent_cell",
           "agent_transformer", "terminal_transformer", "current_magics"]
