"""What a request may cost and what it is charged: the budgets, the hold of a request in flight,
the usage read from a response as it passes, and the refusal of a person at a limit.

A request holds the most it can cost (`Hold`: its input at about three bytes a token and its
`max_tokens` of output, at the model's list price). Its response is charged its reported usage
only when that usage arrived whole (`SseUsage.final`: a stream's `message_delta`, or a
non-streamed body that parses with its usage); otherwise the whole hold (server.py).
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Literal

from ipy_agent.config.policy import Policy
from ipy_agent.history.blocks import JsonObject, JsonValue
from ipy_agent.models.base import Usage

__all__ = [
    "BudgetRefusal",
    "Hold",
    "Limits",
    "SseUsage",
    "max_tokens_of",
    "over_budget",
    "strictest",
    "usage_of",
]

_TOKENS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
# A request body that says nothing of its output holds none: the API refuses it without max_tokens.
_NO_MAX_TOKENS = 0


@dataclass(frozen=True, kw_only=True)
class Limits:
    """Budgets per person in US dollars: per day and in all (None: no limit)."""

    per_day: float | None = None
    per_user: float | None = None


@dataclass(frozen=True, kw_only=True)
class Hold:
    """The most one request can cost, held while it runs and charged if its usage never arrives;
    `id` is its row in the store's `holds`."""

    id: int
    model: str
    input_tokens: int
    output_tokens: int
    usd: float


@dataclass(frozen=True, kw_only=True)
class BudgetRefusal:
    """A person at a limit: which one, what was spent and held, the cap, and when it resets."""

    limit: Literal["per_day", "per_user"]
    spent: float
    held: float
    cap: float
    resets_at: dt.datetime | None  # None: it does not reset (a budget in all)
    message: str

    def body(self) -> JsonObject:
        return {
            "type": "error",
            "error": {
                "type": "budget_exceeded_error",
                "message": self.message,
                "limit": self.limit,
                "spent_usd": round(self.spent, 6),
                "held_usd": round(self.held, 6),
                "limit_usd": self.cap,
                "resets_at": self.resets_at.isoformat().replace("+00:00", "Z") if self.resets_at else None,
            },
        }


class SseUsage:
    """Reads a Messages API event stream as it passes, for the model and its usage; `final` once
    the stream's final usage (its `message_delta`) has arrived."""

    def __init__(self) -> None:
        self._buffer = b""
        self.model = ""
        self.tokens: dict[str, int] = {}
        self.final = False

    def feed(self, chunk: bytes) -> None:
        self._buffer += chunk
        while b"\n\n" in self._buffer:
            event, self._buffer = self._buffer.split(b"\n\n", 1)
            for line in event.split(b"\n"):
                if line.startswith(b"data:"):
                    self._take(line[5:].strip())

    def _take(self, data: bytes) -> None:
        try:
            payload = json.loads(data)
        except ValueError:
            return
        if not isinstance(payload, dict):
            return
        if payload.get("type") == "message_start":
            message = _object(payload.get("message"))
            self.model = str(message.get("model") or "")
            self.read(_object(message.get("usage")))
        elif payload.get("type") == "message_delta":
            self.final = self.read(_object(payload.get("usage"))) or self.final

    def read(self, usage: JsonObject) -> bool:
        """Take the counts of `usage`; whether it held the output's count (the final usage)."""
        for key in _TOKENS:
            if isinstance(count := usage.get(key), int):
                self.tokens[key] = count  # message_delta's counts are cumulative
        return isinstance(usage.get("output_tokens"), int)

    def read_body(self, body: bytes) -> None:
        """A non-streamed response's whole body; `final` when it parses with its usage."""
        try:
            message = json.loads(body or b"{}")
        except ValueError:
            return  # cut short: no usage
        if isinstance(message, dict) and isinstance(usage := message.get("usage"), dict):
            self.model = str(message.get("model") or "")
            self.final = self.read(usage)


def over_budget(user: str, day: float, total: float, held: float, limits: Limits) -> BudgetRefusal | None:
    """The refusal of `user`, who spent `day` today and `total` in all and holds `held`, at a limit."""
    busy = f" (and ${held:.4f} is held by requests still running)" if held else ""
    if limits.per_day is not None and day + held >= limits.per_day:
        midnight = dt.datetime.combine(dt.datetime.now(dt.UTC).date() + dt.timedelta(days=1), dt.time(), dt.UTC)
        return BudgetRefusal(
            limit="per_day",
            spent=day,
            held=held,
            cap=limits.per_day,
            resets_at=midnight,
            message=f"{user} has spent ${day:.4f} today{busy} of a ${limits.per_day:.2f} daily budget; "
            "it resets at 00:00 UTC.",
        )
    if limits.per_user is not None and total + held >= limits.per_user:
        return BudgetRefusal(
            limit="per_user",
            spent=total,
            held=held,
            cap=limits.per_user,
            resets_at=None,
            message=f"{user} has spent ${total:.4f}{busy} of a ${limits.per_user:.2f} budget in all; "
            "it does not reset: ask the administrator for more.",
        )
    return None


def _object(value: JsonValue | None) -> JsonObject:
    return value if isinstance(value, dict) else {}


def usage_of(tokens: dict[str, int]) -> Usage:
    return Usage(**{k: tokens.get(k, 0) for k in _TOKENS})


def max_tokens_of(request: JsonObject) -> int:
    value = request.get("max_tokens")
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else _NO_MAX_TOKENS


def strictest(limits: Limits, policy: Policy) -> Limits:
    """The command line's limits and the policy's per day and per user, the smaller of each."""

    def smaller(a: float | None, b: float | None) -> float | None:
        return b if a is None else a if b is None else min(a, b)

    return Limits(
        per_day=smaller(limits.per_day, policy.budget.get("per_day")),
        per_user=smaller(limits.per_user, policy.budget.get("per_user")),
    )
