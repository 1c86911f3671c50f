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

Redaction finds a secret's value as it is and as a program would print it encoded: base64
(standard and URL-safe, at each of the three alignments a value can have inside a longer
encoded text), hex (either case) and reversed. It also removes the userinfo of any
`scheme://user:password@host` in any text, whether or not the password is known. The encoded
forms are built once each time the environment changes, and one regular expression finds all
of them, so a result costs one scan of its text.
"""

from __future__ import annotations

import base64
import fnmatch
import functools
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

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
    """(text, how) of the ways a program may print `value`: as it is, base64 (standard and
    URL-safe, each alignment: only the characters that depend on the value alone), hex in
    either case, and reversed. Forms shorter than the value's own minimum are left out."""
    data = value.encode("utf-8", "surrogatepass")
    forms = [(value, ""), (value[::-1], "reversed"), (data.hex(), "hex"), (data.hex().upper(), "hex")]
    n = len(data)
    for pad in range(3):
        encoded = base64.b64encode(b"\0" * pad + data).decode("ascii")
        start, end = -(-8 * pad // 6), 8 * (pad + n) // 6
        piece = encoded[start:end]
        forms.append((piece, "base64"))
        forms.append((piece.translate(_URLSAFE), "base64"))
    return [(text, how) for text, how in dict.fromkeys(forms) if len(text) >= _MIN_REDACT]


_URLSAFE = str.maketrans("+/", "-_")


@dataclass(frozen=True)
class Redactor:
    """Every secret's every form; built once per environment. A text is searched for each form
    with `in` (a fast substring search in C): one scan per form, far cheaper than one regular
    expression of hundreds of alternatives; only the forms found are then replaced."""

    secrets: tuple[tuple[str, str], ...]  # (name, value), longest value first
    labels: dict[str, str]  # form -> what replaces it
    forms: tuple[str, ...]  # longest first: the longest form wins where two overlap
    encoded: tuple[str, ...]  # the base64 and hex forms: those a program may wrap across lines

    @classmethod
    def build(cls, secrets: list[tuple[str, str]]) -> Redactor:
        labels: dict[str, str] = {}
        wrappable: set[str] = set()
        for name, value in secrets:
            for form, how in encoded_forms(value):
                labels.setdefault(form, f"[redacted ${name}{f' ({how})' if how else ''}]")
                if how in ("base64", "hex"):
                    wrappable.add(form)
        forms = tuple(sorted(labels, key=len, reverse=True))
        return cls(
            secrets=tuple(secrets), labels=labels, forms=forms, encoded=tuple(f for f in forms if f in wrappable)
        )

    def found(self, text: str) -> list[str]:
        """The forms that occur in `text`."""
        return [f for f in self.forms if f in text]

    def __call__(self, text: str) -> str:
        if self.encoded and "\n" in text:
            text = self._wrapped(text)  # first: a form replaced inside a run would hide the rest of it
        if present := self.found(text):
            text = _alternation(tuple(present)).sub(lambda m: self.labels[m.group()], text)
        if "@" in text and "://" in text:
            text = _USERINFO.sub(lambda m: f"{m.group('scheme')}[redacted credentials]@", text)
        return text

    def _wrapped(self, text: str) -> str:
        """Forms broken across lines (`base64` wraps at 76 columns, `xxd -p` at 60): only runs
        of whole lines made of base64 or hex characters can hold one, so only those are joined
        and searched, and a form found is replaced across the line breaks it spans."""
        out: list[str] = []
        last = 0
        for start, end in _wrapped_runs(text):
            block = text[start:end]
            joined = block.replace("\r", "").replace("\n", "")
            present = [f for f in self.encoded if f in joined]
            if not present:
                continue
            out += [text[last:start], _rejoin(block, joined, present, self.labels)]
            last = end
        if not out:
            return text
        out.append(text[last:])
        return "".join(out)


_B64_LINE = re.compile(r"[A-Za-z0-9+/=_\-]+\r?")


def _wrapped_runs(text: str) -> list[tuple[int, int]]:
    """(start, end) of each run of two or more whole lines of base64 / hex characters whose first
    line is as long as wrapped output's are (76 for base64, 64 for PEM, 60 for `xxd -p`). Lines
    are split once and each is matched whole: ordinary text costs one failed match per line."""
    runs: list[tuple[int, int]] = []
    pos, start, count = 0, -1, 0
    for line in text.split("\n"):
        end = pos + len(line)
        if _B64_LINE.fullmatch(line) and (count > 0 or len(line) >= 32):
            if count == 0:
                start = pos
            count += 1
        else:
            if count >= 2:
                runs.append((start, pos - 1))
            count = 0
        pos = end + 1
    if count >= 2:
        runs.append((start, len(text)))
    return runs


def _rejoin(block: str, joined: str, present: list[str], labels: dict[str, str]) -> str:
    """`block` with each form found in `joined` (the block without its line breaks) replaced."""
    breaks = [i for i, c in enumerate(block) if c in "\r\n"]

    def original(j: int) -> int:  # position j of `joined` in `block`
        lo, hi = 0, len(breaks)
        while lo < hi:  # the number of breaks b with b - (its index) <= j
            mid = (lo + hi) // 2
            if breaks[mid] - mid <= j:
                lo = mid + 1
            else:
                hi = mid
        return j + lo

    out: list[str] = []
    last = 0
    for m in _alternation(tuple(present)).finditer(joined):
        start, end = original(m.start()), original(m.end() - 1) + 1
        out += [block[last:start], labels[m.group()]]
        last = end
    out.append(block[last:])
    return "".join(out)


@functools.lru_cache(maxsize=64)
def _alternation(forms: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(map(re.escape, forms)))


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
    _last = (key, found, Redactor.build(found))
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


def redact_block(block: dict[str, Any]) -> dict[str, Any]:
    """A tool_result with secret values redacted from its text (images are left alone)."""
    r = redactor()
    content = block.get("content")
    if isinstance(content, str):
        new = r(content)
        return block if new == content else {**block, "content": new}
    if isinstance(content, list):
        parts = [
            {**b, "text": r(b["text"])} if isinstance(b, dict) and isinstance(b.get("text"), str) else b
            for b in content
        ]
        return {**block, "content": parts}
    return block
