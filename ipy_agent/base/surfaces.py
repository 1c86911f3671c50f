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
  and the person's global and the system git config;
- the person's own ipy_agent directories (`base/paths.py: personal_dirs`: settings and MCP
  servers, AGENTS.md and skills, which every later conversation reads as the person's words);
- in every working directory and each folder above it up to the project's root, the names
  base/surface_names.py lists (`.ipy_agent/`, `.claude/`, `.mcp.json`, shell start-up files...).

This is the one list. The rule layer asks before a tool writes any of it (tools/shared/
protected.py); the writable sandbox binds what lies under its writable directories read-only,
and stands an empty read-only placeholder in for the important ones that do not exist yet
(`Surfaces.under`, tools/bash/surface_mounts.py); the file writer checks the final path.
A module that would shadow an import cannot be listed in advance (any new name may be one):
the import guard (base/imports.py) holds for those.
"""

from __future__ import annotations

import functools
import os
import re
import site
import subprocess
import sys
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from .paths import folders_down_to, personal_dir, settings_dir
from .surface_names import PLACEHOLDER_NAMES, PROTECTED_DIRS, PROTECTED_FILES

__all__ = ["Surface", "Surfaces", "refresh", "surfaces"]

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
    "IPY_AGENT_CONFIG_DIR",
    "PYTHONUSERBASE",
)
_WHY_NAMED = "it decides what runs or what is allowed"


@dataclass(frozen=True)
class Surface:
    """One protected path as it is on disk (it need not exist): a folder (everything below it
    too) or a file, and what stands in for it while it is missing, when a command must not be
    able to make it ("dir": an empty read-only folder, "file": an empty read-only file)."""

    path: str
    why: str
    kind: Literal["dir", "file"]
    placeholder: Literal["dir", "file"] | None = None


@dataclass(frozen=True)
class Surfaces:
    """The executable surfaces of one working tree in this process's environment."""

    dirs: tuple[tuple[str, str], ...] = ()  # (directory, why): everything below it
    files: dict[str, str] = field(default_factory=dict)  # file -> why
    module_dirs: tuple[str, ...] = ()  # where a module's name is checked for shadowing
    modules: frozenset[str] = frozenset()  # top-level names importable from elsewhere
    named: tuple[Surface, ...] = ()  # by name, in the working directories and the folders above them

    def under(self, writable: Iterable[str]) -> list[Surface]:
        """The surfaces at or below one of `writable` (real, absolute paths), at their real
        paths, outermost first, none inside another folder of the answer: what a sandbox that
        lets a command write `writable` must keep read-only."""
        tops = [w.rstrip("/") or "/" for w in writable]
        if not tops:
            return []
        candidates = [*(Surface(d, why, "dir", "dir") for d, why in self.dirs), *self._file_surfaces, *self.named]
        found: dict[str, Surface] = {}
        folders: dict[str, str] = {}  # a folder's real path, found once (fifty names share one)
        for s in candidates:
            folder, name = os.path.split(s.path)
            if (real_folder := folders.get(folder)) is None:
                real_folder = folders[folder] = os.path.realpath(folder)
            real = os.path.join(real_folder, name)
            real = os.path.realpath(real) if os.path.islink(real) else real
            # Below a writable directory; or a folder that holds one (cwd inside the person's folder).
            if real not in found and any(_under(real, t) or (s.kind == "dir" and _under(t, real)) for t in tops):
                found[real] = Surface(real, s.why, s.kind, s.placeholder)
        out: list[Surface] = []
        for path in sorted(found):
            if not any(o.kind == "dir" and _under(path, o.path) for o in out):
                out.append(found[path])
        return out

    @functools.cached_property
    def _file_surfaces(self) -> tuple[Surface, ...]:
        # The person's git config may not exist yet: an empty read-only file keeps a pager out.
        gitconfig = _norm(os.environ.get("GIT_CONFIG_GLOBAL") or os.path.expanduser("~/.gitconfig"))
        return tuple(Surface(f, why, "file", "file" if f == gitconfig else None) for f, why in self.files.items())

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
    if site.ENABLE_USER_SITE and (user_site := site.getusersitepackages()):
        out.append((user_site, "Python puts this folder (the user site) on every interpreter's path once it exists"))
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
    dirs += _personal()
    modules = set(sys.stdlib_module_names) | set(sys.builtin_module_names)
    for entry in elsewhere:
        modules.update(_importable(entry))
    # `__pycache__` is Python's own; a project's test folders are imported by no one by that
    # name (CPython's regression suite is `test`, and packages ship a stray `tests` by mistake).
    modules = {m for m in modules if not m.startswith("__")} - _NOT_IMPORTED
    # Longest first: the most specific reason wins.
    ordered = tuple(sorted(dict(dirs).items(), key=lambda kv: -len(kv[0])))
    return Surfaces(
        dirs=ordered,
        files=files,
        module_dirs=tuple(dict.fromkeys(module_dirs)),
        modules=frozenset(modules),
        named=_named(trees),
    )


def _personal() -> list[tuple[str, str]]:
    """The person's own ipy_agent directories (`base/paths.py`), where the code reads them."""
    found = {
        _norm(str(settings_dir())): "it is your own ipy_agent settings folder: its settings.json holds your permission "
        "rules and MCP servers",
        _norm(str(personal_dir())): "it is your own ipy_agent folder: its AGENTS.md and skills reach every later "
        "conversation as your own words",
    }
    return list(found.items())


def _named(trees: tuple[str, ...]) -> tuple[Surface, ...]:
    """The protected names in each working directory and the folders above it up to the
    project's root (where settings, skills and MCP servers are read from)."""
    folders = dict.fromkeys(str(f) for t in trees for f in [*folders_down_to(Path(t)), Path(t)])
    out: list[Surface] = []
    for folder in folders:
        for name in PLACEHOLDER_NAMES:
            kind: Literal["dir", "file"] = "dir" if name in PROTECTED_DIRS else "file"
            out.append(Surface(os.path.join(folder, name), _WHY_NAMED, kind, "dir"))
        out += [Surface(os.path.join(folder, n), _WHY_NAMED, "dir") for n in sorted(PROTECTED_DIRS - {".git"})]
        out += [Surface(os.path.join(folder, n), _WHY_NAMED, "file") for n in sorted(PROTECTED_FILES)]
    first: dict[str, Surface] = {}
    for s in out:
        first.setdefault(s.path, s)  # a placeholder name keeps its placeholder
    return tuple(first.values())


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
