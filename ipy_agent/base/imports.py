"""What the agent imports comes from where it is installed, never from the project.

A kernel puts its working directory first on `sys.path`, and the agent imports some modules
only when a tool first needs them (nbformat for NotebookEdit, the MCP SDK, difflib, ...). A
`nbformat.py` or `difflib.py` in the project, written by anyone, would then be imported instead,
and its code would run in the kernel, outside every sandbox. `install()` puts a finder first on
`sys.meta_path` that answers for top-level imports made on the agent's behalf: by its own
code, by modules it loaded this way, and by installed libraries it called (`shutil` importing
`zipfile` for it). Such a name is looked up on `sys.path` without the working directory's
entries, and only when it is found nowhere else does the normal search (the project's module,
if that is all there is) go on. Every other import, the person's cells included, is left
exactly as Python does it.

Working directory entries are `''`, `'.'` and any entry at or below the process's current
directory that is not a site directory (a project's `.venv` holds installed packages).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import sys
import threading
from collections.abc import Sequence
from types import ModuleType
from typing import Any

__all__ = ["install", "installed_only", "uninstall"]

_IMPORT_MACHINERY = ("importlib", "_frozen_importlib", "_frozen_importlib_external", __name__)
_lock = threading.Lock()


def _local_entries() -> set[str]:
    cwd = os.path.realpath(os.getcwd())
    out: set[str] = set()
    for entry in sys.path:
        if not isinstance(entry, str):
            continue
        if entry in ("", "."):
            out.add(entry)
            continue
        real = os.path.realpath(entry)
        parts = real.split("/")
        inside = real == cwd or real.startswith(cwd.rstrip("/") + "/")
        if inside and "site-packages" not in parts and "dist-packages" not in parts:
            out.add(entry)
    return out


class InstalledFirst(importlib.abc.MetaPathFinder):
    """The finder `install()` puts first on `sys.meta_path`."""

    def __init__(self) -> None:
        # Top-level names whose code imports through this finder: ours, and what we loaded.
        self.guarded: set[str] = {"ipy_agent"}

    def _importer_guarded(self) -> bool:
        """Whether this import is made on the agent's behalf: walking out from the import
        statement through installed code (a library the agent called), the first code that is
        not installed library code is ours or a module we loaded. The person's code (a cell,
        `__main__`, a module of the project) ends the walk: their imports stay as Python does them."""
        cwd = os.path.realpath(os.getcwd()).rstrip("/") + "/"
        frame = sys._getframe(2)
        for _ in range(500):
            if frame is None:
                return False
            name = frame.f_globals.get("__name__", "")
            name = name if isinstance(name, str) else ""
            if not name.startswith(_IMPORT_MACHINERY):
                if name.split(".", 1)[0] in self.guarded:
                    return True
                if name == "__main__" or os.path.realpath(frame.f_code.co_filename).startswith(cwd):
                    return False  # the person's code, or the project's
            frame = frame.f_back  # type: ignore[assignment]
        return False

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if path is not None or "." in fullname:
            return None  # a submodule is found through its package's own __path__
        if not self._importer_guarded():
            return None
        local = _local_entries()
        if not local:
            return None
        spec = installed_only(fullname, [e for e in sys.path if e not in local])
        if spec is not None:
            self.guarded.add(fullname)
        return spec


def installed_only(name: str, entries: list[Any] | None = None) -> importlib.machinery.ModuleSpec | None:
    """The spec of top-level module `name` from `entries` (default: sys.path without the
    working directory's entries), or None when it is not there."""
    if entries is None:
        local = _local_entries()
        entries = [e for e in sys.path if e not in local]
    return importlib.machinery.PathFinder.find_spec(name, entries)


_finder: InstalledFirst | None = None


def install() -> None:
    """Put the finder first on `sys.meta_path` (once; again first if something went before it)."""
    global _finder
    with _lock:
        if _finder is None:
            _finder = InstalledFirst()
        if sys.meta_path and sys.meta_path[0] is _finder:
            return
        if _finder in sys.meta_path:
            sys.meta_path.remove(_finder)
        sys.meta_path.insert(0, _finder)


def uninstall() -> None:
    with _lock:
        if _finder is not None and _finder in sys.meta_path:
            sys.meta_path.remove(_finder)
