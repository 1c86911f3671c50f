"""The managed policy: what an administrator sets and a person cannot loosen.

Read from `/etc/ipy_agent/managed-settings.json`, `{sys.prefix}/etc/ipy_agent/managed-settings.json`
and the file named by `IPY_AGENT_MANAGED_SETTINGS` (which adds a file, never hides a system one).
Keys follow Claude Code's managed settings where it has one for the same thing:

    {
      "permissions": {"allow": [...], "ask": [...], "deny": ["Bash", "Read(//home/**/.ssh/**)"],
                      "disableBypassPermissionsMode": "disable",
                      "disallowedModes": ["acceptEdits"]},
      "sandbox": {"enabled": true},
      "availableModels": ["claude-sonnet-*", "claude-haiku-*"],
      "allowedMcpServers": [{"serverName": "docs"}, {"serverCommand": ["uvx", "mcp-server-time"]}],
      "deniedMcpServers": [{"serverName": "shell"}],
      "budget": {"perRunUsd": 0.5, "perDayUsd": 2, "perUserUsd": 20}
    }

`permissions.deny: ["Bash"]` is how a policy takes Bash away: a tool denied as a whole is not
offered to the model at all. Several files combine to the strictest of them. A file that exists
but cannot be read as a policy raises `PolicyError`: the agent refuses to run (fail closed).
A choice the policy forbids (a mode, a model, the sandbox off, a looser budget) raises
`PolicyViolation`, whose message names the policy file. Plain Python: the magics turn both into
UsageError.
"""

from __future__ import annotations

import fnmatch
import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ipy_agent.contract.decision import PERMISSION_MODES
from ipy_agent.mcp.config import ServerConfig
from ipy_agent.permissions.rules import RuleKind, RuleSpec, parse_rule

__all__ = [
    "POLICY_ENV",
    "Policy",
    "PolicyError",
    "PolicyViolation",
    "load_policy",
    "policy_paths",
]

POLICY_ENV = "IPY_AGENT_MANAGED_SETTINGS"
_NAME = "ipy_agent/managed-settings.json"
_BUDGET_KEYS = {"perRunUsd": "per_run", "perDayUsd": "per_day", "perUserUsd": "per_user"}


class PolicyError(ValueError):
    """A policy file exists but cannot be read as one: nothing runs until it is fixed."""


class PolicyViolation(ValueError):
    """A setting the managed policy does not allow; the message names the policy file."""


def policy_paths() -> list[Path]:
    """Where policies are looked for, system ones first; the variable adds one."""
    paths = [Path("/etc") / _NAME, Path(sys.prefix) / "etc" / _NAME]
    if extra := os.environ.get(POLICY_ENV, "").strip():
        paths.append(Path(extra).expanduser())
    unique: list[Path] = []
    for p in paths:
        if p not in unique:
            unique.append(p)
    return unique


@dataclass(frozen=True, kw_only=True)
class McpMatch:
    """One entry of allowedMcpServers / deniedMcpServers: a server name, or its command line."""

    name: str | None = None
    command: tuple[str, ...] | None = None

    def matches(self, cfg: ServerConfig) -> bool:
        if self.name is not None:
            return fnmatch.fnmatchcase(cfg.name, self.name)
        return self.command == (cfg.command, *cfg.args)


