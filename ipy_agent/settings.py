"""Permission rules from settings files, each labelled with where it came from.

A person keeps one set of rules for ipy_agent and Claude Code: besides `.ipy_agent/settings.json`
we read the `permissions` section of `.claude/settings.json` and `.claude/settings.local.json`
(`{"permissions": {"allow": [...], "ask": [...], "deny": [...]}}`). Every rule keeps its source,
so `%agent_tools` can say why a call is allowed. A broken file must not stop the agent: it
becomes a warning that names the file and what is wrong, and its rules are skipped.

This module is plain Python (no IPython): the magics pass it a directory and get back rules and
warnings.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Literal

from .runtime.rules import parse_rule

__all__ = ["RuleSpec", "SETTINGS_FILES", "load_settings_rules", "rules_from_lists"]

Kind = Literal["allow", "ask", "deny"]
KINDS: tuple[Kind, ...] = ("allow", "ask", "deny")

# Read in this order; the order only matters for display, since deny beats ask beats allow.
SETTINGS_FILES: tuple[str, ...] = (
    ".ipy_agent/settings.json",
    ".claude/settings.json",
    ".claude/settings.local.json",
)


@dataclass(frozen=True, kw_only=True)
class RuleSpec:
    """One rule as configured: its kind, its text and where it was written."""

    kind: Kind
    text: str
    source: str


def rules_from_lists(source: str, *, allow: Iterable[str] = (), ask: Iterable[str] = (),
                     deny: Iterable[str] = ()) -> list[RuleSpec]:
    """RuleSpecs from plain lists; raises ValueError (parse_rule's message) on a bad rule."""
    out: list[RuleSpec] = []
    for kind, texts in (("allow", allow), ("ask", ask), ("deny", deny)):
        for text in texts:
            parse_rule(text, source)  # validate now, where the mistake was made
            out.append(RuleSpec(kind=kind, text=str(text).strip(), source=source))  # type: ignore[arg-type]
    return out


def load_settings_rules(cwd: str | Path) -> tuple[list[RuleSpec], list[str]]:
    """Rules from the settings files under `cwd`, and a warning for each problem found."""
    base = Path(cwd)
    rules: list[RuleSpec] = []
    warnings: list[str] = []
    for rel in SETTINGS_FILES:
        path = base / rel
        if not path.is_file():
            continue
        found, problems = _read_file(path, rel)
        rules.extend(found)
        warnings.extend(problems)
    return rules, warnings


def _read_file(path: Path, label: str) -> tuple[list[RuleSpec], list[str]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        return [], [f"{label}: not valid JSON ({e.msg} at line {e.lineno}, column {e.colno}); "
                    "its permission rules were skipped. Fix the file and run %agent again."]
    except (OSError, UnicodeDecodeError) as e:
        return [], [f"{label}: could not be read ({e}); its permission rules were skipped."]
    if not isinstance(data, dict):
        return [], [f"{label}: expected a JSON object like {{\"permissions\": {{\"allow\": [...]}}}}, "
                    f"found {type(data).__name__}; its permission rules were skipped."]
    section: Any = data.get("permissions")
    if section is None and label.startswith(".ipy_agent"):
        # Our own file may also put the lists at the top level.
        section = {k: data[k] for k in KINDS if k in data}
    if section is None:
        return [], []
    if not isinstance(section, dict):
        return [], [f"{label}: \"permissions\" must be an object with allow / ask / deny lists, "
                    f"not {type(section).__name__}; its rules were skipped."]
    rules: list[RuleSpec] = []
    warnings: list[str] = []
    for kind in KINDS:
        texts = section.get(kind, [])
        if not isinstance(texts, list):
            warnings.append(f"{label}: permissions.{kind} must be a list of rule strings, not "
                            f"{type(texts).__name__}; skipped.")
            continue
        for text in texts:
            try:
                parse_rule(text, label)
            except ValueError as e:
                warnings.append(f"{label}: permissions.{kind}: {e}; skipped.")
                continue
            rules.append(RuleSpec(kind=kind, text=text.strip(), source=label))
    return rules, warnings
