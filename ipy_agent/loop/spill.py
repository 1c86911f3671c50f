"""Where spilled results live, and how they go away: per conversation, on reset, at exit, by age.

A result too large for the context is written whole to a file the model may Read (budget.py,
and Bash for long output). Those files belong to one conversation: its directory is
`<tmp>/ipy-agent-results-<uid>/<pid>-<conversation id>`, in a folder of the user's own (0700:
results may hold anything; another user's kernel on the same machine, as in a JupyterHub, has
its own; a folder of that name someone else made first is not used, a fresh one is). It is removed when the conversation is reset,
when the process (the kernel) exits normally, and, for sessions that ended without either (a
killed kernel), by the next session that starts: a directory whose process is gone and which
has not changed for `STALE_AFTER` seconds is removed. Directories a person chose
(`Agent(spill_dir=...)`) are never removed: they may hold anything.
"""

from __future__ import annotations

import atexit
import os
import shutil
import stat
import tempfile
import threading
import time
from pathlib import Path

__all__ = ["ROOT_NAME", "STALE_AFTER", "choose_dir", "conversation_dir", "own", "release", "spill_root", "sweep_stale"]

_USER = str(os.getuid()) if hasattr(os, "getuid") else os.environ.get("USERNAME", "user")
ROOT_NAME = f"ipy-agent-results-{_USER}"
STALE_AFTER = 3600.0  # seconds without change before a dead session's directory is removed

_lock = threading.Lock()
_owned: set[str] = set()
_registered = False
_swept = False


def spill_root() -> Path:
    return Path(tempfile.gettempdir()) / ROOT_NAME


def conversation_dir(conversation_id: str) -> Path:
    """This conversation's directory (not created here: the first spill creates it), in the
    user's own spill folder (created here, 0700)."""
    return _private_root() / f"{os.getpid()}-{conversation_id}"


def _private_root() -> Path:
    root = spill_root()
    try:
        root.mkdir(mode=0o700, exist_ok=True)
        if _yours(root):
            return root
    except OSError:
        pass
    return Path(tempfile.mkdtemp(prefix=f"{ROOT_NAME}-"))


def _yours(folder: Path) -> bool:
    """A real directory (not a link) of this user's, that no one else may write."""
    st = os.lstat(folder)
    if not stat.S_ISDIR(st.st_mode):
        return False
    return not hasattr(os, "getuid") or (st.st_uid == os.getuid() and not st.st_mode & 0o022)


def choose_dir(chosen: str | Path | None, conversation_id: str) -> tuple[Path, bool]:
    """The conversation's spill directory and whether it is ours (removed with the conversation):
    the one a person chose, else a new one that is ours."""
    if chosen:
        return Path(chosen), False
    path = conversation_dir(conversation_id)
    own(path)
    return path, True


def own(path: Path) -> None:
    """Remove `path` when this process exits normally; on the first call, sweep stale ones."""
    global _registered, _swept
    with _lock:
        _owned.add(str(path))
        if not _registered:
            atexit.register(_remove_owned)
            _registered = True
        sweep = not _swept
        _swept = True
    if sweep:
        sweep_stale(path.parent)


def release(path: Path) -> None:
    """Remove `path` now (a reset); it is created again by the next spill."""
    shutil.rmtree(path, ignore_errors=True)


def _remove_owned() -> None:
    with _lock:
        paths = list(_owned)
        _owned.clear()
    for p in paths:
        shutil.rmtree(p, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True  # someone else's process: leave its directory alone
    return True


def sweep_stale(root: Path, *, stale_after: float = STALE_AFTER) -> list[Path]:
    """Remove the directories under `root` left by sessions that are gone; return them."""
    try:
        entries = list(os.scandir(root))
    except OSError:
        return []
    removed: list[Path] = []
    cutoff = time.time() - stale_after
    for entry in entries:
        pid_text, dash, _ = entry.name.partition("-")
        if not dash or not pid_text.isdigit() or int(pid_text) == os.getpid():
            continue  # not ours to judge, or this process's own
        try:
            if not entry.is_dir(follow_symlinks=False) or entry.stat(follow_symlinks=False).st_mtime > cutoff:
                continue
        except OSError:
            continue
        if _alive(int(pid_text)):
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        removed.append(Path(entry.path))
    return removed
