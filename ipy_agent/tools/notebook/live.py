"""What the live-notebook tools share: reaching the open notebook, and stale-cell checks.

The tools reach the notebook the person has open through `ctx.notebook`, the kernel's bridge
(`ipy_agent.notebook.bridge.NotebookBridge`), duck-typed here so the tools stay free of IPython.
Read state for live cells is kept per (notebook, cell id) by the hash of the cell's source: the
person edits cells while the agent works, and an edit of a cell the person has changed since
the agent read it would silently undo their work. Other cells are not affected by that check.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from ipy_agent.contract.read_state import cell_key
from ipy_agent.contract.tool import ToolError
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.notebook.cell_guard import Verdict, cell_edit_breaches
from ipy_agent.notebook.naming import cell_label
from ipy_agent.notebook.policy import CellPolicy, cell_policy
from ipy_agent.notebook.protocol_types import LiveCell, ReadCell

__all__ = [
    "NOTEBOOK_MARK",
    "bridge_call",
    "cell_policy_of",
    "cell_verdict",
    "edit_verdict",
    "fetch_cell",
    "live_bridge",
    "live_missing",
    "live_target",
    "named",
    "record_cells",
    "require_fresh_cell",
]

T = TypeVar("T")

# The read-state key for "this notebook's cell list was read" (what an insert needs).
NOTEBOOK_MARK = ""


def live_bridge(ctx: ToolContext) -> Any:
    """The bridge when a front end is connected, else None."""
    nb = ctx.notebook
    return nb if nb is not None and getattr(nb, "connected", False) else None


def live_missing(ctx: ToolContext) -> str:
    """Why the live tools are hidden, in a person's words: no kernel, or no page that answered."""
    nb = ctx.notebook
    if nb is None or getattr(nb, "shell", None) is None:
        return "needs a Jupyter kernel: this is not one (plain Python or terminal IPython)"
    problem = getattr(nb, "problem", None)
    if problem:
        return f"needs the JupyterLab extension: {problem}"
    return (
        "needs the JupyterLab extension: not connected in this page (no page with ipy-agent-notebook answered; "
        "reload the page, or see the README's Known limits)"
    )


def live_target(ctx: ToolContext, notebook_path: str | None) -> Any:
    """The bridge when `notebook_path` (None: the open notebook) is the notebook open in the front end."""
    nb = live_bridge(ctx)
    if nb is None:
        return None
    if notebook_path is None or nb.is_open_notebook(ctx.resolve(notebook_path)):
        return nb
    # A remote kernel (behind a kernel gateway) runs elsewhere than the Jupyter server that holds
    # the file: the open notebook is the one named as the front end names it, when no file of
    # that name is on the kernel's host.
    if notebook_path == nb.display_path and not ctx.resolve(notebook_path).exists():
        return nb
    return None


async def bridge_call(coro: Awaitable[T]) -> T:
    """Await a bridge request, turning its errors into messages the model can act on."""
    from ipy_agent.notebook.bridge import BridgeError  # the bridge module imports nothing from IPython

    try:
        return await coro
    except BridgeError as e:
        raise ToolError(str(e)) from None


async def fetch_cell(nb: Any, cell_id: str) -> ReadCell:
    """The cell with this id, or `cell-N` for the cell at 0-based index N (as NotebookEdit names
    cells of files), with its outputs."""
    from ipy_agent.notebook.bridge import BridgeError

    try:
        cells = await nb.read_cells([cell_id])
    except BridgeError as e:
        index = _index_form(cell_id) if e.code == "not_found" else None
        if index is not None:
            listing = await bridge_call(nb.list_cells())
            if index < len(listing):
                return await fetch_cell(nb, listing[index]["id"])
        if e.code == "not_found":
            raise ToolError(
                f"Cell {cell_id!r} is not in the open notebook {nb.display_path!r}: it was deleted, or the id is "
                "wrong. Read the notebook again with NotebookRead to see its cells and their ids."
            ) from None
        raise ToolError(str(e)) from None
    cell: ReadCell = cells[0]
    return cell


def _index_form(cell_id: str) -> int | None:
    if cell_id.startswith("cell-") and cell_id[5:].isdigit():
        return int(cell_id[5:])
    return None


def key_for(nb: Any, cell_id: str) -> str:
    return cell_key(Path(nb.path), cell_id)


def named(cell: Mapping[str, object]) -> str:
    """A cell in a message to the model: as the person names it, with its id (`Cell 4 · x = 1 (id 'c1')`)."""
    label = cell_label(cell, with_id=True)
    return label[:1].upper() + label[1:]


def require_fresh_cell(ctx: ToolContext, nb: Any, cell: LiveCell) -> None:
    entry = ctx.read_state.get(key_for(nb, cell["id"]))
    if entry is None:
        raise ToolError(
            f"{named(cell)} of the open notebook has not been read yet. Read it with NotebookRead first, "
            "then retry, so the edit is made against what the cell holds now."
        )
    message = ctx.read_state.check_fresh(key_for(nb, cell["id"]), cell.get("source") or "", what=named(cell))
    if message:
        raise ToolError(message.replace("Read it again", "Read it again with NotebookRead"))


def record_cells(ctx: ToolContext, nb: Any, cells: Sequence[LiveCell], *, source: str = "read") -> None:
    for cell in cells:
        ctx.read_state.record(key_for(nb, cell["id"]), content=cell.get("source") or "", source=source)


def require_listed(ctx: ToolContext, nb: Any) -> None:
    if ctx.read_state.get(key_for(nb, NOTEBOOK_MARK)) is None:
        raise ToolError(
            "The open notebook has not been read yet in this conversation. Read it with NotebookRead first, so "
            "the new cell goes where you mean it to."
        )


async def cell_policy_of(nb: Any, cell: LiveCell) -> CellPolicy:
    """The person's policy for `cell`: its tags and the notebook's metadata (read live; a page that
    cannot answer the metadata leaves the cell's own tags)."""
    from ipy_agent.notebook.bridge import BridgeError

    try:
        meta = await nb.agent_metadata()
    except BridgeError:
        meta = {}
    return cell_policy(cell, meta if isinstance(meta, dict) else {})


async def edit_verdict(nb: Any, inp: Any) -> Verdict:
    """What NotebookEdit's `inp` would do to the person's cell policies in the open notebook, judged
    on the cell and the notebook's metadata as the page has them now (notebook/cell_guard.py)."""
    if inp.edit_mode == "insert" or not inp.cell_id:
        return Verdict()
    try:
        cell = await fetch_cell(nb, inp.cell_id)
    except ToolError:
        return Verdict()  # validation says what is wrong with the id
    return await cell_verdict(nb, cell, inp)


async def cell_verdict(nb: Any, cell: LiveCell, inp: Any) -> Verdict:
    """`edit_verdict` for a cell already fetched."""
    from ipy_agent.notebook.bridge import BridgeError

    try:
        meta = await nb.agent_metadata()
    except BridgeError:
        meta = {}
    return cell_edit_breaches(
        cell,
        meta if isinstance(meta, dict) else {},
        edit_mode=inp.edit_mode,
        source=inp.new_source,
        cell_type=inp.cell_type or cell.get("cell_type") or "code",
    )
