"""NotebookRead: the notebook the person has open, as it is now in the browser.

Read shows a notebook's file, which may be older than what the person sees (unsaved edits,
cells run since the last save). This tool asks the front end for the live cells (ids, types,
sources, execution counts, outputs) and renders them like Read renders a file, with each cell's
outputs under one budget and images as image blocks. Every cell it shows is recorded in the
read state by its source's hash, which is what lets NotebookEdit refuse an edit of a cell the
person changed since. It is offered only while a front end with the extension is connected.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from ipy_agent.contract.decision import UNDECIDED, CallDecision
from ipy_agent.contract.tool import Tool, ToolError
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.history.blocks import ResultPart, ToolResultBlock
from ipy_agent.notebook.naming import cell_label
from ipy_agent.notebook.protocol_types import ListCellsResult, ReadCell
from ipy_agent.notebook.render import OUTPUT_BUDGET_CHARS, render_cells

from .live import NOTEBOOK_MARK, bridge_call, key_for, live_bridge, live_missing, live_target, record_cells
from .run_notes import notebook_notes

__all__ = ["NotebookReadInput", "NotebookReadResult", "NotebookReadTool"]

DESCRIPTION = """\
Read the notebook the person has open in JupyterLab, live: each cell's id, type, source, \
execution count and outputs (text, errors with their traceback, images as images), as the person \
sees it now, including edits not saved yet. The open notebook is {path!r}.

