"""TodoHuman: the Learning style's piece for the person, a code cell marked `# TODO(human)`.

The tool inserts a code cell into the live notebook with a short brief and the scaffold (the
lines the person is to write are marked `# TODO(human)`), fires the Notification hooks
("idle_prompt": the run waits for the person), and goes on once the person has run that cell,
with what they wrote and whether it ran without error (`person_ran`, notebook/runlog.py). The wait is an event: the
run log (notebook/runlog.py) reports each run of a cell id from IPython's `post_run_cell`;
nothing polls.

- A run where the person can run cells meanwhile (`%agent --background`, `PERSON_RUNS_CELLS` in
  the conversation's session, set by the magics) waits in the tool, and its result is what they
  wrote.
- A run in the foreground executes inside its own `%agent` cell, and the kernel runs no other
  cell until it ends. There the tool leaves the cell's id in the session (`PERSON_TO_RUN`) and
  tells the model to end its turn, saying what to write; when the person runs the cell, the
  conversation goes on by itself in that cell, its prompt what they wrote (magics/todo_human.py).

Offered only with a live notebook.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from ipy_agent.contract.build_tool import build_tool
from ipy_agent.contract.hooks import NOTIFY_PERSON
from ipy_agent.contract.tool import Tool, ToolError
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.notebook.bridge import BridgeError
from ipy_agent.notebook.runlog import PERSON_RUNS_CELLS, PERSON_TO_RUN, person_ran

from .live import live_bridge

__all__ = ["TODO_MARK", "TodoHumanInput", "todo_human_tool"]

TODO_MARK = "# TODO(human)"

DESCRIPTION = (
    "Leave a small piece of code for the person to write (the Learning style): inserts a code cell with "
    "`# TODO(human)`, your brief and the scaffold into the live notebook, then waits until the person has run "
    "it and returns what they wrote. Keep the piece small (2-10 lines) and the brief short: what to write, "
    "its inputs and expected result, one hint."
)


class TodoHumanInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    brief: str = Field(min_length=1, max_length=600, description="What the person is to write, and why (1-3 lines).")
    scaffold: str = Field(
        default="",
        max_length=4000,
        description="The code around the piece; mark the line(s) to write with `# TODO(human)`.",
    )
    after_cell_id: str | None = Field(default=None, description="Insert after this cell (default: at the end).")


def _source(inp: TodoHumanInput) -> str:
    brief = "\n".join(f"# {line}".rstrip() for line in inp.brief.strip().splitlines())
    body = inp.scaffold.strip("\n")
    if TODO_MARK not in body:
        body = f"{body}\n{TODO_MARK}: write it here".strip("\n")
    return f"{TODO_MARK}\n{brief}\n{body}\n"


async def _call(inp: TodoHumanInput, ctx: ToolContext) -> str:
    nb = live_bridge(ctx)
    if nb is None:
        raise ToolError("No live notebook: write the TODO(human) piece into your reply instead.")
    try:
        after = inp.after_cell_id
        if after is None:
            cells = (await nb.request("list_cells"))["cells"]
            after = cells[-1]["id"] if cells else None
        reply = await nb.request("insert_cell", after_id=after, cell_type="code", source=_source(inp))
    except BridgeError as e:
        raise ToolError(f"Could not insert the cell: {e}") from None
    cell_id = reply["cell"]["id"]
    notify = ctx.session.get(NOTIFY_PERSON)
    if callable(notify):
        await notify(f"ipy_agent left a TODO(human) cell for you to write and run: {inp.brief.strip()}", "idle_prompt")
    if ctx.session.get(PERSON_RUNS_CELLS) is not True:
        ctx.session[PERSON_TO_RUN] = cell_id
        return (
            f"Inserted cell {cell_id} with the TODO(human) piece. This run executes inside the person's %agent "
            "cell, so they can run the new cell only after it ends: end your turn now, saying in one sentence "
            "what to write there. When they run it, the conversation goes on by itself with what they wrote."
        )
    # A new cell: any run the log holds happened since it was inserted (the person was quick).
    run = nb.runs.get(cell_id) or await nb.runs.next_run(cell_id)
    return person_ran(run)


def todo_human_tool() -> Tool[TodoHumanInput, str]:
    return build_tool(
        name="TodoHuman",
        input_model=TodoHumanInput,
        description=DESCRIPTION,
        call=_call,
        is_enabled=lambda ctx: live_bridge(ctx) is not None,
        kind="edit",
        summarize_use=lambda inp: f"TODO(human): {inp.brief.strip().splitlines()[0][:80]}",
    )
