"""The conversation and its loop: run -> turn -> stream the model -> execute tools.

Modules import one way, each only from those above it in this list:
- `spill`: where spilled results live for one conversation, and how they go away;
- `ask_person`: the approver as a run uses it: each question to the person fires the Notification hooks;
- `tool_session`: what each run starts with (tools' warnings, once per kernel), what a conversation's end closes;
- `system_prompt`: the model's environment and how to work with the tools here;
- `standing`: what follows the base prompt (instructions, the tools' sections), read once per prompt;
- `verify_gate`: a run that changed the notebook hands NotebookVerify's report to the model before it ends;
- `turn`: one turn, `run_turn`: the request and its tools, the model's stream, the tool calls, its end;
- `rewind_report`: what a rewind did, in words for the person and for the model;
- `rewind`: back to the state just before a prompt, from its checkpoints;
- `spend`: the budgets in force and the run's meter (shared with its subagents), and the policy in force;
- `subagent`: the Task tool, subagent types, and the run a Task's call belongs to;
- `mcp_serve`: the open notebook served to outside agents over MCP, each call through the executor;
- `claude_setup`: a Claude Code setup in an agent: plugins, `/name args` slash commands, agent files as Task types;
- `agent`: `Agent`, the conversation and the loop that puts model, runtime and tools together.
"""