@dataclass(frozen=True, kw_only=True)
class Policy:
    """The managed policy in force (empty when no file exists)."""

    files: tuple[str, ...] = ()
    rules: tuple[RuleSpec, ...] = ()
    disallowed_modes: frozenset[str] = frozenset()
    sandbox_required: bool = False
    models: tuple[tuple[str, ...], ...] = ()  # one pattern list per file; a model must match each
    mcp_allowed: tuple[tuple[McpMatch, ...], ...] = ()
    mcp_denied: tuple[McpMatch, ...] = ()
    budget: Mapping[str, float] = field(default_factory=dict)  # per_run, per_day, per_user (USD)

    @property
    def label(self) -> str:
        return "managed policy " + ", ".join(self.files) if self.files else "no managed policy"

    def describe(self) -> list[str]:
        """Lines for `%agent_rules`: what the policy sets, and in which file ([] without one)."""
        if not self.files:
            return []
        lines = [f"Set by the {self.label} (a person cannot loosen these):"]
        lines += [f"  {r.kind:<5} {r.text}" for r in self.rules]
        if self.disallowed_modes:
            lines.append(f"  modes not allowed: {', '.join(sorted(self.disallowed_modes))}")
        if self.sandbox_required:
            lines.append("  the sandbox is required")
        lines += [f"  models allowed: {', '.join(m)}" for m in self.models]
        if self.mcp_allowed or self.mcp_denied:
            lines.append("  MCP servers: limited by allowedMcpServers / deniedMcpServers")
        lines += [f"  budget {k.replace('_', ' ')}: ${v:.2f}" for k, v in self.budget.items()]
        return lines

    def _refuse(self, what: str) -> PolicyViolation:
        return PolicyViolation(
            f"{what} is not allowed by the managed policy ({', '.join(self.files)}); ask its administrator."
        )

    def check_mode(self, mode: str, where: str) -> None:
        if mode in self.disallowed_modes:
            raise self._refuse(f"{where}: permission mode {mode!r}")

    def check_model(self, name: str, where: str) -> None:
        for patterns in self.models:
            if not any(fnmatch.fnmatchcase(name, p) for p in patterns):
                raise self._refuse(f"{where}: model {name!r} (allowed: {', '.join(patterns)})")

    def check_sandbox(self, setting: str, where: str) -> str:
        """The sandbox setting in force: 'always' when the policy requires it ('off' is refused)."""
        if not self.sandbox_required:
            return setting
        if setting == "off":
            raise self._refuse(f"{where}: sandbox 'off' (the policy requires the sandbox)")
        return "always"

    def mcp_blocked(self, cfg: ServerConfig) -> str | None:
        """Why the policy keeps this server from starting, or None."""
        if any(m.matches(cfg) for m in self.mcp_denied):
            return f"MCP server {cfg.name!r} is denied by the {self.label}"
        for allowed in self.mcp_allowed:
            if not any(m.matches(cfg) for m in allowed):
                return f"MCP server {cfg.name!r} is not in the allowedMcpServers of the {self.label}"
        return None

    def budget_limit(self, kind: str, asked: float | None, where: str) -> float | None:
        """The limit of `kind` ('per_run', ...) in force: the smaller of the policy's and `asked`."""
        cap = self.budget.get(kind)
        if asked is not None and asked <= 0:
            raise ValueError(f"{where}: a budget must be more than $0, not {asked!r}")
        if cap is None:
            return asked
        return cap if asked is None else min(cap, asked)


def load_policy(paths: Sequence[Path] | None = None) -> Policy:
    """The policy of every existing file among `paths` (default `policy_paths()`), combined.

    Raises PolicyError naming the file when one cannot be read or understood."""
    parts = [_read(p) for p in (policy_paths() if paths is None else paths) if p.exists()]
    if not parts:
        return Policy()
    budget: dict[str, float] = {}
    for part in parts:
        for k, v in part.budget.items():
            budget[k] = min(v, budget.get(k, v))
    return Policy(
        files=tuple(f for p in parts for f in p.files),
        rules=tuple(r for p in parts for r in p.rules),
        disallowed_modes=frozenset().union(*(p.disallowed_modes for p in parts)),
        sandbox_required=any(p.sandbox_required for p in parts),
        models=tuple(m for p in parts for m in p.models),
        mcp_allowed=tuple(m for p in parts for m in p.mcp_allowed),
        mcp_denied=tuple(m for p in parts for m in p.mcp_denied),
        budget=budget,
    )


_CLOSED = "; ipy_agent will not run until the managed policy can be read (ask its administrator)."


