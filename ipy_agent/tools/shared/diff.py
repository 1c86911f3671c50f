"""Diffs and numbered snippets for the editing tools (Edit, Write, NotebookEdit).

Two readers see a change. The person approving it wants a unified diff with +/- counts, shown
before anything is written. The model that made it wants a short confirmation: a few numbered
lines around the change, in the same `N<TAB>text` form Read uses, so it can check the result and
aim its next edit without reading the file again. Both come from here so the three tools agree.

Lines are split on "\n" only, as Read splits them: `str.splitlines` also breaks at form feeds,
U+2028, NEL and lone carriage returns, which would make the numbers here disagree with Read's.
A change in a big file is diffed only around where it happened (`diff_spans`): splitting a
200 MB file into line lists to find a one-line change costs gigabytes.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

__all__ = ["Diff", "Span", "count_lines", "diff_spans", "make_diff", "numbered_snippet", "split_lines"]

# One replaced stretch: old[old_start:old_end] became new[new_start:new_end].
Span = tuple[int, int, int, int]


@dataclass(frozen=True, kw_only=True)
class Diff:
    text: str  # unified diff, "" when nothing changed
    added: int
    removed: int


def split_lines(text: str, *, keepends: bool = False) -> list[str]:
    """`text` split at "\n" only (no empty last item for a final newline), like Read numbers lines."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
        if keepends:
            return [line + "\n" for line in lines]
    if keepends:
        return [line + "\n" for line in lines[:-1]] + lines[-1:]
    return lines


def make_diff(
    old: str,
    new: str,
    *,
    label: str,
    old_label: str | None = None,
    context: int = 3,
    first_line: int = 1,
    new_first_line: int | None = None,
) -> Diff:
    """A unified diff of two LF-normalised texts, with the number of added and removed lines.

    `old_label` defaults to `label`; pass "/dev/null" for a file that does not exist yet, the way
    git shows a created file. `first_line` (and `new_first_line`, the same by default) is the
    line number of the first line of `old` (and `new`) when they are regions of longer texts.
    """
    old_lines = split_lines(old, keepends=True)
    new_lines = split_lines(new, keepends=True)
    # difflib's matcher is slow on big inputs; an edit usually touches a few lines of a long
    # file, so there diff only the differing middle (plus context) and shift the hunk numbers
    # back. Small inputs are diffed whole: trimming can make difflib pick a clumsier alignment.
    if len(old_lines) + len(new_lines) > _TRIM_ABOVE:
        start, end_old, end_new = _trim(old_lines, new_lines, context)
    else:
        start, end_old, end_new = 0, len(old_lines), len(new_lines)
    added = removed = 0
    out: list[str] = []
    shift = {"-": start + first_line - 1, "+": start + (first_line if new_first_line is None else new_first_line) - 1}
    for line in difflib.unified_diff(
        old_lines[start:end_old],
        new_lines[start:end_new],
        fromfile=old_label or label,
        tofile=label,
        n=context,
    ):
        if line.startswith("@@") and any(shift.values()):
            line = _HUNK.sub(lambda m: f"{m[1]}{int(m[2]) + shift[m[1]]}", line)
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


def diff_spans(old: str, new: str, spans: list[Span], *, label: str, context: int = 3) -> Diff:
    """The diff of `old` -> `new` where only `spans` (in order, not overlapping) changed.

    Each change is diffed within its own lines plus `context` lines around it; changes whose
    regions touch are diffed together, so the hunks are the ones a whole-file diff would show.
    """
    regions: list[list[int]] = []  # [old_lo, old_hi, new_lo, new_hi], line-aligned
    for os_, oe, ns, ne in spans:
        lo = _back_lines(old, old.rfind("\n", 0, os_) + 1, context)
        hi = _forward_lines(old, old.find("\n", max(oe - 1, os_)), context)
        delta_lo, delta_hi = ns - os_, ne - oe  # the text before and after a span is unchanged
        if regions and lo <= regions[-1][1]:
            regions[-1][1], regions[-1][3] = hi, hi + delta_hi
        else:
            regions.append([lo, hi, lo + delta_lo, hi + delta_hi])
    parts: list[str] = []
    added = removed = 0
    line, pos, new_line, new_pos = 1, 0, 1, 0
    for olo, ohi, nlo, nhi in regions:
        line += old.count("\n", pos, olo)
        new_line += new.count("\n", new_pos, nlo)
        pos, new_pos = olo, nlo
        d = make_diff(
            old[olo:ohi], new[nlo:nhi], label=label, context=context, first_line=line, new_first_line=new_line
        )
        if d.text:
            text = d.text if not parts else d.text.split("\n", 2)[2]  # one ---/+++ header
            parts.append(text)
            added, removed = added + d.added, removed + d.removed
    return Diff(text="".join(parts), added=added, removed=removed)


def _back_lines(text: str, line_start: int, count: int) -> int:
    """The start of the line `count` lines before the one starting at `line_start`."""
    for _ in range(count):
        if line_start == 0:
            break
        line_start = text.rfind("\n", 0, line_start - 1) + 1
    return line_start


def _forward_lines(text: str, newline: int, count: int) -> int:
    """The end (after its "\n") of the line `count` lines after the one ending at `newline`."""
    for _ in range(count + 1):
        if newline == -1:
            return len(text)
        end = newline + 1
        newline = text.find("\n", end)
    return end


def count_lines(text: str) -> int:
    """Lines as a person counts them: "a\\nb" and "a\\nb\\n" are both two lines, "" is none."""
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def numbered_snippet(
    text: str, first: int, last: int, *, context: int = 3, max_lines: int = 30, first_pos: int | None = None
) -> str:
    """Lines `first - context` .. `last + context` of `text`, numbered like Read's output.

    Long changes are cut to `max_lines` with a marker saying how many lines were left out, so a
    large replacement never floods the model's context with text it just wrote itself.
    `first_pos`, the index where line `first` starts, lets a big text be cut without splitting
    all of it into lines. A line's "\r" (a CRLF line in a mixed file) is not shown, as in Read.
    """
    if first_pos is None:
        first_pos = 0
        for _ in range(first - 1):
            first_pos = text.find("\n", first_pos) + 1
            if first_pos == 0:
                first_pos = len(text)
                break
    lo = max(1, first - context)
    start = _back_lines(text, first_pos, first - lo)
    end = _forward_lines(text, text.find("\n", first_pos), max(last, first) - first + context)
    lines = [line.removesuffix("\r") for line in split_lines(text[start:end])]
    if not lines:
        return "(the file is now empty)"
    hi = lo + len(lines) - 1
    numbers = list(range(lo, hi + 1))
    omitted = 0
    if len(numbers) > max_lines:
        head = max_lines // 2
        tail = max_lines - head
        omitted = len(numbers) - max_lines
        numbers = [*numbers[:head], -1, *numbers[-tail:]]
    out = []
    for n in numbers:
        if n == -1:
            out.append(f"… ({omitted} lines not shown)")
        else:
            out.append(f"{n}\t{lines[n - lo]}")
    return "\n".join(out)
