"""The records of a conversation's prompts, kept so that a rewind can mark the ones it undid.

Each `%agent` run with widgets ends in a static record in its cell (ui/record.py). After
`%agent_rewind N`, the records of prompt N and the later ones would still list changes that are
no longer there: each gets a line saying it was rewound (the outcomes it lists stay, as history).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ipy_agent.loop.agent import Agent
    from ipy_agent.ui.widgets import RunView

__all__ = ["PromptRecords"]


class PromptRecords:
    """Each prompt's view, by its conversation and number (as `%agent_history` numbers them)."""

    def __init__(self) -> None:
        self._views: list[tuple[Agent, int, RunView]] = []

    def add(self, agent: Agent, prompt: int, view: RunView) -> None:
        self._views.append((agent, prompt, view))

    def rewound(self, agent: Agent, prompt: int) -> None:
        """A rewind undid prompt `prompt` and the later ones of `agent`'s conversation: their
        records say so, and are forgotten (the numbers go to the next prompts)."""
        kept: list[tuple[Agent, int, RunView]] = []
        for owner, number, view in self._views:
            if owner is agent and number >= prompt:
                view.note_in_record(
                    f"↶ Rewound (%agent_rewind {prompt}): what this prompt changed was undone, "
                    "and the conversation went back to before it."
                )
            else:
                kept.append((owner, number, view))
        self._views = kept
