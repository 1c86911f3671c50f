"""Protected surfaces inside the writable sandbox: read-only binds and placeholders.

A command that a rule, a hook or a mode let run may write the working directories, and it can
build any name at run time (`'.ipy' + '_agent'`), so the rule layer's look at the command's words
is not enough there. Every protected surface (base/surfaces.py: `Surfaces.under`, the one list)
that lies under a writable directory is bound read-only on top of the writable bind:

- one that exists is bound onto itself read-only;
- one of the important ones that does not exist yet (`.ipy_agent/`, `.claude/`, `.mcp.json` in
  the working directories and up to the project's root, the person's own ipy_agent folders, the
  IPython and Jupyter folders, the user site, git's hooks folder, `~/.gitconfig`) gets a
  placeholder for the command's time: an empty folder (an empty file for `~/.gitconfig`) made on
  the host, bound read-only, and removed when the command ends unless something was put in it
  meanwhile (a folder is only ever removed empty; a file only while it is empty and as made);
- a symbolic link inside the config folders (the person's own, `.ipy_agent/`, `.claude/`,
  IPython's, Jupyter's, git's hooks) that leads into a writable directory: its target too (an
  AGENTS.md kept in a dotfiles folder, a hook linked to a script in the project);
- each folder between the writable directory and a surface is bound onto itself (writable), so
  it is a mount point a command cannot rename away (`mv ~/.config x && mkdir -p ~/.config/...`
  would otherwise make a fresh, writable copy of the path).

Placeholders are counted per path in this process, so two commands running at once share one
and the last to end removes it. What this does not cover: a protected name the list does not hold
(a module that would shadow an import: any new name may be one, so the import guard,
base/imports.py, holds for those), a surface in a folder below a working directory (only the
working directories and the folders up to the project's root are listed), a surface that is a
symbolic link in a writable folder (its target is read-only, the link itself can be replaced).
A kernel killed while a command runs (a restart during a background command) leaves its
placeholders; each process keeps a journal of what it holds, and the next one to sandbox a
command removes what a process that no longer runs left, by the same rules.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
import threading
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field

from ipy_agent.base.paths import personal_dirs
from ipy_agent.base.surface_names import PLACEHOLDER_NAMES
from ipy_agent.base.surfaces import Surface, surfaces
from ipy_agent.contract.tool_context import ToolContext

__all__ = ["Held", "surface_mounts"]


@dataclass(frozen=True)
class _Made:
    path: str
    dev: int
    ino: int
    is_dir: bool
    mtime_ns: int


_lock = threading.Lock()
_held: dict[str, tuple[int, _Made]] = {}  # placeholder path -> (commands holding it, what was made)


@dataclass
class Held:
    """The placeholders one command holds; `release` (once it ended) removes what no other
    command holds and nothing was put in."""

    paths: list[str] = field(default_factory=list)  # outermost first
    released: bool = False

    def release(self) -> None:
        with _lock:
            if self.released:
                return
            self.released = True
            done: list[_Made] = []
            for path in self.paths:
                count, made = _held[path]
                if count > 1:
                    _held[path] = (count - 1, made)
                else:
                    del _held[path]
                    done.append(made)
            # Innermost first: a parent is empty only once its children are gone.
            for made in sorted(done, key=lambda m: -m.path.count("/")):
                _remove(made)
            _journal()


def _journal_dir() -> str:
    return os.path.join(tempfile.gettempdir(), f"ipy_agent-placeholders-{os.getuid()}")


def _own_folder(folder: str) -> bool:
    try:
        st = os.lstat(folder)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077


def _journal() -> None:
    """Write down what this process holds (under the lock), for `_sweep` in a later process."""
    folder = _journal_dir()
    path = os.path.join(folder, f"{os.getpid()}.json")
    with contextlib.suppress(OSError):
        if not _held:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
            return
        os.makedirs(folder, mode=0o700, exist_ok=True)
        if not _own_folder(folder):
            return
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            json.dump([asdict(made) for _count, made in _held.values()], f)
        os.replace(path + ".tmp", path)


_swept: list[bool] = [False]


def _sweep() -> None:
    """Remove the placeholders of processes that no longer run (once per process, under the lock)."""
    if _swept[0]:
        return
    _swept[0] = True
    folder = _journal_dir()
    if not _own_folder(folder):
        return
    for name in os.listdir(folder):
        pid = name.removesuffix(".json")
        if not name.endswith(".json") or not pid.isdigit() or int(pid) == os.getpid() or _alive(int(pid)):
            continue
        journal = os.path.join(folder, name)
        try:
            with open(journal, encoding="utf-8") as f:
                left = [_Made(**entry) for entry in json.load(f)]
        except (OSError, ValueError, TypeError):
            left = []
        for made in sorted(left, key=lambda m: -m.path.count("/")):
            _remove(made)
        with contextlib.suppress(OSError):
            os.unlink(journal)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _remove(made: _Made) -> None:
    try:
        st = os.lstat(made.path)
        if (st.st_dev, st.st_ino) != (made.dev, made.ino):
            return  # replaced meanwhile: someone else's
        if made.is_dir:
            os.rmdir(made.path)  # only if empty: what was put in it stays
        elif st.st_size == 0 and st.st_mtime_ns == made.mtime_ns:
            os.unlink(made.path)
    except OSError:
        pass


def _hold(path: str, shape: str, held: Held) -> bool:
    """Make `path` (and missing folders above it) as a placeholder, or take a share of one this
    process made; False when it cannot be made (then no command of ours can make it either)."""
    missing: list[str] = []
    p = path
    while not os.path.lexists(p) or p in _held:
        missing.append(p)
        parent = os.path.dirname(p)
        if parent == p:
            break
        p = parent
    for p in reversed(missing):
        if p in _held:
            count, made = _held[p]
            _held[p] = (count + 1, made)
            held.paths.append(p)
            continue
        is_dir = p != path or shape == "dir"
        try:
            if is_dir:
                os.mkdir(p)
            else:
                os.close(os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644))
            st = os.lstat(p)
        except OSError:
            return False
        _held[p] = (1, _Made(p, st.st_dev, st.st_ino, is_dir, st.st_mtime_ns))
        held.paths.append(p)
    return True


_WALKED = frozenset({*PLACEHOLDER_NAMES, ".ipython", ".jupyter", "hooks"})
MAX_LINKS_WALK = 5_000  # entries looked at in the agent's and the person's config folders, per command


def _linked_targets(binds: list[str], tops: Sequence[str]) -> list[str]:
    """Where the symbolic links inside the bound config folders (the person's own, `.ipy_agent`,
    `.claude`, IPython's, Jupyter's, git's hooks) lead, when that is under a writable directory:
    a person's `AGENTS.md` kept in a dotfiles folder and linked in, or a hook linked to a script
    in the project, is written through its target. Bounded: past MAX_LINKS_WALK entries the rest
    is not looked at."""
    personal = {os.path.realpath(p) for p in personal_dirs()}
    walked = [b for b in binds if os.path.isdir(b) and (b in personal or os.path.basename(b) in _WALKED)]
    budget = MAX_LINKS_WALK
    out: list[str] = []
    for top_dir in walked:
        for folder, dirs, files in os.walk(top_dir):
            for name in [*dirs, *files]:
                budget -= 1
                link = os.path.join(folder, name)
                if not os.path.islink(link):
                    continue
                target = os.path.realpath(link)
                inside = any(target.startswith(t.rstrip("/") + "/") for t in tops)
                if inside and os.path.exists(target) and not any(_covers(b, target) for b in [*binds, *out]):
                    out.append(target)
            if budget <= 0:
                return out
    return out


def _covers(bound: str, path: str) -> bool:
    return path == bound or path.startswith(bound.rstrip("/") + "/")


def _between(path: str, tops: Sequence[str]) -> list[str]:
    """The folders strictly between the writable directory `path` is in and `path`."""
    top = max((t for t in tops if path.startswith(t.rstrip("/") + "/")), key=len, default=None)
    if top is None:
        return []
    out: list[str] = []
    p = os.path.dirname(path)
    while p != top and p.startswith(top.rstrip("/") + "/"):
        out.append(p)
        p = os.path.dirname(p)
    return out


def surface_mounts(
    ctx: ToolContext, writable: Sequence[str], extra: Iterable[Surface] = (), *, held: Held | None
) -> list[str]:
    """bubblewrap arguments (after the writable binds of `writable`, real paths) that keep every
    protected surface under them read-only, making placeholders held in `held` (none without
    one: nothing would remove them)."""
    tops = list(dict.fromkeys(writable))
    found = surfaces(ctx.all_dirs()).under(tops)
    paths = {s.path for s in found}
    # The files the run itself makes executable (the scripts MCP servers run), where they are.
    scripts = [Surface(os.path.realpath(p), why, "file") for p, why in ctx.protected_files if os.path.isabs(p)]
    for s in [*extra, *(s for s in scripts if any(s.path.startswith(t.rstrip("/") + "/") for t in tops))]:
        if s.path not in paths and not any(o.kind == "dir" and (s.path + "/").startswith(o.path + "/") for o in found):
            found.append(s)
    binds: list[str] = []
    keep: list[str] = []
    with _lock:
        _sweep()
        for s in found:
            # One that is there (not a placeholder of ours), or one held as a placeholder.
            there = os.path.lexists(s.path) and (s.path not in _held or held is None)
            if there or (s.placeholder is not None and held is not None and _hold(s.path, s.placeholder, held)):
                binds.append(s.path)
        if held is not None and held.paths:
            _journal()
    binds += _linked_targets(binds, tops)
    for path in binds:
        keep += _between(path, tops)
    args: list[str] = []
    for d in sorted(dict.fromkeys(keep), key=lambda p: p.count("/")):  # outermost first, before any read-only bind
        args += ["--bind", d, d]
    for path in binds:
        args += ["--ro-bind", path, path]
    return args
