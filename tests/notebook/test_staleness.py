"""Staleness marks from the cells' sources and the order they ran in this kernel (no kernel)."""

from __future__ import annotations

from ipy_agent.notebook.runlog import CellRun, RunLog
from ipy_agent.notebook.staleness import stale_marks


def code(cell_id: str, source: str) -> dict[str, str]:
    return {"id": cell_id, "cell_type": "code", "source": source}


def ran(log: RunLog, cell: dict[str, str], count: int, source: str | None = None) -> None:
    log.record(CellRun(cell_id=cell["id"], source=source or cell["source"], execution_count=count, seconds=0.1))


def marks(cells: list[dict[str, str]], log: RunLog) -> dict[str, str]:
    return {m.cell_id: m.text for m in stale_marks(cells, log)}


def test_cells_in_order_and_run_in_order_have_no_marks():
    cells = [code("a", "x = 1"), code("b", "y = x + 1"), code("c", "print(y)")]
    log = RunLog()
    for i, c in enumerate(cells, 1):
        ran(log, c, i)
    assert marks(cells, log) == {}


def test_a_rerun_definer_marks_its_users_and_the_chain_below():
    cells = [code("a", "x = 1"), code("b", "y = x + 1"), code("c", "print(y)"), code("d", "z = 0")]
    log = RunLog()
    for i, c in enumerate(cells, 1):
        ran(log, c, i)
    ran(log, cells[0], 9)  # the person reran a
    got = marks(cells, log)
    assert got == {
        # Other cells as the person sees them (position from 1, first line), with the id for the model.
        "b": "may be stale: uses x, which cell 1 · x = 1 (id 'a') redefined after it ran",
        "c": (
            "may be stale: uses y from cell 2 · y = x + 1 (id 'b') "
            "(may be stale: uses x, which cell 1 · x = 1 (id 'a') redefined after it ran)"
        ),
    }


def test_edited_and_never_run_cells_are_marked_and_mark_their_users():
    cells = [
        code("a", "x = 2"),
        code("b", "y = x * 3"),
        code("new", "w = 5"),
        {"id": "m", "cell_type": "markdown", "source": "# t"},
    ]
    log = RunLog()
    ran(log, cells[0], 1, source="x = 1")
    ran(log, cells[1], 2)
    got = marks(cells, log)
    assert got["a"] == "edited since it last ran ([1])"
    assert got["b"] == "may be stale: uses x from cell 1 · x = 2 (id 'a') (edited since it last ran ([1]))"
    assert got["new"] == "never run in this kernel"
    assert "m" not in got


def test_a_notebook_read_again_parses_no_unchanged_cell_again(monkeypatch):
    """NotebookRead marks stale cells from every code cell on each read: a source seen before is
    not parsed again (a 500-cell notebook took 0.2-0.7 s of parsing per read)."""
    import ast
    import uuid

    from ipy_agent.notebook import effects

    parsed: list[str] = []
    real = ast.parse

    def counting(source, *args, **kwargs):
        parsed.append(source)
        return real(source, *args, **kwargs)

    monkeypatch.setattr(effects.ast, "parse", counting)
    token = uuid.uuid4().hex  # sources no other test parsed
    cells = [code(f"c{i}", f"v_{token}_{i} = v_{token}_{i - 1} + 1") for i in range(1, 40)]
    log = RunLog()
    first = marks(cells, log)
    assert len(parsed) == 39
    assert marks(cells, log) == first
    assert len(parsed) == 39  # the second read parsed nothing
    cells[5] = code("c6", f"v_{token}_6 = 0")  # the person edited one cell
    marks(cells, log)
    assert len(parsed) == 40
