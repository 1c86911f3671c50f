"""What a developer plugs in: the tool contract and hooks, and what a call is given.

Modules import one way, each only from those above it in this list:
- `limits`: the size limits on what tools send the model;
- `read_state`: what the agent has read, at which version (the basis of edit-before-read);
- `checkpoints`: what each prompt's run changed, kept so that a rewind can put it back;
- `decision`: the permission words a tool and the runtime share: modes, behaviours, who decided;
- `tool_context`: `ToolContext`, what a tool may know about the call it serves;
- `review`: a change shown where it happens, answerable there too (staged cell edits);
- `questions`: questions a tool asks the person (AskUserQuestion), and their answers;
- `tool_result`: `ToolResultBlock`, the tool_result block a result becomes for the model;
- `tool`: the `Tool[InputT, ResultT]` contract with fail-closed defaults, `ToolError`, permission answers;
- `tool_input`: a call's input as the model wrote it, checked against the tool's model;
- `build_tool`: a tool assembled from a pydantic model and plain functions;
- `hooks`: Python callables the runtime calls at fixed points of a run.
"""
