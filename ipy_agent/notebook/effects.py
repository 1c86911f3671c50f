"""What running a cell's code can change, found statically: nothing runs to find it.

`cell_effects(source)` parses the cell with `ast` and collects (`cell_bindings.py`) the names the
run binds at the top level of the namespace, in every binding form Python has, the names it
deletes, the modules it imports, and calls that commonly change a value in place
(`df.drop(..., inplace=True)`, `items.append(x)`, `d["k"] = v`). It also collects the names the
cell reads before binding them (`uses`), which is what the staleness hints of NotebookRead
compare between cells.

The claim fails closed. What a parse cannot see is said, never guessed, and the summary then
says "effects not visible": anything that reaches the namespace other than by a name
(`get_ipython()`, `globals()`, `.user_ns`, `sys.modules`, `__main__`, `builtins`, frames,
`setattr`, `exec`, a pickle's loader, such code in a string, ...) and syntax it does not know (`namespace_reach.py`, which also looks at
what the names the cell reads hold now: the shell, the namespace itself, a function that assigns
globals), a line magic, a `!` line, a cell magic whose arguments or body it cannot read, `from x
import *`. Even when all is seen, the summary speaks for the cell's own code only: the code it
calls is not followed, and a last line names those calls (`not followed into the code it calls
(pd.read_csv, load)`), after the list or after the all-clear line (`ALL_CLEAR`).

IPython syntax is not Python: a line starting with `%` or `!` (or `x = !cmd`, `x = %magic`) is
taken out before parsing, and noted as unseen; a cell magic (`%%time`, `%%bash`) makes the whole
cell unseen, except `%%time`, `%%timeit`, `%%prun` and `%%capture`, whose body is Python (and
whose arguments are read: `%%capture out` binds `out`; arguments it does not know are unseen).
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass

from .cell_bindings import Found, collect
from .namespace_reach import unseen_reach

__all__ = ["ALL_CLEAR", "CellEffects", "cell_effects", "effect_lines"]

# What the summary says when the cell's own code binds, deletes and modifies nothing it can see.
ALL_CLEAR = "its own code binds no variable"
_MOST_CALLS_SHOWN = 4

# Cell magics whose body is ordinary Python run in the namespace.
_PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun"})
_TIMEIT_ARG = re.compile(r"^(-[tcqo]+|-[nrp]\d*|\d+)$")
_CAPTURE_OPTION = frozenset({"--no-stderr", "--no-stdout", "--no-display"})
_LINE_MAGIC = re.compile(r"^(\s*)(?:([A-Za-z_][\w, *]*?)\s*=\s*)?([%!])(%?)([\w.]*)(.*)$")


@dataclass(frozen=True, kw_only=True)
class CellEffects:
    """What a cell's code can change in the namespace, and what it reads."""

    binds: tuple[str, ...] = ()  # names assigned, rebound, defined or imported (first binding order)
    deletes: tuple[str, ...] = ()
    imports: tuple[str, ...] = ()  # top-level module names imported ("pandas", "os")
    may_modify: tuple[str, ...] = ()  # "df (drop with inplace=True)", "items (append)"
    unseen: tuple[str, ...] = ()  # reasons the effects cannot all be seen ("runs %run")
    uses: tuple[str, ...] = ()  # names read that the cell does not bind before reading
    calls: tuple[str, ...] = ()  # what its top-level code calls (`pd.read_csv`), plain builtins aside
    syntax_error: str | None = None

    @property
    def visible(self) -> bool:
        return not self.unseen and self.syntax_error is None


@functools.lru_cache(maxsize=2048)
def cell_effects(source: str) -> CellEffects:
    """The effects of running `source` as a cell, found by parsing it. Kept per source (the
    result is immutable): NotebookRead marks stale cells from every code cell of the notebook on
    each read, and a 500-cell notebook took 0.2-0.7 s to parse again when nothing had changed."""
    found = Found()
    python = _strip_ipython(source, found)
    if python is None:
        return _frozen(found)
    try:
        tree = ast.parse(python)
    except (SyntaxError, ValueError) as e:
        where = f"line {e.lineno}: {e.msg}" if isinstance(e, SyntaxError) else str(e)
        return CellEffects(syntax_error=where, unseen=tuple(found.unseen))
    for why in unseen_reach(tree):
        found.unseen.setdefault(why, None)
    collect(tree, found)
    return _frozen(found)


