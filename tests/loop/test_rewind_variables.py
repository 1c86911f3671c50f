"""Rewind keeps the variables the person changed after the agent's run, as it keeps files and cells.

The agent runs a cell with NotebookRun in an in-process IPython shell (a fake page); the person
then rebinds a name; `arewind()` keeps the person's value and names it, `force=True` puts the
run's before-value back, and the control (the fingerprint check taken away) shows the person's
value replaced. The fingerprint compares identities, types and builtin values only: no code of
the value's class runs, which a class that records every special method call proves.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ipy_agent import Agent, ScriptedModel
from ipy_agent.contract.checkpoints import Checkpoints, assigned_names
from ipy_agent.loop import rewind
from ipy_agent.loop.rewind_report import RewindReport
from ipy_agent.notebook.fingerprint import fingerprint, unchanged
from tests.support.frontend import Panel, cell, connected_bridge
from tests.support.transcript import use


async def agent_ran(shell: Any, tmp_path: Path, *sources: str) -> Agent:
    """An agent that ran `sources` as cells of the open notebook, in order, in `shell`."""
    ids = [f"c{i}" for i in range(len(sources))]
    panel = Panel(path="nb.ipynb", cells=[cell(source, cell_id=i) for i, source in zip(ids, sources, strict=True)])
    turns = [[use("NotebookRun", "n1", cell_ids=ids)], "Done."]
    agent = Agent(
        model=ScriptedModel(turns),
        cwd=tmp_path,
        notebook=connected_bridge(panel, tmp_path, shell=shell),
        permission_mode="bypassPermissions",
    )
    await agent.arun("change x")
    return agent


def person(shell: Any, code: str) -> None:
    assert shell.run_cell(code).success


@pytest.mark.parametrize("defence", ["on", "forced", "off"])
async def test_a_variable_the_person_rebound_after_the_run_is_kept_and_named_unless_forced(
    shell: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, defence: str
):
    person(shell, "x = [1, 2]")
    agent = await agent_ran(shell, tmp_path, "x = [9]")
    assert shell.user_ns["x"] == [9]
    person(shell, "x = ['mine']")
    if defence == "off":  # the control: no comparison with what the run left
        monkeypatch.setattr(rewind, "_changed_since_run", lambda store, ns, name: None)
    report = await agent.arewind(force=defence == "forced")
    if defence == "on":
        assert shell.user_ns["x"] == ["mine"]
        assert report.kept == ["variable x (changed since the agent's run)"]
        assert "Kept: changed since the agent's last change (force overrides):\n  - variable x" in str(report)
        assert "variable x (changed since the agent's run)" in report.note_for_model()
    else:  # forced, or undefended: the person's x is replaced by the one from before the run
        assert shell.user_ns["x"] == [1, 2]
        assert report.variables_restored == ["x"] and not report.kept


async def test_a_variable_nobody_changed_comes_back_and_one_the_run_made_goes(shell: Any, tmp_path: Path):
    person(shell, "x = [1, 2]\nbig = 1")
    agent = await agent_ran(shell, tmp_path, "x = [9]\nbig = 10 ** 30\nfresh = {'a': 1}")
    person(shell, "big = 10 ** 30")  # a new int, equal to what the run left: the same value
    report = await agent.arewind()
    assert (shell.user_ns["x"], shell.user_ns["big"], "fresh" in shell.user_ns) == ([1, 2], 1, False)
    assert report.variables_restored == ["big", "x"] and report.variables_removed == ["fresh"] and not report.kept


async def test_what_the_fingerprint_sees_of_a_change_made_in_place(shell: Any, tmp_path: Path):
    """A list grown in place is seen (its builtin length); one changed in place at the same size
    is not (documented in notebook/fingerprint.py), and goes back."""
    person(shell, "grown = [0]\nsame = [0]")
    agent = await agent_ran(shell, tmp_path, "grown = [1]\nsame = [1]")
    person(shell, "grown.append(2)\nsame[0] = 2")
    report = await agent.arewind()
    assert shell.user_ns["grown"] == [1, 2] and shell.user_ns["same"] == [0]
    assert report.kept == ["variable grown (changed since the agent's run)"]


@pytest.mark.parametrize("reads_counted", [True, False])
async def test_a_later_cell_of_the_run_that_changes_a_variable_in_place_is_the_agents_change(
    shell: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reads_counted: bool
):
    """The run's second cell grows the list its first cell made: what the run left is the grown
    list, so a rewind with no change from the person puts the old value back, keeping nothing.
    Control: fingerprinting only the names a cell assigns takes the agent's own append for the
    person's, and the rewind keeps the agent's list."""
    if not reads_counted:

        def assigned_only(self: Checkpoints, code: str, namespace: dict[str, Any]) -> None:
            for name in assigned_names(code) or ():
                self.left[name] = fingerprint(namespace[name]) if name in namespace else None

        monkeypatch.setattr(Checkpoints, "after_run", assigned_only)
    person(shell, "x = [1, 2]")
    agent = await agent_ran(shell, tmp_path, "x = [9]", "x.append(10)")
    assert shell.user_ns["x"] == [9, 10]
    report = await agent.arewind()
    if reads_counted:
        assert shell.user_ns["x"] == [1, 2] and report.variables_restored == ["x"] and not report.kept
    else:
        assert shell.user_ns["x"] == [9, 10] and report.kept == ["variable x (changed since the agent's run)"]


async def test_names_the_run_made_or_removed_that_the_person_set_since_are_kept(shell: Any, tmp_path: Path):
    person(shell, "old = 1")
    agent = await agent_ran(shell, tmp_path, "fresh = 1\ndel old")
    person(shell, "fresh = 'mine'\nold = 'mine too'")
    report: RewindReport = await agent.arewind()
    assert shell.user_ns["fresh"] == "mine" and shell.user_ns["old"] == "mine too"
    assert sorted(report.kept) == [
        "variable fresh (changed since the agent's run)",
        "variable old (set since the agent's run removed it)",
    ]


CALLS: list[str] = []  # the special methods that ran, in order


class _Meta(type):
    def __eq__(cls, other: object) -> bool:
        CALLS.append("type.__eq__")
        return False

    def __hash__(cls) -> int:
        CALLS.append("type.__hash__")
        return 0


class Loud(metaclass=_Meta):
    """Records every special method a comparison could call."""

    def __eq__(self, other: object) -> bool:
        CALLS.append("__eq__")
        return True

    def __hash__(self) -> int:
        CALLS.append("__hash__")
        return 0

    def __len__(self) -> int:
        CALLS.append("__len__")
        return 0

    def __repr__(self) -> str:
        CALLS.append("__repr__")
        return "Loud"

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        CALLS.append("__class__")
        return int


class LoudList(list[int]):
    def __len__(self) -> int:
        CALLS.append("LoudList.__len__")
        return 0


def test_the_fingerprint_runs_no_code_of_the_values_class():
    CALLS.clear()
    a, b, items = Loud(), Loud(), LoudList([1])
    print_a = fingerprint(a)
    assert unchanged(print_a, a) and not unchanged(print_a, b) and not unchanged(print_a, 5)
    assert unchanged(fingerprint(items), items) and not unchanged(fingerprint(items), LoudList([1]))
    assert not unchanged(fingerprint(5), a) and not unchanged(fingerprint((1, "a")), a)
    assert CALLS == []
    # Control: comparing by value, as a rewind that used `==` or `len` would, runs them.
    assert a == b and len(items) == 0 and type(a) != int  # noqa: E721
    assert CALLS == ["__eq__", "LoudList.__len__", "type.__eq__"]


def test_builtin_values_compare_by_value_and_containers_by_identity_and_size():
    assert unchanged(fingerprint(10**30), 10**30 + 0) and not unchanged(fingerprint(10**30), 10**30 + 1)
    assert unchanged(fingerprint(float("nan")), float("nan")) and not unchanged(fingerprint(1), True)
    long = "a" * 10_000
    assert unchanged(fingerprint(long), "a" * 10_000) and not unchanged(fingerprint(long), "b" * 10_000)
    items = [1]
    print_ = fingerprint(items)
    assert unchanged(print_, items) and not unchanged(print_, [1])
    items.append(2)
    assert not unchanged(print_, items)
