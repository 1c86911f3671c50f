"""Staged cell edits, reviewed in the cell: the kernel's side of the page's proposals.

When NotebookEdit asks to change the open notebook, the change is shown where it will happen:
the page draws a proposal in the target cell (an inline diff with Accept and Reject), a new
cell as a placeholder at its place, a deletion as a marked cell. Nothing changes in the
notebook model while a proposal is open; once accepted, the ordinary edit op applies the change
(with its compare-and-set), so an accepted proposal and an edit allowed in the `%agent` cell are
one path.

Two ops (protocol.json) and one message:
- `stage_proposal` draws a proposal and starts watching its cell: the person's typing in it
  makes the proposal stale (the stale rule);
- `resolve_proposal` tells the page how it ended (accepted, rejected with a reason, stale,
  cancelled), when the decision was taken elsewhere (the `%agent` cell's prompt) or just to
  confirm it;
- the page's answer comes unasked, as `{protocol, event: "decision", path, proposal_id, outcome,
  reason}` on the bridge's comm, `outcome` one of protocol.json's `decisions`. The bridge hands it
  to `Reviews.decided`, which may run on a thread other than the loop's (a kernel subshell), so
  the waiting future is settled with `call_soon_threadsafe`.

`Reviews` (one per bridge) keeps the futures of open proposals, the run's standing answer after
"Accept all" / "Reject all", and each staged change's outcome for the run's record.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field
from typing import Literal

from .protocol_types import DECISIONS, Outcome
from .protocol_types import ProposalKind as Kind

__all__ = ["PageDecision", "Proposal", "ReviewOutcome", "Reviews"]

Where = Literal["cell", "prompt", "all", "none"]


@dataclass(frozen=True, kw_only=True)
class Proposal:
    """One staged change of the open notebook, as the page draws it."""

    id: str
    kind: Kind
    cell_id: str | None  # the cell replaced or deleted; for an insert, the cell it goes after (None: the top)
    index: int  # the cell's position, or the new cell's
    source: str  # the proposed source ("" for a deletion)
    old_source: str  # what the cell holds now (the stale rule compares with it)
    cell_type: str
    label: str  # the cell as a person names it ("cell 4 · df = load(...)")

    def args(self, *, scroll: bool) -> dict[str, object]:
        return {
            "proposal_id": self.id,
            "kind": self.kind,
            "cell_id": self.cell_id,
            "index": self.index,
            "source": self.source,
            "old_source": self.old_source,
            "cell_type": self.cell_type,
            "label": self.label,
            "scroll": scroll,
        }


@dataclass(frozen=True, kw_only=True)
class PageDecision:
    """What the person answered in the page: one of protocol.json's `decisions`, and a reason."""

    outcome: str
    reason: str = ""


@dataclass(frozen=True, kw_only=True)
class ReviewOutcome:
    """How one staged change ended, for the run's record."""

    proposal: Proposal
    tool_use_id: str
    outcome: Outcome
    reason: str = ""
    where: Where = "none"  # answered in the cell, in the `%agent` prompt, by Accept/Reject all, or by no one

    def text(self) -> str:
        """One line: "accepted in the cell", "rejected in the prompt: <reason>", "stale"."""
        how = {"cell": " in the cell", "prompt": " in the prompt", "all": " (all)", "none": ""}[self.where]
        words = f"{self.outcome}{how if self.outcome in ('accepted', 'rejected') else ''}"
        return f"{words}: {self.reason}" if self.reason else words


@dataclass
class Reviews:
    """The open proposals of one bridge, and what became of them."""

    outcomes: list[ReviewOutcome] = field(default_factory=list)
    # After "Accept all" / "Reject all": the answer for the rest of this run's staged changes.
    standing: Literal["accept", "reject"] | None = None
    standing_reason: str = ""
    _waiting: dict[str, tuple[asyncio.AbstractEventLoop, asyncio.Future[PageDecision]]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def new_run(self) -> None:
        """A new run: Accept all / Reject all of the last one no longer apply."""
        self.standing, self.standing_reason = None, ""

    def expect(self, proposal_id: str) -> asyncio.Future[PageDecision]:
        """The future the page's decision on `proposal_id` settles (on the running loop)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[PageDecision] = loop.create_future()
        with self._lock:
            self._waiting[proposal_id] = (loop, future)
        return future

    def forget(self, proposal_id: str) -> None:
        with self._lock:
            self._waiting.pop(proposal_id, None)

    @property
    def open(self) -> list[str]:
        with self._lock:
            return list(self._waiting)

    def decided(self, data: dict[str, object]) -> bool:
        """A `decision` message from the page; False when it names no open proposal or no known outcome."""
        proposal_id, outcome, reason = data.get("proposal_id"), data.get("outcome"), data.get("reason")
        if not isinstance(proposal_id, str) or outcome not in DECISIONS:
            return False
        with self._lock:
            entry = self._waiting.pop(proposal_id, None)
        if entry is None:
            return False
        loop, future = entry
        decision = PageDecision(outcome=str(outcome), reason=reason.strip() if isinstance(reason, str) else "")

        def settle() -> None:
            if not future.done():
                future.set_result(decision)

        try:
            loop.call_soon_threadsafe(settle)
        except RuntimeError:  # the loop is closed: the run is long over
            return False
        return True

    def record(self, outcome: ReviewOutcome) -> None:
        self.outcomes.append(outcome)
