"""NotebookRun: run one cell of the open notebook in this kernel, for the model and the person.

The cell's code runs in the kernel the agent lives in (its variables are the person's), through
IPython's own cell machinery, with its outputs captured; the bridge then writes them and the
execution count into that cell, where the person sees them, and the model gets them rendered
like NotebookRead shows outputs. The front end is never asked to execute the cell: in the
default mode the `%agent` cell is still running, and a front-end execution would queue behind
it while the agent waited for it (docs/live-notebook.md explains the design).

Running code changes the kernel's state, so it asks unless a rule (`NotebookRun`) allows it; the
prompt shows the code as it is now in the notebook.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ipy_agent.contract.tool import PermissionPreview, Tool, ToolError
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.notebook.render import OUTPUT_BUDGET_CHARS, render_cells

from .live import bridge_call, fetch_cell, live_bridge, live_missing, live_target

__all__ = ["DEFAULT_TIMEOUT", "MAX_TIMEOUT", "NotebookRunInput", "NotebookRunResult", "NotebookRunTool"]

DEFAULT_TIMEOUT = 120.0
MAX_TIMEOUT = 1800.0

DESCRIPTION = """\
Run one code cell of the notebook open in JupyterLab ({path!r}) in this kernel, the kernel the \
person's variables live in. Its outputs appear in that cell for the person, with its execution \
count, and come back to you: text, the value of the last line, errors as their traceback, images \
as images (each cell's outputs cut to about {budget:,} characters).

