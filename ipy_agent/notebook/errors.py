"""A failing run's error, told so that it leads to the fix.

A cell's traceback as IPython prints it is long and mostly not the person's: IPython's own
frames, the library's internals, ANSI colours. What the model needs to fix the cell is:

- the exception's type and message;
- the line of the cell that failed, with its number and a few lines around it;
- the frames in the person's code only: this cell, functions defined in earlier cells, and
  modules of the person's project (any file outside the environment's installed packages and
  the standard library); IPython's, ipykernel's and ipy_agent's frames are left out, and a
  library's are summed up as the one place the error left the person's code;
- for a `NameError`, the kernel's names that look like the missing one; for a `KeyError`, the
  columns of the DataFrames (and the keys of the dicts) the failing line names.

Nothing of the person's code runs to find this: the traceback's frames are read, and the
namespace is looked at by type (exact pandas DataFrames and builtin dicts only).
"""

from __future__ import annotations

import difflib
import linecache
import os
import sys
import sysconfig
import types
from dataclasses import dataclass
from typing import Any

__all__ = ["ErrorSummary", "summarize_error"]

CONTEXT_LINES = 2
MAX_FRAMES = 12
MAX_KEYS = 30

_OURS = ("IPython", "ipykernel", "ipy_agent", "asyncio", "traitlets", "tornado", "zmq", "comm")


@dataclass(frozen=True, kw_only=True)
class ErrorSummary:
    ename: str
    evalue: str
    line: int | None  # the cell's line that failed (1-based), when known
    text: str  # what the model reads


