"""What a run really changed, observed from fingerprints taken before and after, beside the
preview's prediction (notebook/observed.py): run here on a plain dict, as a cell's code would."""

from __future__ import annotations

import numpy as np

from ipy_agent.notebook.effects import cell_effects
from ipy_agent.notebook.observed import namespace_prints, observed_changes, observed_lines


def run(code: str, ns: dict[str, object]) -> tuple[list[str], tuple[str, ...]]:
    before = namespace_prints(ns)
    exec(code, ns)
    changes = observed_changes(before, ns, cell_effects(code))
    return observed_lines(changes, preview_blind=not cell_effects(code).visible), changes.unpredicted


def test_a_rebinding_through_globals_is_observed_and_named_as_not_predicted():
    ns: dict[str, object] = {"x": 1, "keep": [1, 2]}
    lines, missed = run("globals()['x'] = 'text'\n", ns)
    assert lines[0] == "observed: rebound x (int → str)"
    assert missed == ("x",)
    assert lines[1] == "not predicted (the preview could not see all of its effects): x"


def test_added_deleted_and_resized_names_each_said_once_and_untouched_names_never():
    big = np.zeros((1000, 3))
    ns: dict[str, object] = {"a": 1, "b": [1], "arr": big, "same": 5, "gone": {"k": 1}}
    lines, missed = run("new = 2\nb.append(3)\ndel gone\nsame = 5\n", ns)
    assert lines == ["observed: added new (int); deleted gone (dict of 1); changed in place b (list of 2)"]
    assert missed == ()  # all predicted: `new` bound, `gone` deleted, `b` may be modified (append)


def test_a_cell_that_changes_nothing_says_so_and_ipython_machinery_is_left_out():
    ns: dict[str, object] = {"a": 1, "_": 3, "_i4": "x", "Out": {}}
    lines, _ = run("_ = 4\n_i5 = 'y'\nOut[1] = 2\n", ns)
    assert lines == ["observed: no name added, rebound or deleted"]


def test_an_exec_that_defines_a_name_is_observed_as_unpredicted():
    ns: dict[str, object] = {}
    lines, missed = run("exec('hidden = 42')\n", ns)
    assert lines[0] == "observed: added hidden (int)"
    assert missed == ("hidden",)


def test_a_cell_that_makes_many_names_lists_a_dozen_and_counts_the_rest():
    ns: dict[str, object] = {}
    lines, missed = run("exec(';'.join(f'n{i} = {i}' for i in range(30)))\n", ns)
    assert lines[0].endswith("n11 (int), and 18 more")
    assert lines[1].endswith(": n0, n1, n2, n3, n4, n5, n6, n7, n8, n9, n10, n11, and 18 more")
    assert len(missed) == 30
