"""TodoHuman: the Learning style's piece for the person, a code cell marked `# TODO(human)`.

The tool inserts a code cell into the live notebook with a short brief and the scaffold (the
lines the person is to write are marked `# TODO(human)`), then waits until the person has run
that cell, and answers with what they wrote and whether it ran without error. The wait is an
event: the run log (notebook/runlog.py) resolves it when IPython's `post_run_cell` reports a
run of that cell id; nothing polls. A run in the foreground executes inside its own `%agent`
cell, and no other cell can run until it ends: there the tool inserts the cell and tells the
model to end its turn (the person runs the cell and then asks to go on). A run where the person
can run cells meanwhile (`%agent --background`) says so in the conversation's session
(`PERSON_RUNS_CELLS`, set by the magics), and waits. Offered only with a live notebook.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from ipy_agent.contract.build_tool import build_tool
from ipy_agent.contract.tool import Tool, ToolError
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.notebook.bridge import BridgeError
from ipy_agent.notebook.runlog import PERSON_RUNS_CELLS

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
    if ctx.session.get(PERSON_RUNS_CELLS) is not True:
        return (
            f"Inserted cell {cell_id} with the TODO(human) piece. This run executes inside the person's %agent "
            "cell, so they can run the new cell only after it ends: end your turn now, saying in one sentence "
            "what to write there, and go on when they ask you to."
        )
    # A new cell: any run the log holds happened since it was inserted (the person was quick).
    run = nb.runs.get(cell_id) or await nb.runs.next_run(cell_id)
    outcome = f"It failed: {run.error}" if run.error else "It ran without error."
    return (
        f"The person ran cell {cell_id} (execution count {run.execution_count}). {outcome} What they wrote:\n"
        f"{run.source}\nRead its outputs with NotebookRead if you need them, then build on their code."
    )


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
