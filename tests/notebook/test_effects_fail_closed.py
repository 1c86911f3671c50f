"""The effect preview fails closed: a cell that changes a variable never reads as if it did not.

Each row is a cell that really changes a variable of the notebook, proven by running it in an
in-process IPython shell and comparing the namespace before and after. The lines the person reads
in NotebookRun's prompt (`run_notes.effect_notes`, with the shell's namespace) must either name
every name the run rebound, created or removed, or say "effects not visible". The control runs
the same table through the analysis as it was before (tests/support/effects_before.py): each row
there made a false claim ("changes no variable that can be seen", or a list without the name).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from ipy_agent.notebook import namespace_reach
from ipy_agent.notebook.effects import ALL_CLEAR, cell_effects, effect_lines
from ipy_agent.tools.notebook.run_notes import effect_notes
from tests.support import effects_before

# (what, set-up run first, the cell whose effects the prompt describes)
TABLE: list[tuple[str, str, str]] = [
    ("user_ns item", "x = 1", "get_ipython().user_ns['x'] = 2"),
    ("shell push", "x = 1", "get_ipython().push({'x': 2})"),
    ("shell del_var", "x = 1", "get_ipython().del_var('x')"),
    ("shell reset wipes", "x = 1", "get_ipython().reset(new_session=False)"),
    ("globals kept under another name", "x = 1", "g = globals\ng()['x'] = 2"),
    ("the namespace held by a name from an earlier cell", "x = 1\nns = globals()", "ns['x'] = 2"),
    ("the shell held by a name from an earlier cell", "x = 1\nip = get_ipython()", "ip.user_ns.update(x=2)"),
    ("exec kept under another name", "x = 1", "run = exec\nrun('x = 2')"),
    ("__builtins__.exec", "x = 1", "__builtins__.exec('x = 2')"),
    ("sys.modules", "x = 1", "import sys\nsys.modules['__main__'].x = 2"),
    ("__main__", "x = 1", "import __main__\n__main__.x = 2"),
    ("a frame's f_globals", "x = 1", "import sys\nsys._getframe().f_globals['x'] = 2"),
    ("inspect.currentframe", "x = 1", "import inspect\ninspect.currentframe().f_globals['x'] = 2"),
    ("getattr to the namespace", "x = 1", "import sys\ngetattr(sys, 'modules')['__main__'].x = 2"),
    ("%%capture binds its argument", "out = 1", "%%capture out\nprint('hi')"),
    ("match capture", "x = 1", "match (3, 4):\n    case (x, y):\n        pass"),
    ("match as", "x = 1", "match 5:\n    case int() as x:\n        pass"),
    ("match *rest", "", "match [1, 2, 3]:\n    case [first, *rest]:\n        pass"),
    ("match **rest", "", "match {'a': 1, 'b': 2}:\n    case {'a': 1, **rest}:\n        pass"),
    ("walrus in a lambda default", "x = 1", "f = lambda a=(x := 2): a"),
    ("walrus in an annotation", "x = 1", "def f(a: (x := 2)) -> None:\n    pass"),
    ("except as unbinds the name", "err = 1", "try:\n    1 / 0\nexcept ZeroDivisionError as err:\n    pass"),
    ("global for target", "x = 1", "def f():\n    global x\n    for x in range(3):\n        pass\nf()"),
    ("global import", "x = 1", "def f():\n    global x\n    import os as x\nf()"),
    ("global walrus", "x = 1", "def f():\n    global x\n    (x := 2)\nf()"),
    ("a function of the notebook that assigns a global", "x = 1\ndef bump():\n    global x\n    x = 2", "bump()"),
    (
        "a function of the notebook that calls one that does",
        "x = 1\ndef bump():\n    global x\n    x = 2\ndef outer():\n    bump()",
        "outer()",
    ),
]


@dataclass(frozen=True)
class Change:
    bound: frozenset[str]  # created or rebound
    removed: frozenset[str]


_IPYTHON_NAMES = re.compile(r"^(_.*|In|Out|exit|quit|get_ipython)$")


def run_and_compare(shell: Any, setup: str, source: str) -> Change:
    """Run `setup`, then `source`, in the shell: the user names the second run changed."""
    assert shell.run_cell(setup).success
    before = {k: v for k, v in shell.user_ns.items() if not _IPYTHON_NAMES.match(k)}
    result = shell.run_cell(source)
    assert result.error_in_exec is None and result.error_before_exec is None, result
    after = {k: v for k, v in shell.user_ns.items() if not _IPYTHON_NAMES.match(k)}
    bound = {k for k, v in after.items() if k not in before or before[k] is not v}
    return Change(bound=frozenset(bound), removed=frozenset(before.keys() - after.keys()))


def false_claim(lines: list[str], change: Change) -> str | None:
    """Why the lines mislead about the change, or None when they do not."""
    if any(line.startswith("effects not visible") for line in lines):
        return None
    said_bound: set[str] = set()
    said_deleted: set[str] = set()
    for line in lines:
        if line.startswith("overwrites "):
            said_bound.add(line.removeprefix("overwrites ").split(":")[0])
        elif line.startswith("defines "):
            said_bound.update(line.removeprefix("defines ").split(", "))
        elif line.startswith("deletes "):
            said_deleted.add(line.removeprefix("deletes ").split(":")[0])
    missing = sorted((change.bound - said_bound) | (change.removed - said_deleted))
    return f"{', '.join(missing)} changed; the prompt said {lines}" if missing else None


class _Notebook:
    """What `effect_notes` asks of the live notebook: its shell (no page, no run log)."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell

    def variables(self, names: list[str]) -> list[Any]:
        return []