def _read(path: Path) -> Policy:
    where = str(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise PolicyError(f"{where}: not valid JSON ({e.msg} at line {e.lineno}, column {e.colno}){_CLOSED}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise PolicyError(f"{where}: could not be read ({e}){_CLOSED}") from None
    try:
        return _parse(data, where)
    except (TypeError, ValueError) as e:
        raise PolicyError(f"{where}: {e}{_CLOSED}") from None


_KNOWN = {"permissions", "sandbox", "availableModels", "allowedMcpServers", "deniedMcpServers", "budget"}


def _parse(data: Any, where: str) -> Policy:
    if not isinstance(data, dict):
        raise TypeError(f"expected a JSON object, found {type(data).__name__}")
    if unknown := sorted(set(data) - _KNOWN):
        # A misspelt key would silently loosen what the administrator meant.
        raise ValueError(f"unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(_KNOWN))})")
    perms = _obj(data, "permissions")
    rules: list[RuleSpec] = []
    kinds: tuple[RuleKind, ...] = ("allow", "ask", "deny")
    for kind in kinds:
        for text in _strings(perms, kind, f"permissions.{kind}"):
            parse_rule(text, where)
            rules.append(RuleSpec(kind=kind, text=text.strip(), source=f"managed policy {where}"))
    modes = set(_strings(perms, "disallowedModes", "permissions.disallowedModes"))
    if bad := sorted(modes - set(PERMISSION_MODES)):
        raise ValueError(f"permissions.disallowedModes: {', '.join(bad)} is not a mode ({', '.join(PERMISSION_MODES)})")
    bypass = perms.get("disableBypassPermissionsMode")
    if bypass not in (None, "disable"):
        raise ValueError(f'permissions.disableBypassPermissionsMode must be "disable", not {bypass!r}')
    if bypass == "disable":
        modes.add("bypassPermissions")
    sandbox = _obj(data, "sandbox")
    enabled = sandbox.get("enabled", False)
    if not isinstance(enabled, bool):
        raise TypeError(f"sandbox.enabled must be true or false, not {enabled!r}")
    models = _strings(data, "availableModels", "availableModels") if "availableModels" in data else None
    allowed = _mcp(data, "allowedMcpServers") if "allowedMcpServers" in data else None
    return Policy(
        files=(where,),
        rules=tuple(rules),
        disallowed_modes=frozenset(modes),
        sandbox_required=enabled,
        models=(tuple(models),) if models is not None else (),
        mcp_allowed=(allowed,) if allowed is not None else (),
        mcp_denied=_mcp(data, "deniedMcpServers"),
        budget=_budget(_obj(data, "budget")),
    )


def _obj(data: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise TypeError(f"{key} must be an object, not {type(value).__name__}")
    return value


def _strings(data: Mapping[str, Any], key: str, name: str) -> list[str]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TypeError(f"{name} must be a list of strings, not {value!r}")
    return value


def _mcp(data: Mapping[str, Any], key: str) -> tuple[McpMatch, ...]:
    value = data.get(key, [])
    if not isinstance(value, list):
        raise TypeError(f"{key} must be a list like [{{'serverName': 'docs'}}], not {value!r}")
    out: list[McpMatch] = []
    for entry in value:
        if isinstance(entry, dict) and isinstance(entry.get("serverName"), str):
            out.append(McpMatch(name=entry["serverName"]))
        elif (
            isinstance(entry, dict)
            and isinstance(cmd := entry.get("serverCommand"), list)
            and cmd
            and all(isinstance(c, str) for c in cmd)
        ):
            out.append(McpMatch(command=tuple(cmd)))
        else:
            raise ValueError(f'{key}: each entry is {{"serverName": ...}} or {{"serverCommand": [...]}}, not {entry!r}')
    return tuple(out)


def _budget(section: Mapping[str, Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    for key, value in section.items():
        if key not in _BUDGET_KEYS:
            raise ValueError(f"budget.{key} is not a budget (known: {', '.join(_BUDGET_KEYS)})")
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise ValueError(f"budget.{key} must be a number of US dollars above 0, not {value!r}")
        out[_BUDGET_KEYS[key]] = float(value)
    return out
