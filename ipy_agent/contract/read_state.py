"""What the agent has read, at which version: the basis of edit-before-read.

Edit, Write (on an existing file) and NotebookEdit refuse a target that was not read, or that
changed since it was read. "Changed" is decided by content, not by modification time: a
formatter or a `touch` that leaves the bytes alone is not a change (Claude Code users suffer
false "modified since read" errors from mtime checks). Keys are absolute file paths, or
`cell_key(notebook, cell_id)` for cells of a live notebook. A path key is stored and looked up
by its real path (symlinks resolved), so reading a file through one name and editing it through
a link (or the other way round) is one file, not two.
"""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass, replace
from pathlib import Path

__all__ = ["ReadEntry", "ReadState", "cell_key", "content_hash", "file_digest", "file_key", "file_stamp"]


def content_hash(data: bytes | str) -> str:
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()


def cell_key(notebook: str | Path, cell_id: str) -> str:
    return f"cell:{notebook}#{cell_id}"


@dataclass(frozen=True, kw_only=True)
class ReadEntry:
    key: str
    # Hash of the whole content; None for a ranged read of a file too big to load whole, which
    # is judged by `stamp` instead, and when the file could not be read.
    content_hash: str | None
    # (device, inode, size, mtime, ctime) of a file read in a range without being loaded: any
    # write changes its ctime, which no tool can set back (`touch -r` restores only mtime), so
    # an unchanged stamp means unchanged content, at the cost of one stat instead of hashing
    # hundreds of megabytes on every read.
    stamp: tuple[int, ...] | None = None
    size: int | None = None
    mtime_ns: int | None = None
    offset: int | None = None
    limit: int | None = None
    source: str = "read"  # "read", or the tool that last wrote it
    at: float = 0.0

    @property
    def partial(self) -> bool:
        return self.offset is not None or self.limit is not None


class ReadState:
    """Per-conversation record of reads and writes, keyed by absolute path or cell key."""

    def __init__(self) -> None:
        self._entries: dict[str, ReadEntry] = {}
        # tool_use id -> the keys that call's result shows the model, noted by tools whose
        # result shows more than its input says (NotebookRead: the cells it read). Clearing the
        # result forgets them (context/manager.py).
        self._shown: dict[str, tuple[str, ...]] = {}

    # --- recording ---------------------------------------------------------------------
    @staticmethod
    def _key(key: str | Path) -> str:
        k = str(key)
        return os.path.realpath(k) if os.path.isabs(k) else k

    def record(
        self,
        key: str | Path,
        *,
        content: bytes | str | None = None,
        digest: str | None = None,
        stamp: tuple[int, ...] | None = None,
        size: int | None = None,
        mtime_ns: int | None = None,
        offset: int | None = None,
        limit: int | None = None,
        source: str = "read",
    ) -> ReadEntry:
        k = self._key(key)
        if content is not None:
            digest = content_hash(content)
            if size is None:
                size = len(content.encode("utf-8") if isinstance(content, str) else content)
        elif digest is None and stamp is None and not k.startswith("cell:"):
            # Freshness is judged by content: a rewrite that keeps the size and restores the
            # mtime (`touch -r`, a tool that preserves times) must still count as a change.
            digest = file_digest(k)
        if mtime_ns is None and not k.startswith("cell:"):
            mtime_ns, size = _stat(k, size)
        entry = ReadEntry(
            key=k,
            content_hash=digest,
            stamp=stamp,
            size=size,
            mtime_ns=mtime_ns,
            offset=offset,
            limit=limit,
            source=source,
            at=time.time(),
        )
        self._entries[k] = entry
        return entry

    def record_write(self, key: str | Path, content: bytes | str, *, source: str) -> ReadEntry:
        """After a successful write the agent knows the whole new content."""
        return self.record(key, content=content, source=source)

    # --- queries -----------------------------------------------------------------------
    def get(self, key: str | Path) -> ReadEntry | None:
        return self._entries.get(self._key(key))

    def __contains__(self, key: object) -> bool:
        return self._key(str(key)) in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def check_fresh(self, key: str | Path, current: bytes | str | None, *, what: str = "File") -> str | None:
        """None if `key` was read and its content is unchanged; otherwise the message to return.

        `current` is the content now (None when it no longer exists). The messages say what to
        do next, because the model reads them.
        """
        entry = self.get(key)
        if entry is None:
            return f"{what} has not been read yet. Read it first, then retry the edit, so the change is made against its current content."
        if current is None:
            return f"{what} no longer exists; it was deleted or moved after you read it. Check the path, and Read it again if it moved."
        # Only content decides: its hash, or for a file read in a range, a stamp that changes
        # with every write. An entry with neither (the file could not be read) is never fresh.
        if entry.content_hash is not None and content_hash(current) == entry.content_hash:
            return None
        if entry.content_hash is None and entry.stamp is not None and file_stamp(entry.key) == entry.stamp:
            return None
        return f"{what} has changed since you read it (edited by the person, a formatter or another tool). Read it again, then redo the edit against the new content."

    def keys(self) -> list[str]:
        return list(self._entries)

    def forget(self, key: str | Path) -> bool:
        """Drop what was recorded for `key`: its content is no longer in the model's view (it was
        cleared or compacted away), so an edit must read it again first. True if it was known."""
        return self._entries.pop(self._key(key), None) is not None

    def note_shown(self, tool_use_id: str, keys: list[str] | tuple[str, ...]) -> None:
        """The result of call `tool_use_id` shows the model what it read under `keys`."""
        self._shown[tool_use_id] = tuple(self._key(k) for k in keys)

    def shown_by(self, tool_use_id: str) -> tuple[str, ...]:
        return self._shown.get(tool_use_id, ())

    def copy(self) -> ReadState:
        """An independent copy (entries are immutable, so sharing them is safe)."""
        other = ReadState()
        other._entries = dict(self._entries)
        other._shown = dict(self._shown)
        return other

    def touch(self, key: str | Path, **changes: object) -> None:
        entry = self.get(key)
        if entry is not None:
            self._entries[entry.key] = replace(entry, **changes)  # type: ignore[arg-type]


def file_digest(path: str | Path, chunk: int = 1 << 20) -> str | None:
    """sha256 of a file read in chunks (memory stays at `chunk`), or None when it cannot be read."""
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            while block := f.read(chunk):
                h.update(block)
    except OSError:
        return None
    return h.hexdigest()


def file_stamp(path: str | Path | os.stat_result) -> tuple[int, ...] | None:
    """(device, inode, size, mtime, ctime) of a file, from a path or a stat result; None when it is gone."""
    try:
        st = path if isinstance(path, os.stat_result) else os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _stat(path: str, size: int | None) -> tuple[int | None, int | None]:
    try:
        st = os.stat(path)
    except OSError:
        return None, size
    return st.st_mtime_ns, size if size is not None else st.st_size


def file_key(cwd: str | Path, file_path: object) -> str | None:
    """The read-state key of a file path as the model wrote it (relative to `cwd`, `~` expanded);
    None when it is not a path."""
    if not isinstance(file_path, str) or not file_path:
        return None
    return os.path.realpath(os.path.join(cwd, os.path.expanduser(file_path)))