def new_lines(shell: Any, source: str) -> list[str]:
    return effect_notes(_Notebook(shell), {"id": "c", "source": source})


def old_lines(shell: Any, source: str) -> list[str]:
    return effects_before.effect_lines(effects_before.cell_effects(source))


@pytest.mark.parametrize(("what", "setup", "source"), TABLE, ids=[row[0] for row in TABLE])
def test_the_prompt_makes_no_false_claim_about_a_cell_that_changes_a_variable(
    make_shell: Callable[..., Any], what: str, setup: str, source: str
):
    shell = make_shell(load=False)
    shell.run_cell(setup)
    lines = new_lines(shell, source)  # as the prompt shows them, before the run
    old = old_lines(shell, source)
    change = run_and_compare(shell, "", source)
    assert change.bound or change.removed, f"{what}: the cell must really change a variable"
    assert false_claim(lines, change) is None, what
    assert ALL_CLEAR not in lines
    # Control: the analysis before this change claimed what was false.
    assert false_claim(old, change) is not None, f"{what}: the old analysis was already right: {old}"


def test_a_cell_that_binds_nothing_gets_the_all_clear_and_the_calls_it_does_not_follow(
    make_shell: Callable[..., Any],
):
    shell = make_shell(load=False)
    shell.run_cell("x = 1\ndef show(v):\n    print(v)")
    assert new_lines(shell, "print(len([x]))") == [ALL_CLEAR]
    assert new_lines(shell, "show(x + 1)\nimport json\njson.dumps(x)") == [
        "defines json",
        "not followed into the code it calls (show, json.dumps): what that code changes is not seen",
    ]
    assert run_and_compare(shell, "", "show(x + 1)") == Change(bound=frozenset(), removed=frozenset())
    # A torch-style `model.modules()` call and a constant getattr are not namespace access.
    assert cell_effects("for m in model.modules():\n    pass\nn = getattr(m, 'weight')").unseen == ()


def test_syntax_the_check_does_not_know_is_unseen(monkeypatch: pytest.MonkeyPatch):
    """A newer Python's binding node (3.12's `type X = ...`) must not pass as nothing: here a
    node it knows is taken off the list, which is what a node it never knew looks like."""
    source = "match p:\n    case [x]:\n        pass"
    assert cell_effects(source).visible
    cell_effects.cache_clear()
    known = tuple(k for k in namespace_reach._KNOWN_NODES if k is not ast.MatchSequence)
    monkeypatch.setattr(namespace_reach, "_KNOWN_NODES", known)
    lines = effect_lines(cell_effects(source))
    cell_effects.cache_clear()
    assert lines[0] == "effects not visible: it uses syntax the check does not know (MatchSequence)"
    # Control: with the list whole, the same cell is seen and its capture named.
    monkeypatch.undo()
    assert effect_lines(cell_effects(source)) == ["defines x"]


def test_cell_magic_arguments_it_does_not_know_are_unseen():
    assert cell_effects("%%capture out\nx = 1").binds == ("out", "x")
    assert cell_effects("%%capture --no-stderr out\nx = 1").visible
    assert not cell_effects("%%capture out extra\nx = 1").visible
    assert cell_effects("%%timeit -n 10 -r3 -o\nx = 1").visible
    assert not cell_effects("%%timeit y = setup()\nx = 1").visible
    assert not cell_effects("%%time x = 1\ny = 2").visible
