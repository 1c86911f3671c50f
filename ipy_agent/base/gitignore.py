"""Path patterns in gitignore syntax, as `Read(...)` and `Edit(...)` rules write them.

Kept apart from the rest of the rule language because the tool context needs it too
(`ToolContext.is_read_denied`: every tool hides a file a Read deny rule covers), and the tool
contract must not depend on the rule engine that depends on it.

Patterns are relative to cwd; `//` starts an absolute path, `~/` the home directory, `./` or a
leading `/` anchors at cwd; a bare name matches at any depth; a pattern naming a directory
covers everything below it.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable
from pathlib import Path

__all__ = ["first_matching", "gitignore_match", "literal_root", "rule_matcher"]


@functools.lru_cache(maxsize=256)  # one pattern is matched against every path a search finds
def _gitignore_regex(pattern: str) -> re.Pattern[str]:
    anchored = "/" in pattern.rstrip("/")
    dir_only = pattern.endswith("/")
    pat = pattern.strip("/")
    out: list[str] = []
    i = 0
    while i < len(pat):
        if pat.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pat.startswith("/**", i) and i + 3 == len(pat):
            out.append("/.*")
            i += 3
        elif pat.startswith("**", i):
            out.append(".*")
            i += 2
        elif pat[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pat[i] == "?":
            out.append("[^/]")
            i += 1
        elif pat[i] == "[":
            j = pat.find("]", i + 1)
            if j == -1:
                out.append(re.escape(pat[i]))
                i += 1
            else:
                out.append(pat[i : j + 1])
                i = j + 1
        else:
            out.append(re.escape(pat[i]))
            i += 1
    body = "".join(out)
    prefix = "^" if anchored else "^(?:.*/)?"
    # A pattern naming a directory also covers everything below it.
    suffix = "/.*$" if dir_only else "(?:/.*)?$"
    return re.compile(prefix + body + suffix, re.S)


@functools.lru_cache(maxsize=256)  # a deny rule is held against every word of a long command
def _compiled(pattern: str, cwd: str, home: str | None) -> tuple[str, re.Pattern[str]]:
    """(the normalised directory the pattern is relative to, the regex for the rest)."""
    pattern = pattern.strip()
    if pattern.startswith("//"):
        base, pat = "/", pattern[2:]
    elif pattern.startswith("~/"):
        base, pat = home or os.path.expanduser("~"), pattern[2:]
    elif pattern.startswith("./"):
        # An explicit `./` anchors at cwd, as a leading `/` does in a .gitignore.
        base, pat = cwd, "/" + pattern[2:]
    elif pattern.startswith("/"):
        # Relative to the project root (the settings source), which is cwd here.
        base, pat = cwd, pattern[1:]
        if "/" not in pat.rstrip("/"):
            pat = "/" + pat  # keep it anchored
    else:
        base, pat = cwd, pattern
    return os.path.normpath(base), _gitignore_regex(pat)


def literal_root(pattern: str, *, cwd: str | Path, home: str | None = None) -> str:
    """The deepest path every match of `pattern` is at or below: its base directory, followed by
    the pattern's leading components that have no wildcard (a bare name matches at any depth, so
    its root is the base itself). What a walk for the pattern's matches must start from."""
    base, _regex = _compiled(pattern, str(cwd), home if home is not None else os.path.expanduser("~"))
    text = pattern.strip()
    for marker in ("//", "~/", "./", "/"):
        if text.startswith(marker):
            text = text[len(marker) :]
            break
    leading = pattern.strip()
    anchored = "/" in text.rstrip("/") or (leading.startswith(("./", "/")) and not leading.startswith("//"))
    if not anchored:
        return base
    literal: list[str] = []
    for part in text.strip("/").split("/"):
        if not part or any(c in part for c in "*?["):
            break
        literal.append(part)
    return os.path.normpath(os.path.join(base, *literal))


def gitignore_match(pattern: str, path: str | Path, *, cwd: str | Path, home: str | None = None) -> bool:
    """Whether absolute `path` matches a Read/Edit specifier, gitignore-style."""
    path = os.path.normpath(str(path))
    # `~/` is looked up each time unless given: HOME may change between calls.
    if home is None and pattern.lstrip().startswith("~/"):
        home = os.path.expanduser("~")
    base, regex = _compiled(pattern, str(cwd), home)
    if os.path.isabs(path) and os.path.isabs(base):
        # Searches match every path they find: slicing is much cheaper than relpath.
        head = base.rstrip(os.sep) + os.sep
        if not path.startswith(head):
            return False
        rel = path[len(head) :]
    else:
        try:
            rel = os.path.relpath(path, base)
        except ValueError:
            return False
    if rel == "." or rel.startswith(".."):
        return False
    return bool(regex.match(rel))


def first_matching(patterns: tuple[str, ...], paths: list[str], *, cwd: str | Path) -> str | None:
    """The first of `patterns` that matches one of `paths` (absolute and normalised), or None:
    `gitignore_match` for a whole rule set, with every pattern compiled once per rule set."""
    home = os.path.expanduser("~") if _uses_home(patterns) else None
    return _first(_compiled_set(patterns, str(cwd), home), paths, cwd=cwd, home=home)


def rule_matcher(patterns: tuple[str, ...], *, cwd: str | Path) -> Callable[[list[str]], str | None]:
    """`first_matching` with the rule set looked up once: for checking many paths in a row."""
    home = os.path.expanduser("~") if _uses_home(patterns) else None
    return functools.partial(_first, _compiled_set(patterns, str(cwd), home), cwd=cwd, home=home)


def _first(
    compiled: tuple[tuple[str, str | None, re.Pattern[str]], ...],
    paths: list[str],
    *,
    cwd: str | Path,
    home: str | None,
) -> str | None:
    for pattern, head, regex in compiled:
        for path in paths:
            if head is None:  # a relative base: the general path
                if gitignore_match(pattern, path, cwd=cwd, home=home):
                    return pattern
            elif path.startswith(head):
                rel = path[len(head) :]
                if rel != "." and not rel.startswith("..") and regex.match(rel):
                    return pattern
    return None


@functools.lru_cache(maxsize=64)
def _compiled_set(
    patterns: tuple[str, ...], cwd: str, home: str | None
) -> tuple[tuple[str, str | None, re.Pattern[str]], ...]:
    out = []
    for pattern in patterns:
        base, regex = _compiled(pattern, cwd, home)
        out.append((pattern, base.rstrip(os.sep) + os.sep if os.path.isabs(base) else None, regex))
    return tuple(out)


@functools.lru_cache(maxsize=64)
def _uses_home(patterns: tuple[str, ...]) -> bool:
    return any(p.lstrip().startswith("~/") for p in patterns)