def _library_roots() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    roots = {paths.get(k, "") for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    roots.update({os.path.dirname(os.__file__)})
    return tuple(sorted(os.path.realpath(r) + os.sep for r in roots if r))


def _package_of(filename: str) -> str | None:
    """The top-level package or module a library file belongs to ("pandas"), or None when the
    file is the person's."""
    real = os.path.realpath(filename)
    for root in _library_roots():
        if real.startswith(root):
            rest = real[len(root) :].split(os.sep)
            if rest and rest[0] in ("site-packages", "dist-packages"):
                rest = rest[1:]
            top = rest[0] if rest else ""
            return top.removesuffix(".py") or "python"
    return None


def _kind(filename: str, cell_file: str | None) -> str:
    """ "cell" (this cell), "earlier cell", "module" (the person's file), "ours" (hidden) or a
    library's package name."""
    if filename == cell_file:
        return "cell"
    package = _package_of(filename)
    if package is not None:
        return "ours" if package in _OURS else package
    if not os.path.isfile(filename):
        return "earlier cell" if filename in linecache.cache else "ours"
    return "module"


def _frames(tb: types.TracebackType | None) -> list[tuple[str, int, str]]:
    out: list[tuple[str, int, str]] = []
    while tb is not None:
        code = tb.tb_frame.f_code
        out.append((code.co_filename, tb.tb_lineno, code.co_name))
        tb = tb.tb_next
    return out


def _cell_file(frames: list[tuple[str, int, str]]) -> str | None:
    """The cell's compiled name: the first frame that is not IPython's (run_code exec's the cell)."""
    for filename, _line, name in frames:
        if name == "<module>" and _kind(filename, None) in ("earlier cell", "module"):
            return filename
    return None


def _context(code: str, line: int) -> list[str]:
    lines = code.splitlines()
    lo, hi = max(1, line - CONTEXT_LINES), min(len(lines), line + CONTEXT_LINES)
    width = len(str(hi))
    return [f"{'->' if n == line else '  '} {n:>{width}} | {lines[n - 1]}" for n in range(lo, hi + 1)]


def summarize_error(exc: BaseException, code: str, namespace: dict[str, Any] | None = None) -> ErrorSummary:
    """The summary of `exc`, raised by running `code` as a cell whose namespace is `namespace`."""
    ename = type(exc).__name__
    evalue = str(exc)
    frames = _frames(exc.__traceback__)
    cell_file = _cell_file(frames)
    kinds = [(_kind(f, cell_file), f, n, fn) for f, n, fn in frames]
    line: int | None = None
    if isinstance(exc, SyntaxError) and not any(k == "cell" for k, *_ in kinds):
        line = exc.lineno
    else:
        line = next((n for k, _f, n, _fn in reversed(kinds) if k == "cell"), None)
    out = [f"{ename}: {evalue}" if evalue else ename]
    if line is not None and 0 < line <= len(code.splitlines()):
        out.append(f"At line {line} of the cell:")
        out.extend(_context(code, line))
    own = [(k, f, n, fn) for k, f, n, fn in kinds if k in ("cell", "earlier cell", "module")]
    if len(own) > 1 or any(k != "cell" for k, *_ in own):
        out.append("In the person's code (innermost last):")
        for k, f, n, fn in own[-MAX_FRAMES:]:
            where = "this cell" if k == "cell" else "an earlier cell" if k == "earlier cell" else _short_path(f)
            text = code.splitlines()[n - 1] if k == "cell" and n <= len(code.splitlines()) else linecache.getline(f, n)
            out.append(f"  {where}, line {n}, in {fn}: {text.strip()}")
    last_own = max((i for i, (k, *_rest) in enumerate(kinds) if k in ("cell", "earlier cell", "module")), default=-1)
    library = [(k, f, n, fn) for k, f, n, fn in kinds[last_own + 1 :] if k not in ("ours",)]
    if library:
        k, f, n, fn = library[-1]
        out.append(f"Raised inside {k} ({_short_path(f)}, line {n}, in {fn}), called from the line above.")
    out.extend(_nearby(exc, code, line, namespace or {}))
    return ErrorSummary(ename=ename, evalue=evalue, line=line, text="\n".join(out))


def _short_path(filename: str) -> str:
    real = os.path.realpath(filename)
    for root in _library_roots():
        if real.startswith(root):
            rest = real[len(root) :]
            return rest.removeprefix("site-packages" + os.sep).removeprefix("dist-packages" + os.sep)
    try:
        rel = os.path.relpath(real)
    except ValueError:
        return real
    return rel if not rel.startswith("..") else real


def _nearby(exc: BaseException, code: str, line: int | None, ns: dict[str, Any]) -> list[str]:
    if isinstance(exc, NameError) and not isinstance(exc, UnboundLocalError):
        name = getattr(exc, "name", None)
        if isinstance(name, str):
            names = [k for k in ns if isinstance(k, str) and not k.startswith("_")]
            close = difflib.get_close_matches(name, names, n=5, cutoff=0.6)
            return (
                [f"Names in the kernel like {name!r}: {', '.join(close)}."]
                if close
                else [f"No name like {name!r} is defined in the kernel: a cell that defines it may not have run."]
            )
    if isinstance(exc, KeyError) and line is not None:
        text = code.splitlines()[line - 1] if line <= len(code.splitlines()) else ""
        return _keys_nearby(exc, text, ns)
    return []


def _keys_nearby(exc: KeyError, text: str, ns: dict[str, Any]) -> list[str]:
    out: list[str] = []
    missing = exc.args[0] if exc.args else None
    pandas = sys.modules.get("pandas")
    frame_type = getattr(pandas, "DataFrame", None) if pandas is not None else None
    for name, value in ns.items():
        if not isinstance(name, str) or name.startswith("_") or name not in text:
            continue
        t = type(value)
        if frame_type is not None and t is frame_type:
            labels = list(value.columns)[:MAX_KEYS]
            what = f"DataFrame {name}'s columns"
        elif t is dict:
            labels = list(dict.keys(value))[:MAX_KEYS]
            what = f"dict {name}'s keys"
        else:
            continue
        shown = [_label(x) for x in labels]
        close = (
            difflib.get_close_matches(missing, [x for x in labels if type(x) is str], n=3, cutoff=0.6)
            if type(missing) is str
            else []
        )
        hint = f" (close to {missing!r}: {', '.join(map(repr, close))})" if close else ""
        out.append(f"{what}: {', '.join(shown)}{hint}.")
    return out


def _label(x: Any) -> str:
    t = type(x)
    return repr(x) if any(t is b for b in (str, int, float, bool)) or x is None else f"<{t.__name__}>"
