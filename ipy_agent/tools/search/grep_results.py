"""Grep's results: ripgrep's output regrouped in a stable order, paged, and rendered for the model.

ripgrep's threads finish in any order, so its lines are regrouped per file in path order before
`offset` pages through them; the page and its totals become the text the model reads, with a
note on what was cut and how to page on. Kept apart from the tool (`grep.py`), which decides
what to ask ripgrep.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from .ripgrep import plural

__all__ = [
    "MARK",
    "GrepResult",
    "OutputMode",
    "group_content",
    "page",
    "parse_counts",
    "path_key",
    "render_grep",
    "strip_dot",
]

# Marks where ripgrep's path and line-number fields end. A control character no real path
# contains, so paths with ':' or '-' in them still split correctly.
MARK = "\x1e"
# ripgrep's line for a file it was told to search and found binary: the match is not printed.
_BINARY_MATCH = re.compile(r"^(.*): binary file matches \(found .*\)$")
OutputMode = Literal["files_with_matches", "content", "count"]
_UNIT: dict[str, str] = {"files_with_matches": "file", "content": "line", "count": "file"}


@dataclass(frozen=True, kw_only=True)
class GrepResult:
    mode: OutputMode
    pattern: str
    searched: str  # the path searched, as displayed
    items: list[str]  # this page: files, content lines (with "--" between groups) or "path:N"
    shown: int  # results on this page ("--" separators are not results)
    total: int  # results over the whole search, before paging
    offset: int
    head_limit: int
    num_files: int  # files with a match, over the whole search
    num_matches: int = 0  # count mode: matches over the whole search
    warnings: str = ""  # ripgrep's complaints about files it could not read
    output_cut: bool = False  # ripgrep's output passed the memory cap and was stopped
    hidden_note: str = ""  # how many files Read deny rules hid, and which rules; "" when none

    @property
    def remaining(self) -> int:
        return max(self.total - self.offset - self.shown, 0)

    @property
    def paginated(self) -> bool:
        return self.offset > 0 or self.remaining > 0


def strip_dot(path: str) -> str:
    return path[2:] if path.startswith("./") else path


def path_key(path: str) -> tuple[str, ...]:
    # Folder by folder, as a tree listing reads ("a/b" before "a.py").
    return tuple(path.split("/"))


def parse_counts(text: str) -> list[tuple[str, int]]:
    counts = []
    for line in text.split("\n"):
        path, sep, n = line.rpartition("\0")
        if sep and n.isdigit():
            counts.append((strip_dot(path), int(n)))
    return counts


def group_content(
    text: str, prefix: str, numbered: bool, context: bool, keep: Callable[[str], bool]
) -> tuple[list[str], int]:
    """ripgrep's content lines, regrouped per file in path order; "--" between groups of
    context as ripgrep prints them. Files `keep` refuses are left out, context lines and all.
    Returns the lines and the number of files."""
    groups: dict[str, list[str]] = {}
    current: list[str] = []
    path = None
    gap = False
    # Not splitlines(): it also splits on \x1e, our mark, and on other control characters.
    for line in text.split("\n"):
        if not line:
            continue
        cut = line.find(MARK)
        binary = _BINARY_MATCH.match(line) if cut < 0 else None
        if cut < 0 and binary is None:  # ripgrep's "--" between context groups
            gap = True
            continue
        line_path = binary.group(1) if binary else line[:cut]
        if line_path != path:
            path = line_path
            current = groups.setdefault(path, [])
        elif gap:
            current.append("--")
        gap = False
        if binary:
            current.append(prefix + strip_dot(line_path) + ": binary file matches (its lines are not shown)")
            continue
        rest = line[cut + 1 :]
        if numbered:  # the second mark ends the line number
            rest = rest.replace(MARK, "", 1)
        current.append(prefix + strip_dot(line_path) + rest.removesuffix("\r"))
    lines: list[str] = []
    kept = sorted((p for p in groups if keep(strip_dot(p))), key=lambda p: path_key(strip_dot(p)))
    for key in kept:
        if lines and context:
            lines.append("--")
        lines.extend(groups[key])
    return lines, len(kept)


def page(*, items: list[str], offset: int, head_limit: int, **fields: Any) -> GrepResult:
    """One page of results. Context separators ("--") do not count as results: a page holds
    `head_limit` real lines, with the separators that fall between them."""
    positions = [i for i, item in enumerate(items) if item != "--"]
    chosen = positions[offset : offset + head_limit if head_limit else None]
    page = items[chosen[0] : chosen[-1] + 1] if chosen else []
    return GrepResult(
        items=page, shown=len(chosen), total=len(positions), offset=offset, head_limit=head_limit, **fields
    )


def render_grep(result: GrepResult) -> str:
    """What the model reads: the results, the totals, and what to do when they were cut."""
    if not result.total:
        text = f"No matches found for {result.pattern!r} in {result.searched!r}."
        return text + _warnings(result) + _hidden(result)
    if not result.items:
        return (
            f"No results at offset {result.offset}: the search found only "
            f"{plural(result.total, _UNIT[result.mode])}. Use a smaller offset."
        ) + _hidden(result)
    body = "\n".join(result.items)
    match result.mode:
        case "files_with_matches":
            text = f"Found {plural(result.num_files, 'file')} (newest first)\n{body}"
        case "count":
            text = f"{body}\n\nFound {plural(result.num_matches, 'match', 'matches')} in {plural(result.num_files, 'file')}"
        case "content":
            text = body
    if result.paginated:
        text += f"\n\n[Showing results with pagination = limit: {result.head_limit}, offset: {result.offset}]"
        if result.remaining:
            text += (
                f"\n{plural(result.remaining, 'more ' + _UNIT[result.mode])} not shown. Narrow the "
                "search (a more specific pattern, path, glob or type) rather than reading everything; "
                f"to page on, call again with offset: {result.offset + result.shown}; "
                "head_limit: 0 returns all."
            )
    if result.output_cut:
        text += (
            "\n\n(ripgrep produced too much output and was stopped, so these results are partial. Narrow the search.)"
        )
    return text + _warnings(result) + _hidden(result)


def _hidden(result: GrepResult) -> str:
    return f"\n\n{result.hidden_note}" if result.hidden_note else ""


def _warnings(result: GrepResult) -> str:
    if not result.warnings:
        return ""
    lines = result.warnings.splitlines()
    more = f"\n... and {len(lines) - 5} more" if len(lines) > 5 else ""
    return "\n\n(Some files could not be searched:\n" + "\n".join(lines[:5]) + more + ")"
