"""Redaction of one 100 KB tool result with the environment's secrets in every form.

Every tool result is redacted before the model sees it. Ours looks for each secret by value
whatever the layout (ipy_agent/base/secret_search.py: every rev/tr form of it, each in hex,
base64 and base32, in canonical views of the text, and pieces that hold 10+ of its characters), and for URLs
with a password; the peer is each secret's exact value only (`str.replace` per value). Six
secrets, none present in the text: the common case.
"""

from __future__ import annotations

import os
import time

__all__ = ["SECRETS", "TEXT", "exact_only_seconds", "ours_seconds"]

SECRETS = {
    "ANTHROPIC_API_KEY": "sk-ant-api03-bench-0123456789abcdefghijklmnopqrstuvwxyz",
    "GITHUB_TOKEN": "ghp_benchTOKEN0123456789abcdefghijkl",
    "AWS_ACCESS_KEY_ID": "AKIABENCH0123456789",
    "AWS_SECRET_ACCESS_KEY": "bench/secret+access/key0123456789abcdefgh",
    "DATABASE_URL": "postgres://app:bench-db-password@db.internal:5432/app",
    "HF_TOKEN": "hf_benchTOKENabcdefghijklmnopqrstuvwxyz0123",
}
TEXT = "".join(
    f"line {i}: some ordinary tool output, paths /src/mod_{i}.py and numbers {i * 7}\n" for i in range(1400)
)[:100_000]


def _with_secrets() -> None:
    os.environ.update(SECRETS)


def ours_seconds(reps: int = 200) -> float:
    from ipy_agent.base.secrets import redact

    _with_secrets()
    redact(TEXT)  # the forms are built once per environment
    start = time.perf_counter()
    for _ in range(reps):
        redact(TEXT)
    return (time.perf_counter() - start) / reps


def exact_only_seconds(reps: int = 200) -> float:
    values = list(SECRETS.items())
    start = time.perf_counter()
    for _ in range(reps):
        text = TEXT
        for name, value in values:
            if value in text:
                text = text.replace(value, f"[redacted ${name}]")
    return (time.perf_counter() - start) / reps
