"""Credentials in the environment: kept out of the processes tools start, and out of the text.

The kernel that runs the agent holds `ANTHROPIC_API_KEY`, and often other keys and tokens. A
shell command the model writes must not see them (`env`, `printenv`, a script that posts them
somewhere), so every process a tool starts gets `tool_environ()`: the environment without the
variables whose names look like credentials. And should a value reach a tool result anyway (a
file that contains it, a program that found it elsewhere), `redact` replaces it before the model,
the trace, a saved conversation or the notebook see it.

Which names count is a list of shell-style patterns, matched case-insensitively:
`SECRET_PATTERNS`, plus any listed (comma or space separated) in `IPY_AGENT_SECRET_ENV`. A name
listed in `IPY_AGENT_PASS_ENV` is passed through even so (e.g. `GH_TOKEN` for approved `gh`
commands); the person sets both, the model cannot (no tool changes the kernel's environment).
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "SECRET_PATTERNS",
    "is_secret_name",
    "redact",
    "redact_block",
    "redact_data",
    "secret_values",
    "tool_environ",
]

SECRET_PATTERNS: tuple[str, ...] = (
    "*_API_KEY",
    "*_APIKEY",
    "*API_KEY*",
    "*_KEY",
    "*_KEYS",
    "*_TOKEN",
    "*_TOKENS",
    "*TOKEN*",
    "*_SECRET",
    "*_SECRET_*",
    "*SECRET*",
    "*_PASSWORD",
    "*PASSWD*",
    "*_CREDENTIALS",
    "*_CREDENTIAL",
    "*_PRIVATE_KEY*",
    "*_AUTH",
    "*_DSN",
    "AWS_*",
    "AZURE_CLIENT_*",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "ANTHROPIC_*",
    "OPENAI_*",
    "*_SESSION",
    "*COOKIE*",
    "PGPASSWORD",
    "MYSQL_PWD",
)
# Never secrets, whatever the patterns say: the shell and the tools need them.
_ALWAYS_PASS = frozenset({"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "TERM", "PWD", "TMPDIR", "SSH_AUTH_SOCK"})
_MIN_REDACT = 8  # shorter values ("1", "true") would redact ordinary words


def _split(value: str | None) -> list[str]:
    return [p for p in re.split(r"[,\s]+", value or "") if p]


@functools.lru_cache(maxsize=16)
def _rules(secret_env: str, pass_env: str) -> tuple[re.Pattern[str], frozenset[str]]:
    """One compiled pattern for every secret name pattern, and the names passed on purpose.
    Redaction runs on every tool result, so the patterns are compiled once per setting."""
    patterns = (*SECRET_PATTERNS, *_split(secret_env))
    matcher = re.compile("|".join(f"(?:{fnmatch.translate(p.upper())})" for p in patterns))
    return matcher, frozenset(n.upper() for n in _split(pass_env))


def is_secret_name(name: str, extra: Iterable[str] = ()) -> bool:
    """True when `name` looks like a credential: it matches a pattern and is not passed on purpose."""
    upper = name.upper()
    matcher, passed = _rules(os.environ.get("IPY_AGENT_SECRET_ENV", ""), os.environ.get("IPY_AGENT_PASS_ENV", ""))
    if upper in _ALWAYS_PASS or upper in passed:
        return False
    return matcher.match(upper) is not None or any(fnmatch.fnmatchcase(upper, p.upper()) for p in extra)


def tool_environ(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a process a tool starts: `base` (default os.environ) minus secrets."""
    env = os.environ if base is None else base
    return {k: v for k, v in env.items() if not is_secret_name(k)}


_last_secrets: tuple[tuple[Any, ...], list[tuple[str, str]]] | None = None


def secret_values(base: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """(name, value) of the secret variables worth redacting, longest value first."""
    global _last_secrets
    env = os.environ if base is None else base
    # Every tool result is redacted: recompute only when the variables (or the two settings,
    # read from the kernel's own environment) changed since last time. os.environ is compared
    # through its own dict of encoded bytes: decoding every variable costs more than the check.
    raw = getattr(env, "_data", None)
    snapshot = dict(raw) if isinstance(raw, dict) else tuple(env.items())
    key = (snapshot, os.environ.get("IPY_AGENT_SECRET_ENV"), os.environ.get("IPY_AGENT_PASS_ENV"))
    if _last_secrets is not None and _last_secrets[0] == key:
        return list(_last_secrets[1])
    found = [(k, v) for k, v in env.items() if len(v) >= _MIN_REDACT and is_secret_name(k)]
    found.sort(key=lambda kv: -len(kv[1]))
    _last_secrets = (key, found)
    return list(found)


def redact(text: str, secrets: list[tuple[str, str]] | None = None) -> str:
    """`text` with every secret value replaced by `[redacted $NAME]`."""
    for name, value in secret_values() if secrets is None else secrets:
        if value in text:
            text = text.replace(value, f"[redacted ${name}]")
    return text


def redact_data(data: Any, secrets: list[tuple[str, str]] | None = None) -> Any:
    """A copy of JSON-like `data` (dicts, lists, strings) with secret values redacted."""
    secrets = secret_values() if secrets is None else secrets
    if not secrets:
        return data
    if isinstance(data, str):
        return redact(data, secrets)
    if isinstance(data, list):
        return [redact_data(x, secrets) for x in data]
    if isinstance(data, dict):
        return {k: redact_data(v, secrets) for k, v in data.items()}
    return data


def redact_block(block: dict[str, Any]) -> dict[str, Any]:
    """A tool_result with secret values redacted from its text (images are left alone)."""
    secrets = secret_values()
    if not secrets:
        return block
    content = block.get("content")
    if isinstance(content, str):
        new = redact(content, secrets)
        return block if new == content else {**block, "content": new}
    if isinstance(content, list):
        parts = [
            {**b, "text": redact(b["text"], secrets)} if isinstance(b, dict) and isinstance(b.get("text"), str) else b
            for b in content
        ]
        return {**block, "content": parts}
    return block
