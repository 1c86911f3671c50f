"""A cell as a person names it: position from 1 and the start of its first line; the id for the model."""

from __future__ import annotations

from ipy_agent.notebook.naming import cell_label


def test_a_cell_is_its_position_from_one_and_its_first_line():
    cell = {"id": "c1", "index": 3, "source": '\n  df = load("sales.csv")\ndf.head()'}
    assert cell_label(cell) == 'cell 4 · df = load("sales.csv")'
    assert cell_label(cell, with_id=True) == "cell 4 · df = load(\"sales.csv\") (id 'c1')"
    assert cell_label(3, "x = 41") == "cell 4 · x = 41"


def test_long_empty_and_unplaced_cells():
    long = cell_label(0, "result = " + "x" * 80)
    assert long.startswith("cell 1 · result = x") and long.endswith("…") and len(long) == len("cell 1 · ") + 40
    assert cell_label({"index": 1, "source": ""}) == "cell 2"
    assert cell_label(None, "") == "a cell (empty)"
    assert cell_label({"id": "z", "source": "y = 2"}, with_id=True) == "a cell · y = 2 (id 'z')"
