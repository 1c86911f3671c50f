"""A change a tool shows where it will happen, answerable there as well as in the prompt.

NotebookEdit on the open notebook stages its change in the page (the target cell shows the
diff with Accept and Reject). The permission wait then has two places to answer: the approver
(the `%agent` cell's prompt) and the page. Both answer one question; the first answer wins and
both show it. A tool offers this by putting a `StagedReview` on its `PermissionPreview.review`;
permissions/decide.py does the waiting, and an approver that draws a prompt may `follow` the
review to show an answer given in the page.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol

__all__ = ["ReviewAnswer", "StagedReview"]


@dataclass(frozen=True, kw_only=True)
class ReviewAnswer:
    """An answer given where the change is shown (or standing, after "Accept all")."""

    behavior: Literal["allow", "deny"]
    message: str = ""  # a denial's reason, for the model
    automatic: bool = False  # no person declined (the change went stale under review)
    note: str = ""  # what the prompt shows: "Accepted in the cell", "Stale: ..."


class StagedReview(Protocol):
    def preset(self) -> ReviewAnswer | None:
        """An answer given before the question (Accept all / Reject all earlier in the run)."""
        ...

    async def open(self) -> bool:
        """Show the change where it happens; False when it cannot be shown (then only the prompt asks)."""
        ...

    async def decision(self) -> ReviewAnswer:
        """The answer given where the change is shown."""
        ...

    def stand(self, behavior: Literal["allow", "deny"], reason: str = "") -> None:
        """Accept all / Reject all, given in the prompt: the run's later staged changes take this
        answer without asking, as after the page's buttons of the same name."""
        ...

    def follow(self, callback: Callable[[ReviewAnswer], bool]) -> None:
        """Call `callback` with the page's answer: the prompt shows it and resolves with it, so
        the prompt stays the one decision; it returns False when the prompt was answered first."""
        ...

    @property
    def effect(self) -> str:
        """What an answer does, as true when the prompt is drawn: whether the change is shown
        where it happens and nothing changes until it is accepted, or an Accept changes it at once."""
        ...

    @property
    def answered_in_page(self) -> bool:
        """Whether the decision was the page's (not the prompt's)."""
        ...

    @property
    def shown(self) -> bool:
        """Whether the change is drawn where it happens (`open` succeeded): the page brings it into
        view, so a prompt asking the same question leaves the view (and the focus) alone."""
        ...

    @property
    def followed(self) -> bool:
        """Whether an approver follows this review (then its answer is the decision)."""
        ...

    async def close(self, behavior: Literal["allow", "deny"], message: str, *, automatic: bool, where: str) -> None:
        """The decision was taken (`where`: "cell", "prompt", "all"): tell the page, and record it."""
        ...
