"""Permission rules in Claude Code's syntax: `Tool` or `Tool(specifier)`, and how they match.

Three kinds of specifier, chosen by what the tool says its calls are about (`RuleSubject`):
- command (Bash): a prefix with a word boundary, `Bash(git diff:*)` or `Bash(npm test *)`; `*`
  anywhere is a wildcard. A compound command matches an allow rule only if every simple command
  in it does. The tool that runs commands splits them (`RuleSubject.parts`); this module only
  matches text, so the project has one shell parser, the Bash tool's.
- path (Read, Edit and the tools that answer to them): gitignore patterns relative to cwd, `//`
  for an absolute path, `~/` for home.
- value (custom tools): the specifier is a glob of the subject's value.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ipy_agent.base.gitignore import gitignore_match
from ipy_agent.contract.tool import CommandPart, RuleSubject

__all__ = ["Rule", "RuleKind", "RuleSpec", "command_matches", "matches_subject", "parse_rule", "part_matches"]

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


@dataclass(frozen=True, kw_only=True)
class RuleSpec:
    """One rule as configured: its kind, its text and where it was written."""

    kind: RuleKind
    text: str
    source: str


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
    """Whether one command's text fits a command specifier (whitespace runs count as one)."""
    return bool(_command_pattern(spec).match(" ".join(command.split())))


def part_matches(spec: str, part: CommandPart) -> bool:
    """Whether an allow specifier covers one simple command, as written or in another form."""
    return any(command_matches(spec, text) for text in (part.text, *part.forms))


# --- dispatch -----------------------------------------------------------------------------


def matches_subject(spec: str, subject: RuleSubject | None, *, cwd: Path, kind: RuleKind) -> bool:
    """Whether a content rule `Tool(spec)` covers this call.

    For commands, deny and ask rules match when the command or any command it may run matches
    (a denied command stays denied inside a pipeline, behind `env` or in `bash -c`); allow
    rules only when every part does, and never when the tool gave no parts (see `RuleSubject`).
    """
    if subject is None:
        return False
    if subject.kind == "path":
        return gitignore_match(spec, subject.value, cwd=cwd)
    if subject.kind == "value":
        return fnmatch.fnmatchcase(subject.value, spec)
    if kind == "allow":
        return bool(subject.parts) and all(part_matches(spec, p) for p in subject.parts or ())
    # A command that hides what it runs may run what the rule names: deny and ask rules hold.
    return bool(subject.hidden) or any(command_matches(spec, c) for c in (subject.value, *subject.spellings))