- Use it to run notebook code the person would run: after inserting or editing a cell with \
NotebookEdit, run it to check it. Use Bash for shell commands and scripts outside the notebook; \
Bash runs in a separate process and cannot see the kernel's variables.
- cell_id: the id shown by NotebookRead. Markdown cells cannot be run.
- timeout: seconds before the cell is stopped (default {default:g}, at most {most:g}); a stopped cell \
reports what it printed until then. The person can also interrupt the kernel.
- The person is asked before each run unless they allowed it. Running changes the kernel's state, so \
do not run cells just to look at them: NotebookRead shows their last outputs, and Variables shows \
the kernel's variables without running anything.
"""


class NotebookRunInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    cell_id: str = Field(description="The code cell to run: its id as shown by NotebookRead.")
    notebook_path: str | None = Field(default=None, description="Omit: the open notebook is the only one that can run.")
    timeout: float | None = Field(
        default=None,
        gt=0,
        le=MAX_TIMEOUT,
        description=f"Seconds before the cell is stopped (default {DEFAULT_TIMEOUT:g}).",
    )


@dataclass(frozen=True, kw_only=True)
class NotebookRunResult:
    cell_id: str
    display: str
    execution_count: int | None
    blocks: list[dict[str, Any]]
    error: str | None
    timed_out: bool
    interrupted: bool
    seconds: float
    output_count: int


class NotebookRunTool(Tool):
    name = "NotebookRun"
    input_model = NotebookRunInput
    kind = "execute"
    max_result_chars = 100_000

    def description(self, ctx: ToolContext) -> str:
        nb = live_bridge(ctx)
        return DESCRIPTION.format(
            path=nb.display_path if nb is not None else None,
            budget=OUTPUT_BUDGET_CHARS,
            default=DEFAULT_TIMEOUT,
            most=MAX_TIMEOUT,
        )

    def disabled_reason(self, ctx: ToolContext) -> str:
        return live_missing(ctx)

    def _enabled(self, ctx: ToolContext) -> bool:
        nb = live_bridge(ctx)
        return nb is not None and getattr(nb, "shell", None) is not None

    def _destructive(self, inp: Any) -> bool:
        return True  # arbitrary code: the prompt must not reassure

    async def _cell(self, inp: NotebookRunInput, ctx: ToolContext) -> tuple[Any, dict[str, Any]]:
        nb = live_target(ctx, inp.notebook_path)
        if nb is None:
            other = live_bridge(ctx)
            if other is None:
                raise ToolError(
                    "The open notebook is no longer connected (the page was closed or reloaded); cells "
                    "cannot be run. Ask the person to open the notebook again."
                )
            raise ToolError(
                f"{inp.notebook_path!r} is not the notebook open in JupyterLab ({other.display_path!r}); "
                "only the open notebook's cells can run in this kernel."
            )
        cell = await fetch_cell(nb, inp.cell_id)
        if cell.get("cell_type") != "code":
            raise ToolError(f"Cell {inp.cell_id!r} is a {cell.get('cell_type')} cell; only code cells run.")
        return nb, cell

    async def validate_input(self, inp: NotebookRunInput, ctx: ToolContext) -> str | None:
        try:
            await self._cell(inp, ctx)
        except ToolError as e:
            return str(e)
        return None

    async def preview(self, inp: NotebookRunInput, ctx: ToolContext) -> PermissionPreview | None:
        try:
            nb, cell = await self._cell(inp, ctx)
        except ToolError:
            return None
        return PermissionPreview(
            title=f"Run cell {cell['id']} of {nb.display_path} in this kernel",
            command=cell.get("source") or "",
            description="Runs in the notebook's kernel: it can change the person's variables.",
        )

    async def call(self, inp: NotebookRunInput, ctx: ToolContext) -> NotebookRunResult:
        nb, cell = await self._cell(inp, ctx)
        code = cell.get("source") or ""
        await nb.scroll_to(cell["id"])
        await bridge_call(nb.request("set_outputs", cell_id=cell["id"], outputs=[], execution_count=None))
        outcome = await nb.run_code(code, timeout=inp.timeout or DEFAULT_TIMEOUT)
        await bridge_call(
            nb.request(
                "set_outputs", cell_id=cell["id"], outputs=outcome.outputs, execution_count=outcome.execution_count
            )
        )
        shown = {"id": cell["id"], "cell_type": "code", "source": "", "outputs": outcome.outputs}
        rendered = render_cells([shown], output_budget=OUTPUT_BUDGET_CHARS)
        outputs_text = [b for b in rendered.blocks if b["type"] == "image"]
        text = "".join(b["text"] for b in rendered.blocks if b["type"] == "text")
        body = text.split("<outputs>\n", 1)[1].rsplit("</outputs>", 1)[0] if "<outputs>" in text else ""
        return NotebookRunResult(
            cell_id=cell["id"],
            display=str(nb.display_path),
            execution_count=outcome.execution_count,
            blocks=[{"type": "text", "text": body}, *outputs_text] if body else outputs_text,
            error=outcome.error,
            timed_out=outcome.timed_out,
            interrupted=outcome.interrupted,
            seconds=outcome.seconds,
            output_count=len(outcome.outputs),
        )

    def map_result(self, output: NotebookRunResult, tool_use_id: str) -> dict[str, Any]:
        o = output
        if o.timed_out:
            head = f"Cell {o.cell_id!r} was stopped after {o.seconds:.1f} s (timeout); its outputs until then:"
        elif o.interrupted:
            head = f"Cell {o.cell_id!r} was interrupted by the person after {o.seconds:.1f} s; its outputs until then:"
        elif o.error:
            head = f"Cell {o.cell_id!r} ran (execution count {o.execution_count}) and raised {o.error}."
        else:
            head = f"Cell {o.cell_id!r} ran (execution count {o.execution_count}) in {o.seconds:.1f} s."
        head += "" if o.output_count else " It produced no output."
        blocks = [{"type": "text", "text": head + "\n"}, *o.blocks]
        failed = bool(o.error) or o.timed_out or o.interrupted
        return {
            "type": "tool_result",
            "tool_use_id": tool_use_id,
            "content": blocks,
            **({"is_error": True} if failed else {}),
        }

    def summarize_use(self, inp: NotebookRunInput) -> str:
        return f"cell {inp.cell_id}"

    def summarize_result(self, output: NotebookRunResult) -> str:
        o = output
        if o.timed_out:
            return f"[{o.execution_count}] stopped after {o.seconds:.1f} s (timeout)"
        if o.interrupted:
            return f"[{o.execution_count}] interrupted"
        if o.error:
            return f"[{o.execution_count}] {o.error.splitlines()[0][:80]}"
        return f"[{o.execution_count}] ran in {o.seconds:.1f} s, {o.output_count} output{'s' if o.output_count != 1 else ''}"

    def detail_for_person(self, inp: Any, output: Any) -> str:
        return "".join(b.get("text", "") for b in getattr(output, "blocks", []))[:2000]
