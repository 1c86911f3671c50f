"""A cell as a person names it: its 1-based position, as the front end shows it ("Cell 4/6"),
and the start of its first line, e.g. `cell 4 · df = load("sales.csv")`. What a person reads
(prompts, rows, the record) names cells this way, and so do the messages to the model, which
add the id (`cell 4 · x = 41 (id 'c1')`): the model still addresses cells by id, and
`%agent_inspect` and the tools' input keep the ids."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["cell_label"]

FIRST_LINE_CHARS = 40


def cell_label(cell: Mapping[str, Any] | int | None, source: str = "", *, with_id: bool = False) -> str:
    """`cell` is a cell as the bridge sends it (`index` 0-based, `source`, `id`), or its 0-based
    index (None when the position is unknown) with `source`. `with_id` adds the id, for the model."""
    cell_id = None
    if isinstance(cell, Mapping):
        index = cell.get("index")
        source, cell_id = str(cell.get("source") or ""), cell.get("id")
    else:
        index = cell
    index = index if isinstance(index, int) else None
    where = f"cell {index + 1}" if index is not None else "a cell"
    first = next((line.strip() for line in source.splitlines() if line.strip()), "")
    if len(first) > FIRST_LINE_CHARS:
        first = first[: FIRST_LINE_CHARS - 1] + "…"
    label = f"{where} · {first}" if first else where
    if not first and index is None:
        label += " (empty)"
    return f"{label} (id {cell_id!r})" if with_id and cell_id else label
