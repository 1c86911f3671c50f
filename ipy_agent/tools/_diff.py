"""Diffs and numbered snippets for the editing tools (Edit, Write, NotebookEdit).

Two readers see a change. The person approving it wants a unified diff with +/- counts, shown
before anything is written. The model that made it wants a short confirmation: a few numbered
lines around the change, in the same `N<TAB>text` form Read uses, so it can check the result and
aim its next edit without reading the file again. Both come from here so the three tools agree.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

__all__ = ["Diff", "make_diff", "numbered_snippet", "count_lines"]


@dataclass(frozen=True, kw_only=True)
class Diff:
    text: str  # unified diff, "" when nothing changed
    added: int
    removed: int


def make_diff(old: str, new: str, *, label: str, old_label: str | None = None, context: int = 3) -> Diff:
    """A unified diff of two LF-normalised texts, with the number of added and removed lines.

    `old_label` defaults to `label`; pass "/dev/null" for a file that does not exist yet, the way
    git shows a created file.
    """
    old_lines = old.splitlines(keepends=True)
    new_lines = new.splitlines(keepends=True)
    # difflib's matcher is slow on big inputs; an edit usually touches a few lines of a long
    # file, so there diff only the differing middle (plus context) and shift the hunk numbers
    # back. Small inputs are diffed whole: trimming can make difflib pick a clumsier alignment.
    if len(old_lines) + len(new_lines) > _TRIM_ABOVE:
        start, end_old, end_new = _trim(old_lines, new_lines, context)
    else:
        start, end_old, end_new = 0, len(old_lines), len(new_lines)
    added = removed = 0
    out: list[str] = []
    for line in difflib.unified_diff(
        old_lines[start:end_old], new_lines[start:end_new],
        fromfile=old_label or label, tofile=label, n=context,
    ):
        if start and line.startswith("@@"):
            line = _HUNK.sub(lambda m: f"{m[1]}{int(m[2]) + start}", line)
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
        # A last line without a newline would run into the next diff line; mark it like git.
        if not line.endswith("\n"):
            line += "\n\\ No newline at end of file\n"
        out.append(line)
    return Diff(text="".join(out), added=added, removed=removed)


_TRIM_ABOVE = 2_000
_HUNK = re.compile(r"([-+])(\d+)")


def _trim(a: list[str], b: list[str], context: int) -> tuple[int, int, int]:
    """Slice bounds that drop the common head and tail of `a` and `b`, keeping `context` lines."""
    limit = min(len(a), len(b))
    head = 0
    while head < limit and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < limit - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    start = max(0, head - context)
    keep_tail = max(0, tail - context)
    return start, len(a) - keep_tail, len(b) - keep_tail


def count_lines(text: str) -> int:
    """Lines as a person counts them: "a\\nb" and "a\\nb\\n" are both two lines, "" is none."""
    return len(text.splitlines())


def numbered_snippet(text: str, first: int, last: int, *, context: int = 3, max_lines: int = 30) -> str:
    """Lines `first - context` .. `last + context` of `text`, numbered like Read's output.

    Long changes are cut to `max_lines` with a marker saying how many lines were left out, so a
    large replacement never floods the model's context with text it just wrote itself.
    """
    lines = text.splitlines()
    if not lines:
        return "(the file is now empty)"
    lo = max(1, first - context)
    hi = min(len(lines), max(last, first) + context)
    numbers = list(range(lo, hi + 1))
    omitted = 0
    if len(numbers) > max_lines:
        head = max_lines // 2
        tail = max_lines - head
        omitted = len(numbers) - max_lines
        numbers = numbers[:head] + [-1] + numbers[-tail:]
    out = []
    for n in numbers:
        if n == -1:
            out.append(f"… ({omitted} lines not shown)")
        else:
            out.append(f"{n}\t{lines[n - 1]}")
    return "\n".join(out)
