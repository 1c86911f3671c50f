"""A cell as a person names it: its 1-based position, as the front end shows it ("Cell 4/6"),
and the start of its first line, e.g. `cell 4 · df = load("sales.csv")`. Ids stay for the model
and for `%agent_inspect`; what a person reads names cells this way."""

from __future__ import annotations

__all__ = ["cell_label"]

FIRST_LINE_CHARS = 40


def cell_label(index: int | None, source: str = "") -> str:
    """`index` is 0-based (as the protocol sends it); None when the position is unknown."""
    where = f"cell {index + 1}" if index is not None else "a cell"
    first = next((line.strip() for line in source.splitlines() if line.strip()), "")
    if not first:
        return where if source.strip() or index is not None else f"{where} (empty)"
    if len(first) > FIRST_LINE_CHARS:
        first = first[: FIRST_LINE_CHARS - 1] + "…"
    return f"{where} · {first}"
