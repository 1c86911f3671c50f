"""Credentials in the environment: kept out of the processes tools start, and out of the text.

The kernel that runs the agent holds `ANTHROPIC_API_KEY`, and often other keys and tokens. A
shell command the model writes must not see them (`env`, `printenv`, a script that posts them
somewhere), so every process a tool starts gets `tool_environ()`: the environment without the
variables that look like credentials. And should a value reach a tool result anyway (a file
that contains it, a program that found it elsewhere), `redact` replaces it before the model,
the trace, a saved conversation or the notebook see it.

A variable is a credential by its name or by its value:
- names are shell-style patterns, matched case-insensitively: `SECRET_PATTERNS`, plus any
  listed (comma or space separated) in `IPY_AGENT_SECRET_ENV`;
- a value holding a URL with a password (`https://user:pass@host`, a proxy, a database URL
  under any name, `PIP_INDEX_URL` with credentials) is one whatever its name.
A name listed in `IPY_AGENT_PASS_ENV` is passed through even so (e.g. `GH_TOKEN` for approved
`gh` commands); the person sets both, the model cannot (no tool changes the kernel's environment).

Redaction finds a secret by its value, in the forms and layouts a shell prints it
(`secret_search`: reversed, case-changed, rot13, hex, byte-swapped hex, base64, base32, with a
character class deleted; wrapped, dumped by `od` / `xxd` / `hexdump`, or cut into pieces of at
least `FRAGMENT` characters printed apart). It also removes the userinfo of any
`scheme://user:password@host` in any text, whether or not the password is known. The forms are
built once each time the environment changes, and a result costs a few C-level passes over its
text whatever the number of secrets.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ipy_agent.base.secret_search import SecretIndex, secret_forms
from ipy_agent.history.blocks import ResultPart, ToolResultBlock

__all__ = [
    "SECRET_PATTERNS",
    "Redactor",
    "encoded_forms",
    "is_secret",
    "is_secret_name",
    "looks_like_credential",
    "redact",
    "redact_block",
    "redact_data",
    "redactor",
    "secret_values",
    "tool_environ",
    "url_credentials",
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
    "*PASS",
    "*PASSPHRASE*",
    "*_PAT",
    "*JWT*",
    "*_CREDENTIALS",
    "*_CREDENTIAL",
    "*_PRIVATE_KEY*",
    "*_AUTH",
    "*_DSN",
    "*DATABASE_URL*",
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


# `scheme://user:password@host`: the userinfo, up to the `@` before the host. The user part may
# be empty (`redis://:pw@host`); the password may not.
_USERINFO = re.compile(
    r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]{0,30}://)(?P<user>[^\s/?#@:\"'<>]*):(?P<password>[^\s/?#@\"'<>]+)@"
)


def url_credentials(text: str) -> list[tuple[str, str]]:
    """(user, password) of each `scheme://user:password@host` in `text`."""
    if "@" not in text or "://" not in text:
        return []
    return [(m.group("user"), m.group("password")) for m in _USERINFO.finditer(text)]


def is_secret(name: str, value: str) -> bool:
    """A credential by its name, or by its value (a URL with a password), unless passed on purpose."""
    upper = name.upper()
    _, passed = _rules(os.environ.get("IPY_AGENT_SECRET_ENV", ""), os.environ.get("IPY_AGENT_PASS_ENV", ""))
    if upper in _ALWAYS_PASS or upper in passed:
        return False
    return is_secret_name(name) or bool(url_credentials(value))


def tool_environ(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a process a tool starts: `base` (default os.environ) minus secrets."""
    env = os.environ if base is None else base
    return {k: v for k, v in env.items() if not is_secret(k, v)}


def encoded_forms(value: str) -> list[tuple[str, str]]:
    """(text, how) of the ways a program may print `value` (see `secret_search.secret_forms`);
    forms shorter than the value's own minimum are left out."""
    return [(text, how) for text, how in secret_forms(value) if len(text) >= _MIN_REDACT]


@dataclass(frozen=True)
class Redactor:
    """Every secret's every form, built once per environment (`SecretIndex`): a text is looked
    at in canonical views (no whitespace, one case) through one set of 8-byte grams, whatever
    the number of secrets and forms, and each span that holds a form or a piece of one of at
    least `FRAGMENT` characters is replaced."""

    secrets: tuple[tuple[str, str], ...]  # (name, value), longest value first
    index: SecretIndex

    @classmethod
    def build(cls, secrets: list[tuple[str, str]]) -> Redactor:
        return cls(secrets=tuple(secrets), index=SecretIndex(secrets))

    def found(self, text: str) -> list[str]:
        """What replaces each span of `text` that holds a secret (empty: none does)."""
        return [f.label for f in self.index.find(text)]

    def __call__(self, text: str) -> str:
        if spans := self.index.find(text):
            out: list[str] = []
            last = 0
            for f in spans:
                out += [text[last : f.start], f.label]
                last = f.end
            out.append(text[last:])
            text = "".join(out)
        if "@" in text and "://" in text:
            text = _USERINFO.sub(lambda m: f"{m.group('scheme')}[redacted credentials]@", text)
        return text


