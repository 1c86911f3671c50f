"""The conversation and its loop: run -> turn -> stream the model -> execute tools.

Modules import one way, each only from those above it in this list:
- `spill`: where spilled results live for one conversation, and how they go away;
- `system_prompt`: the model's environment and how to work with the tools here;
- `standing`: what follows the base prompt (instructions, the tools' sections), read once per prompt;
- `offer`: the tools of one request in their API form, MCP servers' tools, tools' warnings;
- `turn`: one turn's records, the state an early end needs, and reading the model's stream;
- `turn_end`: each way a turn can end, leaving the history valid;
- `rewind_report`: what a rewind did, in words for the person and for the model;
- `rewind`: back to the state just before a prompt, from its checkpoints;
- `spend`: the budgets in force and the run's meter (shared with its subagents), and the policy in force;
- `subagent`: the Task tool, subagent types, and the run a Task's call belongs to;
- `agent`: `Agent`, the conversation and the loop that puts model, runtime and tools together.
"""
