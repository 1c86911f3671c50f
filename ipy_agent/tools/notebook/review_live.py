"""NotebookEdit's change of the open notebook, staged in the cell for the person to review.

The page draws the proposal in the cell it changes (notebook/review.py has the protocol); the
person may Accept or Reject there, with a reason, or answer the `%agent` cell's prompt: one
decision (permissions/approval.py waits for both). What the page answers becomes what the
prompt would have answered, so the model reads a rejection's reason exactly as it reads a
reason typed in the prompt. The stale rule: the person's typing in a cell under review makes
the proposal stale, and the call is denied with a message telling the model to read the cell again.
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Callable
from typing import Any, Literal

from ipy_agent.contract.review import ReviewAnswer
from ipy_agent.notebook.protocol_types import LiveCell
from ipy_agent.notebook.review import PageDecision, Proposal, ReviewOutcome, Reviews

__all__ = ["EFFECT_AT_ONCE", "LiveReview", "stale_message"]

# What allowing a change of the open notebook does when it is not staged for review first.
EFFECT_AT_ONCE = (
    "allowing changes the open notebook at once; the file changes when it is saved; %agent_rewind puts it back"
)
STAGE_TIMEOUT = 5.0  # a page that cannot draw the proposal in this time leaves the prompt alone to ask


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