_last: tuple[tuple[Any, ...], list[tuple[str, str]], Redactor] | None = None


def _current(base: Mapping[str, str] | None = None) -> tuple[list[tuple[str, str]], Redactor]:
    global _last
    env = os.environ if base is None else base
    # Every tool result is redacted: recompute only when the variables (or the two settings,
    # read from the kernel's own environment) changed since last time. os.environ is compared
    # through its own dict of encoded bytes: decoding every variable costs more than the check.
    raw = getattr(env, "_data", None)
    snapshot = dict(raw) if isinstance(raw, dict) else tuple(env.items())
    key = (snapshot, os.environ.get("IPY_AGENT_SECRET_ENV"), os.environ.get("IPY_AGENT_PASS_ENV"))
    if _last is not None and _last[0] == key:
        return _last[1], _last[2]
    found: list[tuple[str, str]] = []
    for k, v in env.items():
        if not is_secret(k, v):
            continue
        if len(v) >= _MIN_REDACT:
            found.append((k, v))
        for user, password in url_credentials(v):
            # The password alone, and `user:password` as an HTTP Basic header carries it (base64).
            found += [(k, x) for x in (password, f"{user}:{password}") if len(x) >= _MIN_REDACT]
    found = list(dict.fromkeys(found))
    found.sort(key=lambda kv: -len(kv[1]))
    # Another variable changed (a library setting its own): the secrets, and so the index, stay.
    same = _last is not None and _last[1] == found
    _last = (key, found, _last[2] if same and _last is not None else Redactor.build(found))
    return found, _last[2]


def secret_values(base: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """(name, value) of the secret variables worth redacting, longest value first."""
    return list(_current(base)[0])


def redactor() -> Redactor:
    """The redactor for the environment as it is now (built again only when it changed)."""
    return _current()[1]


def redact(text: str, secrets: list[tuple[str, str]] | None = None) -> str:
    """`text` with every secret value, in every form, replaced by `[redacted $NAME ...]`, and
    the userinfo of every URL with a password by `[redacted credentials]`."""
    return (redactor() if secrets is None else Redactor.build(secrets))(text)


# The shapes well-known credentials have, whoever holds them: API keys and tokens by their
# vendor prefixes, JWTs, private keys in PEM.
_CREDENTIAL_SHAPES = re.compile(
    r"sk-(?:ant-)?[A-Za-z0-9_\-]{16,}"
    r"|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_\-]{16,}"
    r"|xox[abprs]-[A-Za-z0-9\-]{10,}|(?:AKIA|ASIA)[0-9A-Z]{16}|AIza[0-9A-Za-z_\-]{30,}|ya29\.[0-9A-Za-z_\-]{20,}"
    r"|hf_[A-Za-z0-9]{30,}|npm_[A-Za-z0-9]{30,}|pypi-[A-Za-z0-9_\-]{40,}"
    r"|eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----"
)


def looks_like_credential(text: str) -> bool:
    """Whether `text` holds a secret of the environment (in any form it is redacted in), a URL
    with a password, or something shaped like a well-known kind of credential."""
    if redactor().found(text):
        return True
    return bool(url_credentials(text)) or _CREDENTIAL_SHAPES.search(text) is not None


def redact_data(data: Any, secrets: list[tuple[str, str]] | None = None) -> Any:
    """A copy of JSON-like `data` (dicts, lists, strings) with secret values redacted."""
    return _redact_data(data, redactor() if secrets is None else Redactor.build(secrets))


def _redact_data(data: Any, r: Redactor) -> Any:
    if isinstance(data, str):
        return r(data)
    if isinstance(data, list):
        return [_redact_data(x, r) for x in data]
    if isinstance(data, dict):
        return {k: _redact_data(v, r) for k, v in data.items()}
    return data


def redact_block(block: ToolResultBlock) -> ToolResultBlock:
    """A tool_result with secret values redacted from its text (images are left alone)."""
    r = redactor()
    content = block.get("content")
    if isinstance(content, str):
        new = r(content)
        return block if new == content else {**block, "content": new}
    if isinstance(content, list):
        parts: list[ResultPart] = [
            {**b, "text": r(b["text"])}
            if isinstance(b, dict) and isinstance(b.get("text"), str) and b["type"] == "text"
            else b
            for b in content
        ]
        return {**block, "content": parts}
    return block
