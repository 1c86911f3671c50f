"""NotebookEdit on the open notebook: the same input, applied to the live model in the browser.

When the notebook the model names is the one open in JupyterLab with the extension connected,
an edit goes to the live notebook: the person sees it at once, and their unsaved edits are
neither lost (as writing the file under them would lose them) nor overwritten. The model
learns one tool; where the edit lands is decided here.

Like the file path, an edit is checked three times (validation, the approval preview, the
call), each time against the cell as it is now. The last check travels with the edit itself:
the front end applies a replace or delete only if the cell's source is still the one checked
(compare-and-set), so a keystroke between check and edit is never overwritten.

The preview stages the change in the cell it changes, for the person to review there
(`LiveReview`; notebook/review.py has the protocol): they may Accept or Reject in the cell, with
a reason, or answer the `%agent` cell's prompt: one decision (permissions/decide.py waits for
both). What the page answers becomes what the prompt would have answered, so the model reads a
rejection's reason exactly as it reads a reason typed in the prompt. The stale rule: the
person's typing in a cell under review makes the proposal stale, and the call is denied with a
message telling the model to read the cell again.
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ipy_agent.contract.checkpoints import CellChange
from ipy_agent.contract.decision import CallDecision
from ipy_agent.contract.review import ReviewAnswer
from ipy_agent.contract.tool import PermissionPreview, ResultT, ToolError
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.notebook.naming import cell_label
from ipy_agent.notebook.protocol_types import ListedCell, LiveCell, ReadCell
from ipy_agent.notebook.review import PageDecision, Proposal, ReviewOutcome, Reviews
from ipy_agent.tools.shared.diff import make_diff

from .live import bridge_call, cell_verdict, fetch_cell, named, record_cells, require_fresh_cell, require_listed

__all__ = ["EFFECT_AT_ONCE", "LivePlan", "LiveReview", "apply_live", "plan_live", "preview_live", "stale_message"]

# What allowing a change of the open notebook does when it is not staged for review first.
EFFECT_AT_ONCE = (
    "allowing changes the open notebook at once; the file changes when it is saved; %agent_rewind puts it back"
)
STAGE_TIMEOUT = 5.0  # a page that cannot draw the proposal in this time leaves the prompt alone to ask


@dataclass(frozen=True, kw_only=True)
class LivePlan:
    edit_mode: str
    cell: ReadCell | None  # the cell replaced or deleted, or inserted after
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
    old = plan.cell.get("cell_type") if plan.cell else None
    return old if plan.edit_mode == "replace" and old and old != plan.cell_type else None


def _texts(plan: LivePlan) -> tuple[str, str]:
    """What the diff compares: the sources, headed by the types when a replace changes it."""
    old, new = _lines(plan.old_source), _lines(plan.new_source)
    if (was := _type_change(plan)) is not None:
        return f"[{was} cell]\n{old}", f"[{plan.cell_type} cell]\n{new}"
    return old, new


def _named(cell: LiveCell | None) -> str:
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
    if staged and ctx.tool_use_id and getattr(nb, "reviews", None) is not None:  # in the cell (LiveReview)
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


def _change(plan: LivePlan, nb: Any, cell: LiveCell, cells: list[ListedCell]) -> CellChange:
    """What a rewind needs to undo this edit of the open notebook."""
    before: Mapping[str, Any] = plan.cell or {}
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

    target: Mapping[str, Any] = plan.cell or {}
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
    cell: ListedCell = reply["cell"]  # the bridge checked the reply against the op's schema
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
        after=plan.cell.get("id") if plan.edit_mode == "insert" and plan.cell else None,
        total_cells=len(cells) if cells is not None else None,
        outputs_cleared=plan.edit_mode == "replace" and bool(plan.cell and plan.cell.get("output_count")),
        upgraded=False,
        added=d.added,
        removed=d.removed,
        diff=d.text,
        live=True,
        label=cell_label(shown),
    )


# --- the change staged in the cell, for the person's Accept or Reject ---------------------


def stale_message(label: str, cell_id: str | None = None) -> str:
    """What the model is told when the person typed in the cell while its edit was under review."""
    where = f"{label} (id {cell_id!r})" if cell_id else label
    return (
        f"The person edited {where} while your proposed change to it was under review, so the change "
        "was not applied (the cell changed under review). Read the cell again with NotebookRead, then "
        "propose the edit against its new content if it is still wanted."
    )


def _rejected_all(reason: str) -> str:
    words = "The person rejected all of your proposed cell edits in this run (Reject all)"
    return f"{words}: {reason}" if reason else f"{words}."


class LiveReview:
    """One staged change: a `StagedReview` (contract/review.py) over the bridge's page."""

    def __init__(self, nb: Any, proposal: Proposal, tool_use_id: str) -> None:
        self.nb = nb
        self.reviews: Reviews = nb.reviews
        self.proposal = proposal
        self.tool_use_id = tool_use_id
        self.outcome: ReviewOutcome | None = None  # how it ended, for the run's record
        self._followers: list[Callable[[ReviewAnswer], bool]] = []
        self.answered_in_page = False
        self._staged = False
        self._stale = False
        self._lock = threading.Lock()

    @classmethod
    def of(
        cls,
        nb: Any,
        *,
        kind: str,
        cell: LiveCell | None,
        source: str,
        old_source: str,
        cell_type: str,
        label: str,
        tool_use_id: str,
    ) -> LiveReview:
        at = cell.get("index") if cell is not None else None  # where the cell is; none: an insert at the top
        index = (int(at) + 1 if at is not None else 0) if kind == "insert" else int(at or 0)
        proposal = Proposal(
            id=uuid.uuid4().hex,
            kind=kind,  # type: ignore[arg-type]
            cell_id=cell.get("id") if cell is not None else None,
            index=index,
            source=source,
            old_source=old_source,
            cell_type=cell_type,
            label=label,
        )
        return cls(nb, proposal, tool_use_id)

    # --- StagedReview ----------------------------------------------------------------------
    def preset(self) -> ReviewAnswer | None:
        if self.reviews.standing == "accept":
            return ReviewAnswer(behavior="allow", note="Accepted (Accept all)")
        if self.reviews.standing == "reject":
            reason = self.reviews.standing_reason
            return ReviewAnswer(behavior="deny", message=_rejected_all(reason), note="Rejected (Reject all)")
        return None

    def stand(self, behavior: Literal["allow", "deny"], reason: str = "") -> None:
        self.reviews.standing, self.reviews.standing_reason = (
            ("accept", "") if behavior == "allow" else ("reject", reason)
        )

    async def open(self) -> bool:
        from ipy_agent.notebook.bridge import BridgeError

        self._decision = self.reviews.expect(self.proposal.id)
        try:
            await self.nb.request("stage_proposal", timeout=STAGE_TIMEOUT, **self.proposal.args(scroll=True))
        except BridgeError:
            self.reviews.forget(self.proposal.id)
            return False
        self._staged = True
        return True

    async def decision(self) -> ReviewAnswer:
        try:
            got = await self._decision
        finally:
            self.reviews.forget(self.proposal.id)
        answer = self._answer(got)
        with self._lock:
            followers = list(self._followers)
        taken = [follow(answer) for follow in followers]
        self.answered_in_page = any(taken) if taken else True
        return answer

    def follow(self, callback: Callable[[ReviewAnswer], bool]) -> None:
        with self._lock:
            self._followers.append(callback)

    @property
    def effect(self) -> str:
        if self._staged:
            return (
                f"nothing changes until you accept: the change is shown in {self.proposal.label}; once accepted "
                "the open notebook changes (the file when it is saved), and %agent_rewind puts it back"
            )
        return (
            "accepting changes the open notebook at once; the file changes when it is saved; %agent_rewind puts it back"
        )

    @property
    def shown(self) -> bool:
        return self._staged

    @property
    def followed(self) -> bool:
        with self._lock:
            return bool(self._followers)

    async def close(self, behavior: Literal["allow", "deny"], message: str, *, automatic: bool, where: str) -> None:
        self.reviews.forget(self.proposal.id)
        stale = self._stale and behavior == "deny"
        outcome: Literal["accepted", "rejected", "stale", "cancelled"] = (
            "accepted" if behavior == "allow" else "stale" if stale else "cancelled" if automatic else "rejected"
        )
        reason = "" if outcome in ("accepted", "stale") else message if where != "all" else self.reviews.standing_reason
        self.outcome = ReviewOutcome(
            proposal=self.proposal,
            tool_use_id=self.tool_use_id,
            outcome=outcome,
            reason=reason,
            where=where,  # type: ignore[arg-type]
        )
        self.reviews.record(self.outcome)
        if self._staged:
            from ipy_agent.notebook.bridge import BridgeError

            with contextlib.suppress(BridgeError):  # the page is gone: nothing left to resolve there
                await self.nb.request(
                    "resolve_proposal",
                    timeout=STAGE_TIMEOUT,
                    proposal_id=self.proposal.id,
                    outcome=outcome,
                    reason=reason,
                )

    # --- internals -------------------------------------------------------------------------
    def _answer(self, got: PageDecision) -> ReviewAnswer:
        if got.outcome == "stale":
            self._stale = True
            return ReviewAnswer(
                behavior="deny",
                automatic=True,
                message=stale_message(self.proposal.label, self.proposal.cell_id),
                note=f"Stale: {self.proposal.label} changed under review",
            )
        if got.outcome in ("accept", "accept_all"):
            if got.outcome == "accept_all":
                self.reviews.standing = "accept"
            return ReviewAnswer(
                behavior="allow", note="Accepted in the cell" + (" (Accept all)" if got.outcome == "accept_all" else "")
            )
        if got.outcome == "reject_all":
            self.reviews.standing, self.reviews.standing_reason = "reject", got.reason
        note = "Rejected in the cell" + (" (Reject all)" if got.outcome == "reject_all" else "")
        return ReviewAnswer(behavior="deny", message=got.reason, note=f"{note}: {got.reason}" if got.reason else note)
