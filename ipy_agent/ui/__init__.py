"""What the person sees: the run in a cell (widgets or text), prompts, records and inspection views.

Modules import one way, each only from those above it in this list:
- `status`: how a call's status and duration look, one table for every view;
- `prompt_words`: what a prompt says, Allow / Deny or, for a cell edit under review, Accept / Reject;
- `diff_html`: diffs and plain text as small self-contained HTML;
- `citations`: a `[cell N]` in the model's answer as a link the page goes to cell N with;
- `record`: the static record of a finished run, what stays in the notebook file;
- `segments`: streamed assistant text and thinking in the widgets;
- `comm_ack`: acknowledging a widget's updates while its cell still awaits;
- `approval_widget`: the approval prompt of a row (Allow / Always / Deny, or Accept / Reject, with a reason);
- `question_widget`: the prompt of an AskUserQuestion row (options, "Other", Answer / Skip);
- `elicitation_form`: an MCP server's form, built from its JSON Schema (Submit / Decline / Cancel);
- `fallback_prompt`: noticing a prompt no page shows or can answer, and asking through the extension;
- `call_row`: one row per tool call, kept in bounded blocks;
- `progress`: the state line under a running agent;
- `announce`: telling the person, outside the cell, that a background run waits for them;
- `usage_line`: tokens, cost and the share of the context window of a run;
- `approver`: approvers for runs nobody watches, and a timeout for unanswered prompts;
- `text`: a run as text, for terminal IPython and kernels without widgets;
- `widgets`: `RunView`, the notebook view of one run;
- `course_answers`: prompts answered automatically for the course build and tests, said in the cell;
- `run_ui`: how a run is shown and who answers its prompts, chosen once per run;
- `rewind_view`: a rewind's report, a compact box with its text twin;
- `inspection`: text views of what the runtime did (`%agent_tools`, `%agent_inspect`, ...).
"""
