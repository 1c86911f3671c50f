"""What a rewind did (`RewindReport`), in words for the person and for the model."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["RewindReport", "short"]


@dataclass(kw_only=True)
class RewindReport:
    """What a rewind did, in words a person (and the model) can read."""

    prompt: int  # back to just before this prompt (1-based)
    text: str = ""  # that prompt, as the person typed it
    forced: bool = False
    files_restored: list[str] = field(default_factory=list)
    files_removed: list[str] = field(default_factory=list)
    cells_restored: list[str] = field(default_factory=list)
    variables_restored: list[str] = field(default_factory=list)
    variables_removed: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # changed by someone else since: left as they are
    not_restored: list[str] = field(default_factory=list)  # each with why, and what to do
    bash: list[str] = field(default_factory=list)  # files approved Bash commands changed
    dropped: list[str] = field(default_factory=list)  # lost to the size cap
    messages_removed: int = 0

    @property
    def restored(self) -> int:
        return (
            len(self.files_restored)
            + len(self.files_removed)
            + len(self.cells_restored)
            + len(self.variables_restored)
            + len(self.variables_removed)
        )

    def sections(self) -> list[tuple[str, list[str]]]:
        """(heading, items) of each part with something in it, in the order a person reads them."""
        parts = [
            ("Files restored", self.files_restored),
            ("Files removed (the agent created them)", self.files_removed),
            ("Cells restored", self.cells_restored),
            ("Variables restored", self.variables_restored),
            ("Variables removed (the run created them)", self.variables_removed),
            ("Kept: changed since the agent's last change" + ("" if self.forced else " (force overrides)"), self.kept),
            ("Not restored", self.not_restored),
            ("Changed by approved shell commands, not restored", self.bash),
            ("Lost to the checkpoints' size cap", self.dropped),
        ]
        return [(h, items) for h, items in parts if items]

    def headline(self) -> str:
        said = f" ({short(self.text)})" if self.text else ""
        removed = self.messages_removed
        return (
            f"Rewound to before prompt {self.prompt}{said}: {self.restored} change"
            f"{'s' if self.restored != 1 else ''} undone, {removed} message{'s' if removed != 1 else ''} "
            "removed from the conversation."
        )

    def __str__(self) -> str:
        lines = [self.headline()]
        for heading, items in self.sections():
            lines.append(f"{heading}:")
            lines.extend(f"  - {item}" for item in items)
        return "\n".join(lines)

    def note_for_model(self) -> str:
        """What the model is told before the next prompt."""
        body = "\n".join(f"{h}: {'; '.join(items)}" for h, items in self.sections() if not h.startswith("Lost"))
        return (
            f"[The person rewound the conversation to before their prompt {self.prompt}. The messages after "
            "that point were removed, and what your tool calls changed since was put back as listed below. "
            "Files and cells may differ from what you saw earlier: read them again before editing.]\n" + body
        ).strip()


def short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
