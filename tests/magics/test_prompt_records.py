"""A rewind marks the records of the prompts it undid, and only those (magics/prompt_records.py)."""

from __future__ import annotations

from typing import Any

from ipy_agent.magics.prompt_records import PromptRecords


class View:
    """A run's view as the records see it: the lines added to its record."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def note_in_record(self, text: str) -> None:
        self.lines.append(text)


def test_a_rewind_to_prompt_two_marks_prompts_two_and_three_of_that_conversation_only():
    agent, other = object(), object()
    views = [View() for _ in range(4)]
    records = PromptRecords()
    for number, view in enumerate(views[:3], start=1):
        records.add(agent, number, view)  # type: ignore[arg-type]
    records.add(other, 2, views[3])  # type: ignore[arg-type]

    records.rewound(agent, 2)  # type: ignore[arg-type]

    said: list[Any] = [v.lines for v in views]
    assert said[0] == [] and said[3] == []
    assert (
        said[1]
        == said[2]
        == [
            "↶ Rewound (%agent_rewind 2): what this prompt changed was undone, and the conversation went back to before it."
        ]
    )
    records.rewound(agent, 1)  # a later rewind: prompt 1 only, the others were marked once
    assert len(views[0].lines) == 1 and len(views[1].lines) == 1
