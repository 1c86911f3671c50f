"""Where a written file becomes code that runs later, found from the live environment.

A fixed list of names (`.git/hooks`, `.bashrc`) misses what this kernel actually runs: the
directories on its `sys.path`, a `json.py` in the project that an `import json` would find first,
the Jupyter directories a kernelspec or a server extension is loaded from, the hooks directory
git really uses (`core.hooksPath` included). `Surfaces` holds them, computed from the
environment as it is (sys.path, `jupyter_core.paths`, `git rev-parse`), and answers "does
writing this path change what runs?" with one dictionary lookup per path component and a scan
of a few dozen directory prefixes.

The scan is cached: `surfaces()` computes once per working directory and environment and
keeps the result until `refresh()` (the agent calls it at the start of each run, so a hooks
path configured since is seen) or until `sys.path` or a variable it depends on changes.

What counts (see `protected_reason` for the words the person and the model get):
- every `sys.path` entry, and the environment's prefix (its `bin/`, its `share/jupyter`),
  except the working tree itself: an entry that is a working directory, or holds one, or is
  inside one without being a site directory, is the project's own code (its modules are
  checked for shadowing instead);
- in the working directories and the project's own `sys.path` entries, a module or package
  whose name an import would otherwise find elsewhere (the standard library included; not
  `test` and `tests`, which a project's test folder is called and nothing imports);
- `jupyter_path()`, `jupyter_config_path()`, and the IPython directory;
- git's hooks directory and config files as git resolves them for the working directories,
  and the person's global and the system git config.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

__all__ = ["Surfaces", "refresh", "surfaces"]

_SUFFIXES = (".py", ".pyc", ".pyw", ".so", ".pyd")
_NOT_IMPORTED = frozenset({"test", "tests"})
_ENV = (
    "HOME",
    "IPYTHONDIR",
    "JUPYTER_PATH",
    "JUPYTER_CONFIG_DIR",
    "JUPYTER_CONFIG_PATH",
    "JUPYTER_DATA_DIR",
    "JUPYTER_PREFER_ENV_PATH",
    "XDG_CONFIG_HOME",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM",
    "GIT_DIR",
)


@dataclass(frozen=True)
class Surfaces:
    """The executable surfaces of one working tree in this process's environment."""

    dirs: tuple[tuple[str, str], ...] = ()  # (directory, why): everything below it
    files: dict[str, str] = field(default_factory=dict)  # file -> why
    module_dirs: tuple[str, ...] = ()  # where a module's name is checked for shadowing
    modules: frozenset[str] = frozenset()  # top-level names importable from elsewhere

    @functools.cached_property
    def _under_dirs(self) -> re.Pattern[str] | None:
        """One match for "inside one of `dirs`", longest first (the most specific reason)."""
        if not self.dirs:
            return None
        return re.compile("|".join(f"({re.escape(d)})(?:/|$)" for d, _ in self.dirs))

    def reason(self, path: str) -> str | None:
        """Why writing `path` (absolute, normalised) changes what runs later, or None."""
        if why := self.files.get(path):
            return why
        if self._under_dirs is not None and (m := self._under_dirs.match(path)):
            return self.dirs[m.lastindex - 1][1] if m.lastindex else None
        for directory in self.module_dirs:
            if path.startswith(directory + "/"):
                top, below, _ = path[len(directory) + 1 :].partition("/")
                # A package is a folder (any file below it); a module, a file with a module's suffix.
                name = (top if "." not in top else None) if below else _module_name(top)
                if name and name in self.modules:
                    return (
                        f"{top} would shadow the installed module {name!r} (an import in this directory finds "
                        "it first), so its code would run in place of that module's"
                    )
        return None


@functools.lru_cache(maxsize=4096)
def _module_name(entry: str) -> str | None:
    """The top-level module a file provides by its name (`x.py`, `x.cpython-311-...so`), or None.
    Not only identifiers: importlib imports any name (`sysconfig` loads
    `_sysconfigdata__linux_x86_64-linux-gnu`, mypyc's runtime starts with a digit)."""
    for suffix in _SUFFIXES:
        if entry.endswith(suffix):
            name = entry[: -len(suffix)].split(".", 1)[0]
            return name or None
    return None


def _norm(path: str) -> str:
    return os.path.normpath(os.path.abspath(os.path.expanduser(path)))