- Use this, not Read, for the open notebook: Read shows the file on disk, which may be older. \
Use Read for other notebooks and files.
- NotebookEdit edits of the open notebook's cells are checked against what this tool showed: a \
cell the person changed after you read it is refused until you read it again.
- cell_ids: read only these cells (ids as shown here); omit to read every cell. For a long \
notebook, read all cells once, then the ones you work on.
- Each cell's text outputs are cut to about {budget:,} characters in the middle, with a marker.
- Cells the person gave a policy (agent:never-run, agent:read-only, agent:ask) are listed first; \
so are cells that never ran in this kernel, were edited since they ran, or may be stale (they use \
a name another cell redefined after them). Rerun the fewest such cells, in order, with NotebookRun.
- To see the kernel's variables (names, types, shapes) use Variables; to run a cell use NotebookRun.
"""


class NotebookReadInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    notebook_path: str | None = Field(
        default=None, description="Omit for the open notebook (the only one this tool reads live)."
    )
    cell_ids: list[str] | None = Field(default=None, description="Read only these cells; omit for all.")


@dataclass(frozen=True, kw_only=True)
class NotebookReadResult:
    display: str
    blocks: list[ResultPart]
    cells: int
    total_cells: int
    dirty: bool


class NotebookReadTool(Tool[NotebookReadInput, NotebookReadResult]):
    name = "NotebookRead"
    input_model = NotebookReadInput
    kind = "read"
    rule_names = ("Read",)
    max_result_chars = 100_000

    def description(self, ctx: ToolContext) -> str:
        nb = live_bridge(ctx)
        return DESCRIPTION.format(path=nb.display_path if nb is not None else None, budget=OUTPUT_BUDGET_CHARS)

    def disabled_reason(self, ctx: ToolContext) -> str:
        return live_missing(ctx)

    def _enabled(self, ctx: ToolContext) -> bool:
        return live_bridge(ctx) is not None

    def _read_only(self, inp: NotebookReadInput) -> bool:
        return True

    def _concurrency_safe(self, inp: NotebookReadInput) -> bool:
        return True

    async def validate_input(self, inp: NotebookReadInput, ctx: ToolContext) -> str | None:
        if inp.notebook_path is not None and live_target(ctx, inp.notebook_path) is None:
            nb = live_bridge(ctx)
            open_one = nb.display_path if nb is not None else None
            return (
                f"{inp.notebook_path!r} is not the notebook open in JupyterLab ({open_one!r}). Read other "
                "notebooks from disk with Read; omit notebook_path to read the open one."
            )
        return None

    async def call(
        self, inp: NotebookReadInput, ctx: ToolContext, decision: CallDecision = UNDECIDED
    ) -> NotebookReadResult:
        nb = live_target(ctx, inp.notebook_path)
        if nb is None:
            raise ToolError(
                "The open notebook is no longer connected (the page was closed or reloaded). Read the "
                "file with Read instead, or ask the person to open the notebook again."
            )
        listing: ListCellsResult = await bridge_call(nb.request("list_cells"))
        all_cells = list(listing["cells"])
        if inp.cell_ids:
            known = {c["id"] for c in all_cells}
            missing = [c for c in inp.cell_ids if c not in known]
            if missing:
                raise ToolError(
                    f"No cell with id {missing[0]!r} in the open notebook {nb.display_path!r}. Omit "
                    "cell_ids to read every cell and see their ids."
                )
        cells: list[ReadCell] = await bridge_call(nb.read_cells(inp.cell_ids))
        record_cells(ctx, nb, cells)
        ctx.read_state.record(key_for(nb, NOTEBOOK_MARK), content=" ".join(c["id"] for c in all_cells))
        if ctx.tool_use_id:  # clearing this result from the context forgets these reads
            shown = [key_for(nb, c["id"]) for c in cells] + [key_for(nb, NOTEBOOK_MARK)]
            ctx.read_state.note_shown(ctx.tool_use_id, shown)
        # Cells are rendered with their notebook index, so `index` in the output is the live position.
        head = (
            f"The open notebook {nb.display_path} ({len(all_cells)} cells"
            f"{', unsaved changes' if listing['dirty'] else ''}); showing {len(cells)}. The person sees a "
            "cell as its position counted from 1 and its first line (index 2 below is `cell 3 · ...` to them): "
            "name cells that way to the person, and by id in your calls.\n"
        )
        notes = await notebook_notes(nb, all_cells, {c["id"] for c in cells})
        rendered: list[ResultPart] = [{"type": "text", "text": head + notes}]
        for cell in cells:
            first = int(cell.get("index", 0))
            rendered += render_cells([cell], first_index=first, output_budget=OUTPUT_BUDGET_CHARS).blocks
        blocks = _merge(rendered)
        return NotebookReadResult(
            display=str(nb.display_path),
            blocks=blocks,
            cells=len(cells),
            total_cells=len(all_cells),
            dirty=listing["dirty"],
        )

    def map_result(self, output: NotebookReadResult, tool_use_id: str) -> ToolResultBlock:
        return {"type": "tool_result", "tool_use_id": tool_use_id, "content": output.blocks}

    def summarize_use(self, inp: NotebookReadInput) -> str:
        return f"cells {', '.join(inp.cell_ids)}" if inp.cell_ids else "the open notebook"

    async def describe_use(self, inp: NotebookReadInput, ctx: ToolContext) -> str | None:
        nb = live_target(ctx, inp.notebook_path)
        if nb is None or not inp.cell_ids:
            return None
        listing = {c["id"]: c for c in await nb.list_cells()}
        labels = [cell_label(listing[i]) if i in listing else i for i in inp.cell_ids]
        return labels[0] if len(labels) == 1 else "cells " + "; ".join(x.removeprefix("cell ") for x in labels)

    def summarize_result(self, output: NotebookReadResult) -> str:
        of = f" of {output.total_cells}" if output.cells != output.total_cells else ""
        return f"Read {output.cells}{of} cell{'s' if output.total_cells != 1 else ''} of {output.display} (live)"


def _merge(blocks: list[ResultPart]) -> list[ResultPart]:
    """Adjacent text blocks joined into one (each text joined once: linear in the notebook's size)."""
    out: list[ResultPart] = []
    texts: list[str] = []
    for b in blocks:
        if b["type"] == "text":
            texts.append(b["text"])
            continue
        if texts:
            out.append({"type": "text", "text": "".join(texts)})
            texts = []
        out.append(b.copy())
    if texts:
        out.append({"type": "text", "text": "".join(texts)})
    return out
