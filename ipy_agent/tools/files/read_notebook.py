"""Read on a notebook file: its cells as the model reads them, in pages of cells.

The file is parsed as JSON, not with `nbformat.reads` (which invents ids for cells that have
none and renames duplicates, so the ids shown would not be the ones NotebookEdit finds); only a
notebook older than format 4 goes through nbformat, to be converted for display.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ipy_agent.contract.read_state import ReadState
from ipy_agent.contract.tool import ToolError
from ipy_agent.notebook.render import render_notebook

from .read_text import MAX_OUTPUT_TOKENS, estimate_tokens

__all__ = ["MAX_NOTEBOOK_BYTES", "NotebookRead", "read_notebook"]

MAX_NOTEBOOK_BYTES = 100 * 1024 * 1024


@dataclass(frozen=True, kw_only=True)
class NotebookRead:
    blocks: list[dict[str, Any]]
    cells: int  # cells shown
    total_cells: int
    nbytes: int


def read_notebook(
    path: Path, st: os.stat_result, *, offset: int | None, limit: int | None, read_state: ReadState
) -> NotebookRead:
    """Cells `offset` (1-based) on, at most `limit` of them, within the token limit; the read is
    recorded, as a partial one when not every cell was shown."""
    if st.st_size > MAX_NOTEBOOK_BYTES:
        raise ToolError(
            f"Notebook {str(path)!r} is {st.st_size / 1e6:.0f} MB, too large to read; inspect it with Python in Bash (json module) instead."
        )
    raw = path.read_bytes()
    nb = _load_notebook(raw, path)
    cells = nb["cells"]
    total = len(cells)
    start = max(offset or 1, 1)
    if total and start > total:
        raise ToolError(
            f"Notebook {str(path)!r} has {total} cells (cell-0 to cell-{total - 1}); offset={offset} is past the end. offset counts cells from 1."
        )
    rendered = render_notebook(nb, offset=start - 1, limit=limit)
    tokens = estimate_tokens(rendered.text)
    if tokens > MAX_OUTPUT_TOKENS:
        per_cell = max(1, tokens // max(rendered.cell_count, 1))
        fit = max(1, MAX_OUTPUT_TOKENS // per_cell)
        raise ToolError(
            f"Notebook {str(path)!r} renders to about {tokens:,} tokens, over the {MAX_OUTPUT_TOKENS:,}-token limit. "
            f"Read fewer cells with offset and limit (they count cells, offset from 1; about {fit} cells fit, e.g. offset={start}, limit={fit})."
        )
    shown_to = start - 1 + rendered.cell_count  # 1-based number of the last cell shown
    whole = start == 1 and shown_to >= total
    # A partial read is recorded as one, so Write will not replace cells the model never saw.
    read_state.record(path, content=raw, offset=None if whole else start, limit=None if whole else rendered.cell_count)
    header = f"Notebook {path} ({total} cell{'s' if total != 1 else ''}"
    # Cells are labelled cell-N with a 0-based N (NotebookEdit's form), so the range is too.
    header += "" if whole else f"; showing cell-{start - 1} to cell-{shown_to - 1}"
    header += ")\n" if total else "): it has no cells.\n"
    header += _id_notes(cells, start - 1, shown_to)
    blocks = [{"type": "text", "text": header}, *rendered.blocks]
    if blocks[1:] and blocks[1]["type"] == "text":
        blocks[:2] = [{"type": "text", "text": header + blocks[1]["text"]}]
    if shown_to < total:
        blocks.append(
            {
                "type": "text",
                "text": (
                    f"\n[Showing cell-{start - 1} to cell-{shown_to - 1} of {total} cells (cell-N counts from 0). "
                    f"Read on with offset={shown_to + 1} (offset counts cells from 1).]"
                ),
            }
        )
    return NotebookRead(blocks=blocks, cells=rendered.cell_count, total_cells=total, nbytes=len(raw))


def _load_notebook(raw: bytes, path: Path) -> dict[str, Any]:
    """The notebook as it is on disk. Not `nbformat.reads`: it invents random ids for cells that
    have none (different on every Read), renames duplicate ids, and warns on stderr, so the ids
    shown would not be the ones NotebookEdit finds in the file."""
    try:
        data = json.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ToolError(
            f"{str(path)!r} is not a readable notebook ({type(exc).__name__}: {exc}). Check it with `python -m json.tool` in Bash."
        ) from None
    if (
        isinstance(data, dict)
        and isinstance(data.get("cells"), list)
        and all(isinstance(c, dict) for c in data["cells"])
    ):
        return data
    if isinstance(data, dict) and isinstance(data.get("nbformat"), int) and data["nbformat"] < 4:
        return _old_notebook(data, path)
    raise ToolError(
        f"{str(path)!r} is JSON but not a Jupyter notebook (no list of cells). Check it with `python -m json.tool` in Bash."
    )


def _old_notebook(data: dict[str, Any], path: Path) -> dict[str, Any]:
    """An nbformat 3 (or older) notebook, converted to 4 for display. Its cells have no ids; the
    converter's random ones are dropped so they show as cell-N."""
    import warnings

    import nbformat

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # stderr is the person's cell output
            nb = nbformat.convert(nbformat.from_dict(data), 4)
    except Exception as exc:  # nbformat raises several unrelated types for bad input
        raise ToolError(
            f"{str(path)!r} is not a readable notebook ({type(exc).__name__}: {exc}). Check it with `python -m json.tool` in Bash."
        ) from exc
    for cell in nb.cells:
        cell.pop("id", None)
    converted: dict[str, Any] = nb
    return converted


def _id_notes(cells: list[dict[str, Any]], lo: int, hi: int) -> str:
    """Lines that explain labels: cells without an id, and ids shared by several cells."""
    notes = ""
    if any(not c.get("id") for c in cells[lo:hi]):
        notes += "Cells without an id in the file are labelled cell-N, N being the cell's 0-based index.\n"
    where: dict[str, list[int]] = {}
    for i, c in enumerate(cells):
        if isinstance(c.get("id"), str) and c["id"]:
            where.setdefault(c["id"], []).append(i)
    shared = [(cid, idx) for cid, idx in where.items() if len(idx) > 1]
    if shared:
        listed = "; ".join(f"{cid!r} by " + ", ".join(f"cell-{i}" for i in idx[:5]) for cid, idx in shared[:5])
        notes += f"Some ids are used by more than one cell ({listed}): name those cells as cell-N.\n"
    return notes
