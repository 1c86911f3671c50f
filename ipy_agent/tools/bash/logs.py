"""Reading a background command's log: the lines written since the last read, through a filter,
cut to the result limit with the log's path for the rest; and a runtime as the person reads it."""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .process import OUTPUT_LIMIT, elide_middle

__all__ = ["Read", "duration_text", "read_new_lines"]

_LINE_CAP = 1024 * 1024  # a longer line is read in pieces
_HALF = (OUTPUT_LIMIT - 400) // 2  # characters of a long read kept at each end


@dataclass(frozen=True)
class Read:
    """What one BashOutput call returns: the shell's state, the new (filtered) text, and counts."""

    shell_id: str
    state: str
    text: str
    lines: int  # new lines read (before the filter)
    shown: int  # lines returned (after the filter)
    filtered: bool
    log_path: str


@dataclass
class _Consumed:
    count: int = 0  # lines
    consumed: int = 0  # bytes


def read_new_lines(
    path: Path, start: int, end: int, wanted: re.Pattern[str] | None, *, complete_only: bool
) -> tuple[_Consumed, int, str]:
    """Lines of the log between byte offsets `start` and `end` (a last line without its newline
    only when `complete_only` is false: the command may still be writing it), filtered; the
    text is cut in the middle past the result limit, with the log's path for the rest."""
    seen = _Consumed()
    head: list[str] = []
    head_chars = 0
    tail: deque[str] = deque()
    tail_chars = 0
    shown = shown_chars = 0
    for raw in _lines(path, start, end):
        if complete_only and not raw.endswith(b"\n") and len(raw) < _LINE_CAP:
            break  # the command may still be writing this line
        seen.count += 1
        seen.consumed += len(raw)
        line = raw.decode("utf-8", "replace")
        if wanted is not None and not wanted.search(line):
            continue
        shown += 1
        shown_chars += len(line)
        if head_chars < _HALF:
            head.append(line)
            head_chars += len(line)
            continue
        tail.append(line)
        tail_chars += len(line)
        while tail and tail_chars - len(tail[0]) >= _HALF:
            tail_chars -= len(tail.popleft())
    text = "".join(head) + "".join(tail)
    if shown_chars > len(text) or len(text) > OUTPUT_LIMIT:
        text = elide_middle("".join(head), "".join(tail), shown_chars, shown, path)
    return seen, shown, text


def _lines(path: Path, start: int, end: int) -> Iterator[bytes]:
    with open(path, "rb") as f:
        f.seek(start)
        left = end - start
        while left > 0:
            raw = f.readline(min(left, _LINE_CAP))
            if not raw:
                return
            left -= len(raw)
            yield raw


def duration_text(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"
