"""Permission rules from settings files, each labelled with where it came from.

A person keeps one set of rules for ipy_agent and Claude Code: besides their own
`~/.ipy_agent/settings.json` (or `$IPY_AGENT_CONFIG_DIR/settings.json`) and the project's
`.ipy_agent/settings.json` we read the `permissions` section of `.claude/settings.json` and `.claude/settings.local.json`
(`{"permissions": {"allow": [...], "ask": [...], "deny": [...]}}`). Every rule keeps its source,
so `%agent_tools` can say why a call is allowed. A broken file must not stop the agent: it
becomes a warning that names the file and what is wrong, and its rules are skipped.

A project file may have been written by a command we never saw (settings_approvals.py says
why): its allow rules apply only as the person approved them, asked once through `approve`.

An administrator's managed policy (policy.py) adds its rules on top; deny beats ask beats
allow whatever the source, so none of these files loosens it. The options of the `%agent` line are the last source of rules (config/options.py reads them). This
module is plain Python (no IPython): errors are ValueErrors with a message for the person, which
the magics turn into UsageError.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ipy_agent.mcp.config import user_config_dir
from ipy_agent.permissions.rules import RuleKind, RuleSpec, matches_everything, parse_rule

from .settings_approvals import SettingsApprovals

__all__ = ["SETTINGS_FILES", "ApproveAllowRules", "SettingsError", "load_settings_rules", "rules_from_lists"]

# Asked with (the file as the person knows it, its allow rules); True applies them.
ApproveAllowRules = Callable[[str, list[str]], bool]

KINDS: tuple[RuleKind, ...] = ("allow", "ask", "deny")

# Read in this order; the order only matters for display, since deny beats ask beats allow.
SETTINGS_FILES: tuple[str, ...] = (
    ".ipy_agent/settings.json",
    ".claude/settings.json",
    ".claude/settings.local.json",
)


def rules_from_lists(
    source: str, *, allow: Iterable[str] = (), ask: Iterable[str] = (), deny: Iterable[str] = ()
) -> list[RuleSpec]:
    """RuleSpecs from plain lists; raises ValueError (parse_rule's message) on a bad rule."""
    out: list[RuleSpec] = []
    lists: tuple[tuple[RuleKind, Iterable[str]], ...] = (("allow", allow), ("ask", ask), ("deny", deny))
    for kind, texts in lists:
        for text in texts:
            parse_rule(text, source)  # validate now, where the mistake was made
            out.append(RuleSpec(kind=kind, text=str(text).strip(), source=source))
    return out


class SettingsError(ValueError):
    """A settings file that may hold deny or ask rules cannot be read as such.

    Running on without them would fail open (a denied command would run), so the run stops
    until the file is fixed. A broken allow rule only costs a prompt: that is a warning.
    """


def load_settings_rules(
    cwd: str | Path, *, approve: ApproveAllowRules | None = None, approvals: SettingsApprovals | None = None
) -> tuple[list[RuleSpec], list[str]]:
    """Rules from the settings files under `cwd`, and a warning for each harmless problem.

    A project file's allow rules apply only as the person approved them (settings_approvals.py):
    new or changed ones are put to `approve` once, and without it (or with a no) they are left
    out with a warning; its deny and ask rules always apply.
    Raises SettingsError naming the file when its deny or ask rules cannot be trusted."""
    base = Path(cwd)
    rules: list[RuleSpec] = []
    warnings: list[str] = []
    user = user_config_dir() / "settings.json"
    files = [(user, str(user))] + [(base / rel, rel) for rel in SETTINGS_FILES]
    for n, (path, label) in enumerate(files):
        if not path.is_file() or (n > 0 and user.is_file() and path.resolve() == user.resolve()):
            continue  # the home directory as a project: its file is the user's own, read once
        found, problems = _read_file(path, label)
        if n > 0:
            found = _approved_only(found, path, label, approve, approvals or SettingsApprovals(), problems)
        rules.extend(found)
        warnings.extend(problems)
    return rules, warnings


def _approved_only(
    found: list[RuleSpec],
    path: Path,
    label: str,
    approve: ApproveAllowRules | None,
    approvals: SettingsApprovals,
    warnings: list[str],
) -> list[RuleSpec]:
    """`found` without its allow rules unless the person approved exactly these for this file."""
    allow = [r.text for r in found if r.kind == "allow"]
    if not allow:
        return found
    # The path as read, links not followed: a link to an approved file elsewhere is a new file.
    where = Path(os.path.abspath(path))
    if approvals.is_approved(where, allow):
        return found
    if approve is not None and approve(str(where), allow):
        try:
            approvals.remember(where, allow)
        except OSError as e:
            warnings.append(f"Could not remember your approval of {label} in {approvals.path} ({e}); it asks again.")
        return found
    warnings.append(
        f"{where}: its allow rules {', '.join(allow)} were not applied: they are new or changed since you "
        "last approved this file, and any command that runs here could have written it. Run %agent where "
        "it can ask you (a notebook or IPython), or give the rules yourself (%agent --allow '...'). Its "
        "deny and ask rules apply."
    )
    return [r for r in found if r.kind != "allow"]


_UNTRUSTED = (
    "; ipy_agent will not run while it cannot read the deny and ask rules this file may hold. "
    "Fix the file (or move it away) and run %agent again."
)


def _read_file(path: Path, label: str) -> tuple[list[RuleSpec], list[str]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise SettingsError(
            f"{label}: not valid JSON ({e.msg} at line {e.lineno}, column {e.colno}){_UNTRUSTED}"
        ) from None
    except (OSError, UnicodeDecodeError) as e:
        raise SettingsError(f"{label}: could not be read ({e}){_UNTRUSTED}") from None
    if not isinstance(data, dict):
        raise SettingsError(
            f'{label}: expected a JSON object like {{"permissions": {{"deny": [...]}}}}, '
            f"found {type(data).__name__}{_UNTRUSTED}"
        )
    section: Any = data.get("permissions")
    if section is None and ".ipy_agent" in label:
        # Our own file may also put the lists at the top level.
        section = {k: data[k] for k in KINDS if k in data}
    if section is None:
        return [], []
    if not isinstance(section, dict):
        raise SettingsError(
            f'{label}: "permissions" must be an object with allow / ask / deny lists, '
            f"not {type(section).__name__}{_UNTRUSTED}"
        )
    rules: list[RuleSpec] = []
    warnings: list[str] = []
    for kind in KINDS:
        texts = section.get(kind, [])
        if not isinstance(texts, list):
            problem = f"{label}: permissions.{kind} must be a list of rule strings, not {type(texts).__name__}"
            if kind != "allow":
                raise SettingsError(problem + _UNTRUSTED)
            warnings.append(problem + "; skipped.")
            continue
        for text in texts:
            try:
                rule = parse_rule(text, label)
            except ValueError as e:
                if kind != "allow":
                    raise SettingsError(f"{label}: permissions.{kind}: {e}{_UNTRUSTED}") from None
                warnings.append(f"{label}: permissions.{kind}: {e}; skipped.")
                continue
            if kind == "allow" and matches_everything(rule):
                # A file that comes with a project must not switch the prompts off wholesale.
                warnings.append(
                    f"{label}: permissions.allow: {rule.text!r} would allow every {rule.tool} call, so it was "
                    f"skipped; if you mean it, give it yourself (%agent --allow '{rule.text}', or "
                    "AgentMagics.allow)."
                )
                continue
            rules.append(RuleSpec(kind=kind, text=text.strip(), source=label))
    return rules, warnings
