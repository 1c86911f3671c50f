"""One JSON object in a file, read whole and replaced whole: where the person's approvals live.

The stores that remember what the person approved (`mcp/trust.py`: project MCP servers;
`config/settings_approvals.py`: a project settings file's allow rules; the trusted command hooks
and plugins, each a `FingerprintStore`) each keep one JSON object
in the person's settings folder. A file that is missing, unreadable or not an object reads as
empty (no approvals). An update reads, changes and writes under one process-wide lock, through a
temporary file in the same folder renamed over the old one, so a crash mid-write leaves the old
approvals intact; an OSError (a read-only home) is the caller's to report.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

from ipy_agent.history.blocks import JsonObject

__all__ = ["FingerprintStore", "read_object", "section", "update_object"]

_LOCK = threading.Lock()


def read_object(path: Path) -> JsonObject:
    """The JSON object in `path`, or {} when there is none to read."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def update_object(path: Path, change: Callable[[JsonObject], None]) -> None:
    """Apply `change` to the object in `path` (in place) and write it back atomically."""
    with _LOCK:
        data = read_object(path)
        change(data)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(data, f, indent=1, sort_keys=True)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def section(data: JsonObject, key: str) -> JsonObject:
    """`data[key]` as a dict, made (or replaced, when it is something else) if need be."""
    value = data.get(key)
    if not isinstance(value, dict):
        value = data[key] = {}
    return value


class FingerprintStore:
    """What the person trusted, each thing named by a key (a file's or folder's path) with the
    fingerprint of what it was then: trusted while the fingerprint still matches, so a changed
    file asks again. One section of the JSON object in `path`."""

    def __init__(self, path: Path, key: str) -> None:
        self.path = path
        self.key = key

    def holds(self, name: str, fingerprint: str) -> bool:
        entries = read_object(self.path).get(self.key)
        return isinstance(entries, dict) and entries.get(name) == fingerprint

    def keep(self, name: str, fingerprint: str) -> None:
        """Remember `name` as trusted with `fingerprint`; an OSError is the caller's to report."""
        update_object(self.path, lambda data: section(data, self.key).__setitem__(name, fingerprint))
