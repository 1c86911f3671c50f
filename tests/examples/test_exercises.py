"""Every exercise of the teaching notebooks checks itself: its check passes on the solution, and
fails on the unchanged starting code with words that say what to change.

The cells come from the notebooks as committed (tags `exercise`, `check`, `solution`), and run
here in a fresh namespace with only `exercises` (examples/exercises.py) imported, as the notebook's
first cell imports it: so the exercises stand on their own, whatever the cells above them did.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import nbformat
import pytest

from examples import exercises

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NOTEBOOKS = sorted(EXAMPLES.glob("[0-9][0-9]_*.ipynb"))


def tagged(nb: nbformat.NotebookNode, tag: str) -> list[str]:
    return [c.source for c in nb.cells if c.cell_type == "code" and tag in c.metadata.get("tags", [])]


def exercise_cells() -> list[Any]:
    params = []
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        for n, (start, check, solution) in enumerate(
            zip(tagged(nb, "exercise"), tagged(nb, "check"), tagged(nb, "solution"), strict=False), 1
        ):
            params.append(pytest.param(start, check, solution, id=f"{path.stem}-{n}"))
    return params


def run_cells(*sources: str) -> Any:
    """Exec the cells in order in one namespace; the value of the last cell's last expression.
    (Compiled without this module's `from __future__ import annotations`, as a kernel would.)"""
    ns: dict[str, Any] = {"exercises": exercises}
    *cells, last = sources
    for source in cells:
        exec(compile(source, "<cell>", "exec", dont_inherit=True), ns)
    tree = ast.parse(last)
    assert isinstance(tree.body[-1], ast.Expr), f"the check cell must end with the check's call:\n{last}"
    body = ast.Module(body=tree.body[:-1], type_ignores=[])
    exec(compile(body, "<cell>", "exec", dont_inherit=True), ns)
    return eval(compile(ast.Expression(tree.body[-1].value), "<cell>", "eval", dont_inherit=True), ns)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_each_notebook_ends_with_exercises_and_folded_solutions(path: Path):
    nb = nbformat.read(path, as_version=4)
    starts, checks, solutions = (tagged(nb, t) for t in ("exercise", "check", "solution"))
    assert 1 <= len(starts) <= 2, f"{path.name}: a notebook ends with one or two exercises; it has {len(starts)}"
    assert len(starts) == len(checks) == len(solutions), f"{path.name}: each exercise needs a check and a solution"
    assert "import exercises" in next(c.source for c in nb.cells if c.cell_type == "code"), (
        f"{path.name}: the first code cell imports the checks (import exercises)"
    )
    for cell in nb.cells:
        if "solution" in cell.metadata.get("tags", []):
            assert cell.metadata.get("jupyter", {}).get("source_hidden") is True, f"{path.name}: fold the solution"
    headings = [c.source for c in nb.cells if c.cell_type == "markdown"]
    exercises_at = next(i for i, s in enumerate(headings) if s.startswith("## Exercises"))
    notice_at = next(i for i, s in enumerate(headings) if s.startswith("## What to notice"))
    assert notice_at < exercises_at, f"{path.name}: the exercises come after 'What to notice', at the end"


@pytest.mark.parametrize(("start", "check", "solution"), exercise_cells())
def test_check_fails_on_the_starting_code_with_a_hint(start: str, check: str, solution: str):
    report = run_cells(start, check)
    assert isinstance(report, exercises.Report)
    assert not report.passed, f"the starting code already passes:\n{report!r}"
    assert report.problems and all(len(p) > 30 for p in report.problems), repr(report)
    assert not any(" raised " in p for p in report.problems), f"the starting code crashed the check:\n{report!r}"
    assert "not yet" in repr(report) and "not yet" in report._repr_html_()


@pytest.mark.parametrize(("start", "check", "solution"), exercise_cells())
def test_check_passes_on_the_solution(start: str, check: str, solution: str):
    # The solution cell ends with the same check; it runs after the starting cell, as in the notebook.
    assert solution.rstrip().endswith(check.strip()), "the solution cell ends with the exercise's check"
    report = run_cells(start, solution)
    assert report.passed, f"the solution does not pass:\n{report!r}"
    assert "all" in report.summary() and "✗" not in report._repr_html_()


def test_a_check_reports_a_crash_in_the_learners_code_instead_of_raising():
    report = exercises.check_spill_budget(lambda: 1 / 0)
    assert not report.passed
    assert report.problems == ["make_report_tool() raised ZeroDivisionError: division by zero"]


def test_exercises_were_found():
    assert len(exercise_cells()) >= len(NOTEBOOKS)
