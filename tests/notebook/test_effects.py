"""What a cell's run can change, found by parsing it: a table of sources, one per construct.

Each row is a cell a person might write and what the approval prompt must say about it; the
unseen constructs (exec, eval, globals(), magics, shell lines) must say "effects not visible"
rather than a reassuring list.
"""

from __future__ import annotations

import pytest

from ipy_agent.notebook.effects import ALL_CLEAR, cell_effects, effect_lines
from ipy_agent.notebook.policy import cell_policy, with_cell_tag

TABLE: list[tuple[str, str, dict[str, tuple[str, ...]]]] = [
    ("assignment", "df = load()", {"binds": ("df",), "uses": ("load",)}),
    ("tuple and starred", "a, *rest = xs", {"binds": ("a", "rest"), "uses": ("xs",)}),
    ("chained", "x = y = 0", {"binds": ("x", "y")}),
    ("annotated", "n: int = 3", {"binds": ("n",)}),
    ("annotation only binds nothing", "n: int", {"binds": ()}),
    ("augmented reads and rebinds", "total += 1", {"binds": ("total",), "uses": ("total",)}),
    ("del", "del a, b", {"deletes": ("a", "b")}),
    ("del of an item modifies", "del d['k']", {"may_modify": ("d (del of an item)",)}),
    ("for target", "for i, (j, *k) in pairs:\n    pass", {"binds": ("i", "j", "k"), "uses": ("pairs",)}),
    ("with target", "with open(p) as fh, ctx() as (u, v):\n    pass", {"binds": ("fh", "u", "v")}),
    ("walrus", "if (n := compute()) > 5:\n    pass", {"binds": ("n",)}),
    ("walrus in a comprehension", "[y for x in xs if (y := x)]", {"binds": ("y",), "uses": ("xs",)}),
    ("comprehension variables are local", "[q for q in range(3)]", {"binds": (), "uses": ("range",)}),
    ("import", "import numpy as np, os.path", {"binds": ("np", "os"), "imports": ("numpy", "os")}),
    ("from import", "from pandas import DataFrame as D", {"binds": ("D",), "imports": ("pandas",)}),
    ("relative import is not a module name", "from . import x", {"binds": ("x",), "imports": ()}),
    (
        "def and class",
        "def f(a=default):\n    return a\nclass K:\n    z = 1",
        {"binds": ("f", "K"), "uses": ("default",)},
    ),
    ("global in a function", "def g():\n    global counter\n    counter = 1", {"binds": ("g", "counter")}),
    ("local in a function stays local", "def h():\n    tmp = 1", {"binds": ("h",)}),
    ("except as", "try:\n    pass\nexcept E as err:\n    pass", {"binds": ("err",), "uses": ("E",)}),
    ("item assignment", "df['col'] = 1", {"may_modify": ("df (item assignment)",), "uses": ("df",)}),
    ("attribute assignment", "model.lr = 0.1", {"may_modify": ("model (attribute assignment)",)}),
    ("inplace=True", "df.drop(columns=['a'], inplace=True)", {"may_modify": ("df (drop with inplace=True)",)}),
    ("append", "lst.append(3)", {"may_modify": ("lst (append)",)}),
    ("fit", "model.fit(X, y)", {"may_modify": ("model (fit)",)}),
    ("a fresh name read after binding is not a use", "v = 1\nprint(v)", {"binds": ("v",), "uses": ("print",)}),
    ("exec", "exec('y = 1')", {"unseen": ("calls exec()",)}),
    ("eval", "z = eval(text)", {"binds": ("z",), "unseen": ("calls eval()",)}),
    ("globals()", "globals()['w'] = 1", {"unseen": ("calls globals()",)}),
    ("exec inside a function", "def run():\n    exec(code)", {"binds": ("run",), "unseen": ("calls exec()",)}),
    ("%run", "%run other.py", {"unseen": ("runs %run",)}),
    ("line magic", "%matplotlib inline\nx = 1", {"binds": ("x",), "unseen": ("runs %matplotlib",)}),
    ("shell line", "!pip install x", {"unseen": ("runs ! shell commands",)}),
    ("shell capture", "files = !ls\nn = len(files)", {"binds": ("files", "n"), "unseen": ("runs ! shell commands",)}),
    ("indented magic", "for i in r:\n    %time f(i)", {"binds": ("i",), "unseen": ("runs %time",)}),
    ("cell magic that is not Python", "%%bash\necho hi", {"unseen": ("is a %%bash cell",)}),
    ("%%time runs Python", "%%time\nz = 1", {"binds": ("z",), "unseen": ()}),
    ("star import", "from os.path import *", {"imports": ("os",), "unseen": ("imports * from os.path",)}),
    ("modulo is not a magic", "r = a % b", {"binds": ("r",), "unseen": ()}),
]


@pytest.mark.parametrize(("what", "source", "expected"), TABLE, ids=[row[0] for row in TABLE])
def test_the_effects_of_each_construct(what: str, source: str, expected: dict[str, tuple[str, ...]]):
    effects = cell_effects(source)
    assert effects.syntax_error is None
    for key, value in expected.items():
        assert getattr(effects, key) == value, (what, key)


def test_the_prompt_lines_say_what_exists_now_and_what_is_unseen():
    effects = cell_effects("import json, pandas\ndf = df.dropna()\nnew = 1\ndel old\nlst.append(2)")
    lines = effect_lines(
        effects,
        current={"df": "DataFrame 10,000 × 12", "old": "int 3"},  # noqa: RUF001
        loaded=["json"],
        last_run="[4] took 2.0 s",
    )
    assert lines == [
        "overwrites df: DataFrame 10,000 × 12",  # noqa: RUF001
        "defines json, pandas, new",
        "deletes old: int 3",
        "may modify lst (append)",
        "imports modules not loaded yet: pandas",
        "not followed into the code it calls (df.dropna, lst.append): what that code changes is not seen",
        "last run: [4] took 2.0 s",
    ]
    assert effect_lines(cell_effects("exec(s)"))[0] == "effects not visible: it calls exec()"
    assert effect_lines(cell_effects("def broken(:"))[0].startswith("effects not visible: the cell does not parse")
    assert effect_lines(cell_effects("print(1)")) == [ALL_CLEAR]


def test_cell_policies_come_from_tags_the_cell_map_and_the_whole_notebook():
    assert cell_policy({"id": "a", "tags": ["agent:never-run"]}).never_run
    tagged = cell_policy({"id": "a", "tags": ["agent:ask", "agent:timeout=600", 3]})
    assert tagged.ask and not tagged.never_run and tagged.timeout == 600
    meta = with_cell_tag({"instructions": "keep"}, "b", "agent:never-run")
    assert meta == {"instructions": "keep", "cell_policies": {"b": ["agent:never-run"]}}
    assert cell_policy({"id": "b", "tags": []}, meta).never_run
    assert not cell_policy({"id": "c", "tags": []}, meta)
    everywhere = cell_policy({"id": "c"}, {"policy": ["agent:read-only"]})
    assert everywhere.read_only and "every cell" in everywhere.where
    assert cell_policy({"id": "c", "tags": ["agent:timeout=-1", "agent:timeout=abc"]}).timeout is None
