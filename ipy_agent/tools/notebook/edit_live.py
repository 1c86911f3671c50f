"""NotebookEdit on the open notebook: the same input, applied to the live model in the browser.

When the notebook the model names is the one open in JupyterLab with the extension connected,
an edit goes to the live notebook: the person sees it at once, and their unsaved edits are
neither lost (as writing the file under them would lose them) nor overwritten. The model
learns one tool; where the edit lands is decided here.

Like the file path, an edit is checked three times (validation, the approval preview, the
call), each time against the cell as it is now. The last check travels with the edit itself:
the front end applies a replace or delete only if the cell's source is still the one checked
(compare-and-set), so a keystroke between check and edit is never overwritten.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ipy_agent.contract.checkpoints import CellChange
from ipy_agent.contract.decision import CallDecision
from ipy_agent.contract.tool import PermissionPreview, ResultT, ToolError
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.notebook.naming import cell_label
from ipy_agent.tools.shared.diff import make_diff

from .live import bridge_call, cell_verdict, fetch_cell, named, record_cells, require_fresh_cell, require_listed
from .review_live import EFFECT_AT_ONCE, LiveReview

__all__ = ["LivePlan", "apply_live", "plan_live", "preview_live"]


@dataclass(frozen=True, kw_only=True)
class LivePlan:
    edit_mode: str
    cell: dict[str, Any] | None  # the cell replaced or deleted, or inserted after
    old_source: str
    new_source: str
    cell_type: str


def _lines(source: str) -> str:
    return source if not source or source.endswith("\n") else source + "\n"


async def plan_live(inp: Any, ctx: ToolContext, nb: Any) -> LivePlan:
    if inp.edit_mode == "insert" and inp.cell_type is None:
        raise ToolError("cell_type is required with edit_mode 'insert': give 'code' or 'markdown'.")
    if inp.edit_mode != "insert" and not inp.cell_id:
        raise ToolError(f"cell_id is required with edit_mode {inp.edit_mode!r}: give the id shown by NotebookRead.")
    if inp.edit_mode == "insert":
        require_listed(ctx, nb)
        after = await fetch_cell(nb, inp.cell_id) if inp.cell_id else None
        return LivePlan(
            edit_mode="insert", cell=after, old_source="", new_source=inp.new_source, cell_type=inp.cell_type or "code"
        )
    cell = await fetch_cell(nb, inp.cell_id)
    require_fresh_cell(ctx, nb, cell)
    old = cell.get("source") or ""
    if inp.edit_mode == "delete":
        return LivePlan(edit_mode="delete", cell=cell, old_source=old, new_source="", cell_type=cell["cell_type"])
    return LivePlan(
        edit_mode="replace",
        cell=cell,
        old_source=old,
        new_source=inp.new_source,
        cell_type=inp.cell_type or cell["cell_type"],
    )


def _type_change(plan: LivePlan) -> str | None:
    """The old type when a replace changes the cell's type."""
    old = (plan.cell or {}).get("cell_type")
    return old if plan.edit_mode == "replace" and old and old != plan.cell_type else None


def _texts(plan: LivePlan) -> tuple[str, str]:
    """What the diff compares: the sources, headed by the types when a replace changes it."""
    old, new = _lines(plan.old_source), _lines(plan.new_source)
    if (was := _type_change(plan)) is not None:
        return f"[{was} cell]\n{old}", f"[{plan.cell_type} cell]\n{new}"
    return old, new


def _named(cell: dict[str, Any] | None) -> str:
    """A cell as the person sees it: its position in the page and its first line."""
    return cell_label(cell) if cell is not None else "a cell"


def _title(plan: LivePlan, nb: Any) -> str:
    where = f"the open notebook {nb.display_path}"
    if plan.edit_mode == "insert":
        anchor = f"after {_named(plan.cell)}" if plan.cell else "at the top"
        return f"Insert a {plan.cell_type} cell {anchor} in {where}"
    was = _type_change(plan)
    change = f" ({was} → {plan.cell_type})" if was else ""
    return f"{plan.edit_mode.capitalize()} {_named(plan.cell)}{change} in {where}"


async def preview_live(inp: Any, ctx: ToolContext, nb: Any, *, staged: bool = True) -> PermissionPreview | None:
    """The prompt's preview; `staged` also draws the change in the cell for review there."""
    try:
        plan = await plan_live(inp, ctx, nb)
    except ToolError:
        return None
    label = f"{nb.display_path} [{'new cell' if plan.edit_mode == 'insert' else _named(plan.cell).split(' · ')[0]}]"
    d = make_diff(*_texts(plan), label=label)
    notes = (
        ("outputs will be cleared",)
        if plan.edit_mode == "replace" and plan.cell and plan.cell.get("output_count")
        else ()
    )
    review = None
    if staged and ctx.tool_use_id and getattr(nb, "reviews", None) is not None:  # in the cell (review_live.py)
        label = (
            f"a new cell after {_named(plan.cell)}" if plan.edit_mode == "insert" and plan.cell else _named(plan.cell)
        )
        if plan.edit_mode == "insert" and plan.cell is None:
            label = "a new cell at the top"
        review = LiveReview.of(
            nb,
            kind=plan.edit_mode,
            cell=plan.cell,
            source=plan.new_source,
            old_source=plan.old_source,
            cell_type=plan.cell_type,
            label=label,
            tool_use_id=ctx.tool_use_id,
        )
    return PermissionPreview(
        review=review,
        title=_title(plan, nb),
        diff=d.text,
        added=d.added,
        removed=d.removed,
        # Staged for review, the prompt says what an answer does as true when it is drawn (review.effect).
        notes=notes if review is not None else (*notes, EFFECT_AT_ONCE),
    )


