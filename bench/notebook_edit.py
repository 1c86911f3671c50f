"""NotebookEdit of one cell in a notebook of 20,000 one-line cells, against nbformat's own round trip.

The notebook is written in nbformat's layout (about 3 MB). Ours is one tool call (the edit
planned once, as `call` does, and written atomically); the peer is what any edit through
nbformat costs at the least: `nbformat.read` and `nbformat.write` of the same file, no edit.
Both run in this process, alternating, after a warm-up that pays for nbformat's imports.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path

__all__ = ["CELLS", "make_notebook", "nbformat_seconds", "ours_seconds"]

CELLS = 20_000


def make_notebook(path: Path, cells: int = CELLS) -> None:
    cell = (
        '  {{\n   "cell_type": "code",\n   "execution_count": null,\n   "id": "c{i:07d}",\n   "metadata": {{}},\n'
        '   "outputs": [],\n   "source": [\n    "x = {i}"\n   ]\n  }}'
    )
    body = ",\n".join(cell.format(i=i) for i in range(cells))
    meta = ' "metadata": {},\n "nbformat": 4,\n "nbformat_minor": 5\n}\n'
    path.write_text('{\n "cells": [\n' + body + "\n ],\n" + meta)


_DIR = Path(tempfile.mkdtemp(prefix="ipy-agent-bench-nb-"))
_PATH = _DIR / "many.ipynb"


def ours_seconds(i: int = 0) -> float:
    from ipy_agent.contract.decision import CallDecision
    from ipy_agent.contract.read_state import ReadState
    from ipy_agent.contract.tool import ToolContext
    from ipy_agent.tools.notebook.edit import NotebookEditInput, NotebookEditTool

    if not _PATH.exists():
        make_notebook(_PATH)
    ctx = ToolContext(cwd=_DIR, read_state=ReadState(), spill_dir=_DIR / "spill")
    ctx.read_state.record(_PATH, content=_PATH.read_bytes())
    inp = NotebookEditInput(notebook_path=str(_PATH), cell_id=f"c{CELLS // 2:07d}", new_source=f"x = {i}")
    start = time.perf_counter()
    asyncio.run(NotebookEditTool().call(inp, ctx, CallDecision(source="person")))
    return time.perf_counter() - start


def nbformat_seconds() -> float:
    import nbformat

    if not _PATH.exists():
        make_notebook(_PATH)
    start = time.perf_counter()
    nb = nbformat.read(str(_PATH), as_version=4)
    nbformat.write(nb, str(_DIR / "copy.ipynb"))
    return time.perf_counter() - start


def size_mb() -> float:
    if not _PATH.exists():
        make_notebook(_PATH)
    return _PATH.stat().st_size / 1e6