def _frozen(found: Found) -> CellEffects:
    return CellEffects(
        binds=tuple(found.binds),
        deletes=tuple(found.deletes),
        imports=tuple(found.imports),
        may_modify=tuple(found.may_modify),
        unseen=tuple(found.unseen),
        uses=tuple(found.uses),
        calls=tuple(found.calls),
    )


def _strip_ipython(source: str, found: Found) -> str | None:
    """The cell as Python: magics and shell lines become `pass`, noted as unseen; None when the
    whole cell is a cell magic that is not Python."""
    lines = source.splitlines()
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is not None and lines[first].lstrip().startswith("%%"):
        magic = lines[first].lstrip()[2:].split()
        name, args = (magic[0], magic[1:]) if magic else ("", [])
        if name not in _PYTHON_CELL_MAGICS:
            found.unseen.setdefault(f"is a %%{name} cell", None)
            return None
        if not _cell_magic_args(name, args, found):
            found.unseen.setdefault(f"is a %%{name} cell with arguments it does not know ({' '.join(args)})", None)
        lines[first] = ""
    out: list[str] = []
    for line in lines:
        m = _LINE_MAGIC.match(line)
        if m is None or not line.strip() or line.lstrip().startswith("#"):
            out.append(line)
            continue
        indent, target, kind, double, word, _rest = m.groups()
        found.unseen.setdefault(f"runs {kind}{double}{word}" if kind == "%" else "runs ! shell commands", None)
        out.append(f"{indent}{target} = None" if target else f"{indent}pass")
    return "\n".join(out)


def _cell_magic_args(name: str, args: list[str], found: Found) -> bool:
    """Whether the Python cell magic's arguments are all understood; `%%capture out` binds `out`."""
    if name == "timeit":
        return all(_TIMEIT_ARG.match(a) for a in args)
    if name == "capture":
        targets = [a for a in args if a not in _CAPTURE_OPTION]
        if len(targets) > 1 or any(not t.isidentifier() for t in targets):
            return False
        for t in targets:
            found.bind(t)
        return True
    return not args  # %%time, %%prun


def effect_lines(
    effects: CellEffects,
    *,
    current: dict[str, str] | None = None,
    loaded: Iterable[str] = (),
    last_run: str | None = None,
    reached: Iterable[str] = (),
) -> list[str]:
    """The effects as lines a person reads in the prompt and the model in the result.

    `current` maps names that exist now to their summary (from Variables); `loaded` are the
    modules already imported; `last_run` says how the cell's last run went ("took 2.1 s, 3
    outputs, 12,000 characters"); `reached` are `reach_through_values`'s reasons. Whatever is
    unseen comes first and says so; the calls the analysis does not follow come last."""
    current = current or {}
    unseen = [*effects.unseen, *reached]
    lines: list[str] = []
    if effects.syntax_error:
        lines.append(f"effects not visible: the cell does not parse ({effects.syntax_error})")
    if unseen:
        lines.append(f"effects not visible: it {', '.join(unseen)}")
    over = [n for n in effects.binds if n in current]
    new = [n for n in effects.binds if n not in current]
    lines.extend(f"overwrites {n}: {current[n]}" for n in over)
    if new:
        lines.append(f"defines {', '.join(new)}")
    for n in effects.deletes:
        lines.append(f"deletes {n}: {current[n]}" if n in current else f"deletes {n}")
    if effects.may_modify:
        lines.append(f"may modify {', '.join(effects.may_modify)}")
    loaded_set = set(loaded)
    fresh = [m for m in effects.imports if m not in loaded_set]
    if fresh:
        lines.append(f"imports modules not loaded yet: {', '.join(fresh)}")
    if not lines:
        lines.append(ALL_CLEAR)
    if effects.calls and not unseen and not effects.syntax_error:
        shown = ", ".join(effects.calls[:_MOST_CALLS_SHOWN]) + (", …" if len(effects.calls) > _MOST_CALLS_SHOWN else "")
        lines.append(f"not followed into the code it calls ({shown}): what that code changes is not seen")
    if last_run:
        lines.append(f"last run: {last_run}")
    return lines
