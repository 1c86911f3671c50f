"""Issue 35, third pass: doors around the new defences found by a fresh review, each with its control.

Each attack is real: it runs, and what it changes is read back (the namespace of an in-process
IPython shell, the text of the prompt). The control turns the defence off and shows the same
attack getting through.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ipy_agent.notebook import namespace_reach
from ipy_agent.notebook.effects import ALL_CLEAR
from tests.notebook.test_effects_fail_closed import false_claim, new_lines, run_and_compare

# A class of the notebook whose special method rebinds a global: Python runs it with no call the
# cell shows (`print(r)` runs `__str__`, a last line `r` runs `__repr__`, `r.total` a property).
_REPORT = """
total = 42
class Report:
    def __str__(self):
        global total
        total = 0
        return 'report'
    __repr__ = __str__
    @property
    def size(self):
        global total
        del total
        return 1
    def __lt__(self, other):
        global total
        total = -1
        return True
r = Report()
"""

SPECIAL_METHODS: list[tuple[str, str]] = [
    ("print runs __str__", "print(r)"),
    ("str() runs __str__", "s = str(r)"),
    ("an f-string runs __str__", "s = f'{r}'"),
    ("a property", "n = r.size"),
    ("sorted runs __lt__", "s = sorted([Report(), r])"),
    ("an item of a list runs __repr__", "rs = [r]\nprint(rs)"),
]


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("what", "source"), SPECIAL_METHODS, ids=[row[0] for row in SPECIAL_METHODS])
def test_a_special_method_of_the_notebook_that_rebinds_a_global_makes_the_effects_unseen(
    make_shell: Callable[..., Any], monkeypatch: pytest.MonkeyPatch, what: str, source: str
):
    shell = make_shell(load=False)
    assert shell.run_cell(_REPORT).success
    lines = new_lines(shell, source)  # what NotebookRun's prompt shows before the run
    # Control: without the look at the classes of the values the cell uses, the prompt claims
    # the cell changes nothing of the kind.
    monkeypatch.setattr(namespace_reach, "_special_method_reach", lambda value, namespace, reach: [])
    undefended = new_lines(shell, source)
    monkeypatch.undo()
    change = run_and_compare(shell, "", source)
    assert "total" in change.bound | change.removed, f"{what}: the run must really change total"
    assert false_claim(lines, change) is None, what
    assert lines[0].startswith("effects not visible") and "total" in lines[0], lines
    assert false_claim(undefended, change) is not None, f"{what}: {undefended}"


@pytest.mark.timeout(60)
def test_a_class_of_the_notebook_that_changes_no_global_keeps_the_all_clear(make_shell: Callable[..., Any]):
    shell = make_shell(load=False)
    assert shell.run_cell(
        "class Point:\n    def __repr__(self):\n        return 'p'\np = Point()\nxs = [1.0] * 1000"
    ).success
    assert new_lines(shell, "print(p)\nprint(len(xs))") == [ALL_CLEAR]


@pytest.mark.timeout(60)
def test_the_look_at_a_value_s_class_runs_no_code_of_the_value(make_shell: Callable[..., Any]):
    """A `__class__` property, a metaclass's `__mro__` and a list subclass's `__iter__` of the
    notebook would run if the look used `isinstance`, `cls.__mro__` or iteration; none may."""
    shell = make_shell(load=False)
    setup = (
        "ran = []\n"
        "class Meta(type):\n"
        "    @property\n"
        "    def __mro__(cls):\n"
        "        ran.append('mro')\n"
        "        return (cls,)\n"
        "class Sneaky(metaclass=Meta):\n"
        "    @property\n"
        "    def __class__(self):\n"
        "        ran.append('class')\n"
        "        return dict\n"
        "class Items(list):\n"
        "    def __iter__(self):\n"
        "        ran.append('iter')\n"
        "        return iter([])\n"
        "s = Sneaky()\n"
        "it = Items([1])\n"
    )
    assert shell.run_cell(setup).success
    lines = new_lines(shell, "print(s, Sneaky, it)")
    assert shell.user_ns["ran"] == [], shell.user_ns["ran"]
    assert lines == [ALL_CLEAR]
    # Control: the ways the look avoids do run the notebook's code.
    assert isinstance(shell.user_ns["s"], dict) and shell.user_ns["ran"] == ["class"]
