"""Permission rules in Claude Code's syntax: `Tool` or `Tool(specifier)`, and how they match.

Three kinds of specifier, chosen by what the tool says its calls are about (`RuleSubject`):
- command (Bash): a prefix with a word boundary, `Bash(git diff:*)` or `Bash(npm test *)`; `*`
  anywhere is a wildcard. A compound command matches only if every simple command in it does.
- path (Read, Edit and the tools that answer to them): gitignore patterns relative to cwd, `//`
  for an absolute path, `~/` for home.
- value (custom tools): the specifier is a glob of the subject's value.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from collections.abc import Callable

from .tool import RuleSubject

__all__ = ["Rule", "parse_rule", "split_compound", "matches_subject", "gitignore_match", "writes_by_redirect"]

RuleKind = Literal["allow", "ask", "deny"]

_RULE_RE = re.compile(r"^\s*([A-Za-z0-9_\-]+)\s*(?:\((.*)\))?\s*$", re.S)


@dataclass(frozen=True, kw_only=True)
class Rule:
    tool: str
    specifier: str | None  # None (or "*") means the whole tool
    text: str
    source: str = "argument"

    @property
    def whole_tool(self) -> bool:
        return self.specifier is None or self.specifier.strip() in ("", "*")

    def __str__(self) -> str:
        return self.text


def parse_rule(text: str, source: str = "argument") -> Rule:
    if not isinstance(text, str):
        raise ValueError(f"a permission rule must be a string like 'Bash(git status:*)', not {text!r}")
    m = _RULE_RE.match(text)
    if not m:
        raise ValueError(
            f"permission rule {text!r} is not valid: write a tool name, optionally with a specifier, "
            "e.g. 'Read', 'Bash(git diff:*)' or 'Edit(src/**)'"
        )
    tool, spec = m.group(1), m.group(2)
    return Rule(tool=tool, specifier=spec, text=text.strip(), source=source)


# --- commands -----------------------------------------------------------------------------

_SEPARATORS = ("&&", "||", "|&", ";", "|", "&", "\n")


def split_compound(command: str) -> list[str] | None:
    """Split on `&& || ; | & newline` outside quotes. None when the command hides other
    commands (`$(...)`, backticks, `<(...)`, `>(...)`): no allow rule can vouch for those."""
    parts: list[str] = []
    buf: list[str] = []
    i, n = 0, len(command)
    quote: str | None = None
    while i < n:
        c = command[i]
        if quote:
            if c == "\\" and quote == '"' and i + 1 < n:
                if command[i + 1] == "`" or command[i + 1] == "$":
                    buf.append(command[i : i + 2])
                    i += 2
                    continue
            if c == quote:
                quote = None
            elif quote == '"' and (c == "`" or command.startswith("$(", i)):
                return None
            buf.append(c)
            i += 1
            continue
        if c == "\\" and i + 1 < n:
            buf.append(command[i : i + 2])
            i += 2
            continue
        if c in "'\"":
            quote = c
            buf.append(c)
            i += 1
            continue
        if c == "`" or command.startswith("$(", i) or command.startswith("<(", i) or command.startswith(">(", i):
            return None
        # `2>&1`, `>&2` and `&>` are redirections, not separators.
        is_redirect = c == "&" and (command[i - 1 : i] in (">", "<") or command.startswith("&>", i))
        sep = None if is_redirect else next((s for s in _SEPARATORS if command.startswith(s, i)), None)
        if sep is None:
            buf.append(c)
            i += 1
        else:
            parts.append("".join(buf))
            buf = []
            i += len(sep)
    if quote:
        return None
    parts.append("".join(buf))
    return [p.strip() for p in parts if p.strip()]


_WRAPPERS = {"timeout", "time", "nice", "nohup", "stdbuf", "command", "builtin", "noglob"}


def _strip_wrappers(cmd: str) -> str:
    words = cmd.split()
    while words and words[0] in _WRAPPERS:
        head = words.pop(0)
        # `timeout 10 cmd`, `nice -n 5 cmd`: drop the wrapper's own arguments.
        while words and (words[0].startswith("-") or (head in ("timeout", "nice") and words[0][:1].isdigit())):
            words.pop(0)
    return " ".join(words)


def _command_pattern(spec: str) -> re.Pattern[str]:
    spec = spec.strip()
    if spec.endswith(":*"):
        spec = spec[:-2] + " *"
    word_boundary_tail = spec.endswith(" *")
    if word_boundary_tail:
        spec = spec[:-2]
    body = ".*".join(re.escape(piece) for piece in spec.split("*"))
    if word_boundary_tail:
        # `ls *` matches `ls` and `ls -la`, never `lsof`.
        return re.compile(rf"^{body}(?:\s.*)?$", re.S)
    return re.compile(rf"^{body}$", re.S)


def command_matches(spec: str, command: str) -> bool:
    cmd = " ".join(command.split())
    pat = _command_pattern(spec)
    return bool(pat.match(cmd) or pat.match(_strip_wrappers(cmd)))


# --- paths --------------------------------------------------------------------------------


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


def gitignore_match(pattern: str, path: str | Path, *, cwd: str | Path, home: str | None = None) -> bool:
    """Whether absolute `path` matches a Read/Edit specifier, gitignore-style."""
    path = os.path.normpath(str(path))
    pattern = pattern.strip()
    if pattern.startswith("//"):
        base, pat = "/", pattern[2:]
    elif pattern.startswith("~/"):
        base, pat = home or os.path.expanduser("~"), pattern[2:]
    elif pattern.startswith("./"):
        # An explicit `./` anchors at cwd, as a leading `/` does in a .gitignore.
        base, pat = str(cwd), "/" + pattern[2:]
    elif pattern.startswith("/"):
        # Relative to the project root (the settings source), which is cwd here.
        base, pat = str(cwd), pattern[1:]
        if "/" not in pat.rstrip("/"):
            pat = "/" + pat  # keep it anchored
    else:
        base, pat = str(cwd), pattern
    base = os.path.normpath(base)
    if os.path.isabs(path) and os.path.isabs(base):
        # Searches match every path they find: slicing is much cheaper than relpath.
        head = base.rstrip(os.sep) + os.sep
        if not path.startswith(head):
            return False
        rel = path[len(head):]
    else:
        try:
            rel = os.path.relpath(path, base)
        except ValueError:
            return False
    if rel == "." or rel.startswith(".."):
        return False
    return bool(_gitignore_regex(pat).match(rel))


# --- dispatch -----------------------------------------------------------------------------

Splitter = Callable[[str], "list[str] | None"]


def matches_subject(
    spec: str, subject: RuleSubject | None, *, cwd: Path, kind: RuleKind, splitter: Splitter | None = None
) -> bool:
    """Whether a content rule `Tool(spec)` covers this call.

    For commands, deny and ask rules match when any simple command matches (a denied command
    stays denied inside a pipeline); allow rules only when every one does, and never when the
    command cannot be split safely.
    """
    if subject is None:
        return False
    if subject.kind == "path":
        return gitignore_match(spec, subject.value, cwd=cwd)
    if subject.kind == "value":
        return fnmatch.fnmatchcase(subject.value, spec)
    parts = (splitter or split_compound)(subject.value)
    if kind == "allow":
        # A rule vouches for a command, not for the files its redirections write (Claude Code
        # treats `> f` as an edit of f): `git status > /tmp/x` is asked about.
        return bool(parts) and all(command_matches(spec, p) and not writes_by_redirect(p) for p in parts)
    candidates = [subject.value, *(parts or split_compound_loose(subject.value))]
    # A splitter may also offer each command as it runs (`\rm`, `env rm`, `/bin/rm` -> `rm`),
    # so that a deny or ask rule catches every spelling (bash_parse.normalized_commands).
    normalize = getattr(splitter, "normalized_commands", None)
    if normalize is not None:
        candidates += normalize(subject.value)
    return any(command_matches(spec, p) for p in candidates)


def writes_by_redirect(command: str) -> bool:
    """Whether `command` redirects output to anything but /dev/null or another descriptor
    (`2>&1`). Quotes are honoured; a `>` the scan cannot place counts as a write."""
    i, n, quote = 0, len(command), None
    while i < n:
        c = command[i]
        if quote:
            if c == "\\" and quote == '"':
                i += 1
            elif c == quote:
                quote = None
        elif c == "\\":
            i += 1
        elif c in "'\"":
            quote = c
        elif c == ">":
            j = i + 1
            if command[j : j + 1] in (">", "|"):
                j += 1
            dup = command[j : j + 1] == "&" or command[i - 1 : i] == "&"
            j += command[j : j + 1] == "&"
            while j < n and command[j] in " \t":
                j += 1
            k = j
            while k < n and command[k] not in " \t\n;&|<>()":
                k += 1
            target = command[j:k].strip("'\"")
            harmless = target == "/dev/null" or (dup and command[i - 1 : i] != "&" and (target.isdigit() or target == "-"))
            if not harmless:
                return True
            i = k
            continue
        i += 1
    return False


def split_compound_loose(command: str) -> list[str]:
    """For deny and ask rules: split even around substitutions, to find any named command."""
    flat = re.sub(r"[`()$<>]", " ", command)
    return split_compound(flat) or []
