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


# --- Variables: a DataFrame's detail runs no code of what the frame holds ----------------------


class _Recorder:
    """An object that records each time its own code runs once `armed` (pandas' constructor
    reads `__class__` while it builds the frame)."""

    armed = False
    ran: list[str] = []  # noqa: RUF012 (the record is the class's)

    def __deepcopy__(self, memo: dict[int, object]) -> _Recorder:
        if _Recorder.armed:
            _Recorder.ran.append("__deepcopy__")
        return self

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        if _Recorder.armed:
            _Recorder.ran.append("__class__")
        return object


class _LoudFloat(float):
    """A float subclass: pandas' null check compares it with itself (`x != x`), running this."""

    def __ne__(self, other: object) -> bool:
        if _Recorder.armed:
            _Recorder.ran.append("__ne__")
        return False

    __hash__ = float.__hash__


def _detail_runs(frame: Any) -> list[str]:
    from ipy_agent.notebook.variables import describe_detail

    _Recorder.ran.clear()
    _Recorder.armed = True
    try:
        describe_detail(frame)
    finally:
        _Recorder.armed = False
    return list(_Recorder.ran)


@pytest.mark.timeout(60)
def test_variables_detail_copies_no_attrs_that_hold_objects(monkeypatch: pytest.MonkeyPatch):
    pd = pytest.importorskip("pandas")
    from ipy_agent.notebook import variables

    frame = pd.DataFrame({"a": [1, 2]})
    frame.attrs["meta"] = _Recorder()
    series = pd.Series([1.0, 2.0])
    series.attrs["meta"] = _Recorder()
    assert _detail_runs(frame) == [] and _detail_runs(series) == []
    assert "no column statistics" in str(variables.describe_detail(frame))
    plain = pd.DataFrame({"a": [1, None]})
    plain.attrs["unit"] = {"a": ["m", 1]}
    assert variables.describe_detail(plain) == "2 rows × 1 columns\n'a': float64, 1 null, range 1 to 1"  # noqa: RUF001
    # Control: taken for plain data, the attrs are deep-copied by each derived frame.
    monkeypatch.setattr(variables, "_plain_data", lambda value, depth=0: True)
    assert "__deepcopy__" in _detail_runs(frame) and "__deepcopy__" in _detail_runs(series)


@pytest.mark.timeout(60)
def test_variables_detail_counts_nulls_of_an_object_column_without_asking_the_elements(
    monkeypatch: pytest.MonkeyPatch,
):
    pd = pytest.importorskip("pandas")
    from ipy_agent.notebook import variables

    things = pd.Series([_Recorder(), None, _LoudFloat("nan"), _LoudFloat(1.5)], dtype=object)
    frame = pd.DataFrame({"thing": things, "n": pd.array([1, None, 3, 4], dtype="Int64")})
    assert _detail_runs(frame) == []
    assert variables.describe_detail(frame) == (
        "4 rows × 2 columns\n'thing': object, 2 null\n'n': Int64, 1 null, range 1 to 4"  # noqa: RUF001
    )
    # Control: pandas' own null check compares a float subclass with itself.
    monkeypatch.setattr(variables, "_null_count", lambda column, dtype: f"{int(column.isna().sum())} null")
    assert "__ne__" in _detail_runs(frame)