def _change(plan: LivePlan, nb: Any, cell: dict[str, Any], cells: list[dict[str, Any]]) -> CellChange:
    """What a rewind needs to undo this edit of the open notebook."""
    before = plan.cell or {}
    index = int(cell.get("index", before.get("index", 0)) or 0)
    after_id = None
    if plan.edit_mode == "delete" and index > 0 and index - 1 < len(cells):
        after_id = cells[index - 1].get("id")
    return CellChange(
        notebook=str(nb.path),
        action=plan.edit_mode,  # type: ignore[arg-type]
        cell_id=str(cell.get("id") or before.get("id")),
        index=index,
        before_source=plan.old_source,
        before_type=str(before.get("cell_type") or plan.cell_type),
        after_source=plan.new_source,
        after_id=after_id,
    )


async def apply_live(
    inp: Any, ctx: ToolContext, decision: CallDecision, nb: Any, result_type: Callable[..., ResultT]
) -> ResultT:
    plan = await plan_live(inp, ctx, nb)
    from ipy_agent.notebook.bridge import BridgeError

    target = plan.cell or {}
    if plan.cell is not None and plan.edit_mode != "insert":
        # The person's cell policies, against the cell and the metadata as the page has them now.
        verdict = await cell_verdict(nb, plan.cell, inp)
        if verdict.demand == "refuse":
            raise ToolError(verdict.refusal(nb.display_path))
        if verdict.demand == "ask" and not decision.by_person:
            raise ToolError(
                f"Not changed: {verdict.question(nb.display_path)}, and no person approved this call. Ask the "
                "person to change the cell's policy themselves, or leave it."
            )
    try:
        if plan.edit_mode == "insert":
            after_id = plan.cell["id"] if plan.cell else None
            reply = await nb.request("insert_cell", after_id=after_id, cell_type=plan.cell_type, source=plan.new_source)
        elif plan.edit_mode == "delete":
            reply = await nb.request("delete_cell", cell_id=target["id"], expected_source=plan.old_source)
        else:
            reply = await nb.request(
                "replace_source",
                cell_id=target["id"],
                source=plan.new_source,
                cell_type=plan.cell_type,
                expected_source=plan.old_source,
            )
    except BridgeError as e:
        if e.code == "stale":
            raise ToolError(
                f"{named(target) if target else f'Cell {inp.cell_id!r}'} changed while the edit was on its way "
                "(the person is typing in it). "
                "Read it again with NotebookRead, then redo the edit against the new content."
            ) from None
        if e.code == "not_found":
            raise ToolError(
                f"{named(target) if target else f'Cell {inp.cell_id!r}'} is no longer in the open notebook (deleted "
                "meanwhile). Read the "
                "notebook again with NotebookRead."
            ) from None
        raise ToolError(str(e)) from None
    cell = reply.get("cell") or {}
    if plan.edit_mode != "delete":
        record_cells(ctx, nb, [cell], source="NotebookEdit")
        await nb.scroll_to(cell.get("id", ""))
    # A replace keeps the cells and their order, so only an insert or a delete lists the notebook
    # again (its count, and the cell before a deleted one, for a rewind): in a 500-cell notebook
    # the listing is the largest answer the page sends.
    cells = await bridge_call(nb.list_cells()) if plan.edit_mode != "replace" else None
    if ctx.checkpoints is not None:  # kept for a rewind
        ctx.checkpoints.cell_changed(_change(plan, nb, cell, cells or []))
    index = int(cell.get("index", target.get("index", 0)) or 0)
    shown = {"index": index, "source": plan.old_source if plan.edit_mode == "delete" else plan.new_source}
    d = make_diff(*_texts(plan), label=f"{nb.display_path} [cell {index + 1}]")
    return result_type(
        path=str(nb.path),
        display=str(nb.display_path),
        edit_mode=plan.edit_mode,
        cell_id=str(cell.get("id")),
        cell_type=plan.cell_type,
        index=int(cell.get("index", 0)),
        after=(plan.cell or {}).get("id") if plan.edit_mode == "insert" else None,
        total_cells=len(cells) if cells is not None else None,
        outputs_cleared=plan.edit_mode == "replace" and bool((plan.cell or {}).get("output_count")),
        upgraded=False,
        added=d.added,
        removed=d.removed,
        diff=d.text,
        live=True,
        label=cell_label(shown),
    )