def _under(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")


def _venv_root(path: str, tree: str) -> str | None:
    """The virtual environment inside the working tree that `path` is in (a `pyvenv.cfg`
    marks its root), or None."""
    cur = path
    while _under(cur, tree) and cur != tree:
        if os.path.isfile(os.path.join(cur, "pyvenv.cfg")):
            return cur
        cur = os.path.dirname(cur)
    return None


def _site_dir(path: str, tree: str) -> bool:
    """A directory packages are installed into: a site directory, or anything in a virtual
    environment inside the working tree."""
    parts = path.split("/")
    return "site-packages" in parts or "dist-packages" in parts or _venv_root(path, tree) is not None


def _importable(entry: str) -> set[str]:
    """The top-level modules a sys.path entry provides: its module files, and its folders as
    packages. In a site or standard library directory every folder counts (namespace packages
    too); elsewhere (a project root put on the path by an editable install) only a regular
    package, with an `__init__.py`, or its `docs/` and `examples/` would count as modules."""
    names: set[str] = set()
    site = _site_dir(entry, "/") or os.path.isfile(os.path.join(entry, "os.py"))
    for e in _listing(entry):
        if (name := _module_name(e)) is not None:
            names.add(name)
        elif (
            "." not in e
            and os.path.isdir(os.path.join(entry, e))
            and (site or os.path.isfile(os.path.join(entry, e, "__init__.py")))
        ):
            names.add(e)
    return names


def _listing(directory: str) -> list[str]:
    try:
        return os.listdir(directory)
    except OSError:
        return []


def _git(cwd: str) -> list[tuple[str, str]]:
    """(path, why) of git's hooks directory and config files for the repository at `cwd`."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--git-path", "hooks", "--git-common-dir", "--git-dir"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=5,
            env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"},
        )
    except (OSError, subprocess.SubprocessError):
        return []
    lines = out.stdout.splitlines()
    if out.returncode != 0 or len(lines) != 3:
        return []
    hooks, common, gitdir = (_norm(os.path.join(cwd, line)) for line in lines)
    return [
        (hooks, "git runs the hooks in this directory (its hooks path, as git resolves it)"),
        (os.path.join(common, "config"), "git's config can name programs git runs (pager, hooks path, aliases)"),
        (os.path.join(gitdir, "config.worktree"), "git's config can name programs git runs"),
    ]


def _git_global() -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(files, directories) of the person's and the system's git configuration."""
    why = "git's config can name programs git runs (pager, hooks path, aliases)"
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    files = [
        os.environ.get("GIT_CONFIG_GLOBAL") or os.path.expanduser("~/.gitconfig"),
        os.environ.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig",
        os.path.join(sys.prefix, "etc", "gitconfig"),
    ]
    return [(_norm(p), why) for p in files], [(_norm(os.path.join(xdg, "git")), why)]


def _jupyter() -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    try:
        from jupyter_core.paths import jupyter_config_path, jupyter_path
    except ImportError:
        jupyter_path = jupyter_config_path = None  # type: ignore[assignment]
    if jupyter_path is not None and jupyter_config_path is not None:
        try:
            out += [(p, "Jupyter loads kernelspecs and extensions from this directory") for p in jupyter_path()]
            out += [(p, "Jupyter runs the configuration in this directory") for p in jupyter_config_path()]
        except Exception:  # a broken Jupyter setup must not stop an edit check
            pass
    ipython = os.environ.get("IPYTHONDIR") or os.path.join(os.path.expanduser("~"), ".ipython")
    out.append((ipython, "IPython runs the profiles' start-up files and configuration in this directory"))
    return [(_norm(p), why) for p, why in out]


def _compute(trees: tuple[str, ...], path_entries: tuple[str, ...]) -> Surfaces:
    dirs: list[tuple[str, str]] = []
    files: dict[str, str] = {}
    module_dirs: list[str] = list(trees)
    elsewhere: list[str] = []
    why_path = "it is on the kernel's sys.path: code there is imported, and .pth files there run at start-up"
    for raw in path_entries:
        entry = _norm(raw or os.getcwd())
        tree = next((t for t in trees if _under(entry, t) or _under(t, entry)), None)
        # Outside the working tree, or a site directory inside it (a project's .venv).
        if tree is None or (_under(entry, tree) and entry != tree and _site_dir(entry, tree)):
            dirs.append((entry, why_path))
            elsewhere.append(entry)
            if tree is not None and (venv := _venv_root(entry, tree)):
                dirs.append((venv, "it is a Python environment on the kernel's path (its programs and packages run)"))
        else:
            module_dirs.append(entry)  # the project's own code: checked for shadowing
    for prefix in dict.fromkeys([sys.prefix, sys.exec_prefix]):
        entry = _norm(prefix)
        if not any(_under(t, entry) for t in trees):
            dirs.append((entry, "it is the Python environment the kernel runs (its programs, packages and data)"))
    for path, why in _jupyter():
        if not any(_under(t, path) for t in trees):  # never the whole project
            dirs.append((path, why))
    for tree in trees:
        for path, why in _git(tree):
            files[path] = why
            if path.endswith("hooks") or os.path.isdir(path):
                dirs.append((path, why))
    global_files, global_dirs = _git_global()
    files.update(global_files)
    dirs += global_dirs
    modules = set(sys.stdlib_module_names) | set(sys.builtin_module_names)
    for entry in elsewhere:
        modules.update(_importable(entry))
    # `__pycache__` is Python's own; a project's test folders are imported by no one by that
    # name (CPython's regression suite is `test`, and packages ship a stray `tests` by mistake).
    modules = {m for m in modules if not m.startswith("__")} - _NOT_IMPORTED
    # Longest first: the most specific reason wins.
    ordered = tuple(sorted(dict(dirs).items(), key=lambda kv: -len(kv[0])))
    return Surfaces(
        dirs=ordered, files=files, module_dirs=tuple(dict.fromkeys(module_dirs)), modules=frozenset(modules)
    )


_generation = [0]
_lock = threading.Lock()


def refresh() -> None:
    """Forget what was computed: the next `surfaces()` looks at the environment again."""
    with _lock:
        _generation[0] += 1
        _cached.cache_clear()


@functools.lru_cache(maxsize=8)
def _cached(trees: tuple[str, ...], path_entries: tuple[str, ...], env: tuple[str | None, ...], gen: int) -> Surfaces:
    return _compute(trees, path_entries)


def surfaces(working_dirs: Sequence[str | os.PathLike[str]] | Iterable[str]) -> Surfaces:
    """The surfaces for these working directories (the first is cwd), from the cache when the
    environment has not changed since they were computed."""
    trees = tuple(dict.fromkeys(_norm(os.fspath(d)) for d in working_dirs))
    env = tuple(os.environ.get(k) for k in _ENV)
    return _cached(trees, tuple(sys.path), env, _generation[0])
