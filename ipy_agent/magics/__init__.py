"""`%agent` and its companion magics: the edge where IPython meets the runtime.

Modules import one way, each only from those above it in this list:
- `prompt_records`: each prompt's record, so that `%agent_rewind` marks the ones it undid;
- `run_settings`: the magics' configuration and a `%agent` line's options as the agent's config
  (a new conversation's, and the next run's);
- `session`: `AgentSession`, the state every magic shares (the conversation's agent, grants, the
  bridge, the run in progress) and how a request is prepared (one `Agent.configure(config)`) and run;
- `todo_human`: a TODO(human) cell a foreground run left: the person's run of it goes on with
  the conversation (the Learning style);
- `standing`: what `%agent_instructions` and `%agent_skills` print, and setting the notebook's
  instructions;
- `rewind`: `%agent_rewind`, back to just before a prompt, and its report;
- `verify`: `%agent_verify`, the notebook run top to bottom in a new kernel, its report as a table;
- `cell_runner`: how a `%agent` cell awaits its run in a kernel (an input transformer and a
  0.25 s tick, so interrupts and widget clicks arrive), and how the line reaches the magic;
- `companions`: `%agent_inspect`, `%agent_trace`, `%agent_history`, `%agent_context`,
  `%agent_tools`, `%agent_rules`, `%agent_mcp`, `%agent_instructions`, `%agent_skills`,
  `%agent_tasks`, `%agent_stop`, `%agent_compact`, `%agent_reset`, `%agent_save`, `%agent_rewind`;
- `serve`: `%agent_serve`, the open notebook served to outside agents over MCP (loop/mcp_serve.py);
- `plugins`: `%agent_plugins`, the Claude Code plugins, slash commands and agent files (list, add,
  remove, trust);
- `run`: `AgentMagics`, the configuration (traitlets: `%config AgentMagics.permission_mode`,
  `c.AgentMagics.allow` in ipython_config.py), and `%agent` / `%%agent`;
- `extension`: `%load_ext ipy_agent` and `%unload_ext ipy_agent`;
- `rerecord`: `python -m ipy_agent.magics.rerecord NOTEBOOK`, a teaching notebook's transcripts
  recorded again with a real model.
"""

from __future__ import annotations

from .cell_runner import current_session
from .extension import load_ipython_extension, unload_ipython_extension

__all__ = ["current_session", "load_ipython_extension", "unload_ipython_extension"]
