"""The one meter for money: every model request of a run passes it, whoever makes the request.

A run's `Meter` holds the limits in force (the run's own `max_budget_usd` and the managed
policy's per run, per day and per user: `Limit`) and what has been spent against them. The
main loop's requests, a Task subagent's at any depth (it is handed its parent's meter),
compaction's summary requests and the context manager's retry after "prompt is too long" all
go through `Meter.stream`, the one place in the package that calls a model's `stream` for a
run (context/manager.py calls it; a test checks that nothing else does).

Before a request is sent the meter holds the most it can cost: its estimated input tokens plus
the model's `max_tokens` of output, at the model's price. The hold is checked against every
limit together with what is spent and what other requests still hold, and taken with no await
in between, so parallel Tasks cannot each pass the check on the same spending; a request whose
hold does not fit is refused before it is sent (`BudgetRefused`, a `ModelError` of kind
"budget_exceeded" whose message names the limit, what was spent and the cap). After the
request the hold is settled with the usage the model reported; a reply that started but ended
without its usage (an interrupt, a connection cut mid-stream) is charged the whole hold, and
a request that failed before any reply (refused, unreachable) is charged nothing. The SDK's own
retries happen inside one `stream` call, on requests the API answered with an error, which are
not billed. Token counting (`count_tokens`) generates nothing and is free.

Spending per day and per user is counted in a `Ledger` (config/spending.py: the person's file)
while a limit needs it. The meter is the kernel's own count: a budget that must hold against
the person is enforced by the key gateway (gateway/), which does the same on its server.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from ipy_agent.models.base import MessageComplete, Model, ModelError, ModelEvent, ModelRequest, Priced, Usage
from ipy_agent.models.pricing import estimate_cost

__all__ = [
    "DEFAULT_MAX_OUTPUT",
    "BudgetRefused",
    "Ledger",
    "Limit",
    "LimitKind",
    "Meter",
    "request_maximum",
    "usd_of",
]

LimitKind = Literal["run", "day", "user"]
# Output tokens held for a model that does not say its `max_tokens` (AnthropicModel's default).
DEFAULT_MAX_OUTPUT = 16_000

_WORDS: dict[LimitKind, str] = {"run": "this run", "day": "today", "user": "in all (this user)"}


@dataclass(frozen=True, kw_only=True)
class Limit:
    """One budget in force: per run, per day or per user, in US dollars, and who set it."""

    kind: LimitKind
    usd: float
    source: str  # "max_budget_usd", "managed policy /etc/ipy_agent/managed-settings.json"


class Ledger(Protocol):
    """Spending kept across runs and kernels (config/spending.py: `SpendingLedger`)."""

    def spent(self) -> tuple[float, float]:
        """(today, in all) in US dollars."""
        ...

    def add(self, usd: float) -> None: ...


class BudgetRefused(ModelError):
    """A request the meter did not send: its held maximum does not fit `limit`."""

    def __init__(self, message: str, *, limit: Limit, spent: float, held: float, asked: float) -> None:
        super().__init__(message, kind="budget_exceeded")
        self.limit = limit
        self.spent = spent  # spent against the limit, before this request
        self.held = held  # held by other requests still running
        self.asked = asked  # the most this request could cost


def usd_of(model: Model, usage: Usage) -> float:
    """The estimated cost of `usage` on `model` (0 for an offline or local model)."""
    if getattr(model, "offline", False):
        return 0.0
    if isinstance(model, Priced):
        return model.cost(usage).usd or 0.0
    return estimate_cost(str(getattr(model, "name", "") or ""), usage)


def max_output(model: Model) -> int:
    """The output tokens a request to `model` may produce: its `max_tokens`, else the default."""
    most = getattr(model, "max_tokens", None)
    return most if isinstance(most, int) and not isinstance(most, bool) and most > 0 else DEFAULT_MAX_OUTPUT


def request_maximum(model: Model, input_tokens: int) -> float:
    """The most one request can cost: `input_tokens` and the model's whole output allowance."""
    return usd_of(model, Usage(input_tokens=max(0, input_tokens), output_tokens=max_output(model)))


class Meter:
    """The limits of one run and what the run's requests have spent and hold against them.

    One per run (loop/spend.py makes it when a run begins); a Task's subagent uses its
    parent's, so parallel Tasks share it. Safe from several threads."""

    def __init__(self, limits: Sequence[Limit] = (), ledger: Ledger | None = None) -> None:
        self.limits = tuple(limits)
        self.ledger = ledger
        self.run_usd = 0.0  # settled spending of this run
        self.held_usd = 0.0  # held by requests in flight
        self.requests = 0  # requests sent
        self.refused = 0  # requests refused
        self._lock = threading.Lock()

    def spent(self) -> dict[LimitKind, float]:
        """What counts against each kind of limit now (settled spending only)."""
        day, total = self.ledger.spent() if self.ledger is not None else (0.0, 0.0)
        return {"run": self.run_usd, "day": day, "user": total}

    def reached(self) -> str | None:
        """A message when a limit is already spent, else None (checked before each turn)."""
        spent = self.spent()
        for limit in self.limits:
            if spent[limit.kind] >= limit.usd:
                return (
                    f"Budget reached: spent ${spent[limit.kind]:.4f} {_WORDS[limit.kind]} of a ${limit.usd:.2f} "
                    f"limit ({limit.source}); the run stopped before the next model request."
                )
        return None

    def hold(self, usd: float, model: Model) -> None:
        """Hold `usd` for a request, or raise BudgetRefused naming the limit it does not fit."""
        with self._lock:
            spent = self.spent()
            for limit in self.limits:
                if spent[limit.kind] >= limit.usd or spent[limit.kind] + self.held_usd + usd > limit.usd:
                    self.refused += 1
                    raise BudgetRefused(
                        self._refusal(limit, spent[limit.kind], usd, model),
                        limit=limit,
                        spent=spent[limit.kind],
                        held=self.held_usd,
                        asked=usd,
                    )
            self.held_usd += usd
            self.requests += 1

    def _refusal(self, limit: Limit, spent: float, usd: float, model: Model) -> str:
        busy = f", ${self.held_usd:.4f} more is held by requests still running" if self.held_usd > 0 else ""
        return (
            f"Budget reached: spent ${spent:.4f} {_WORDS[limit.kind]} of a ${limit.usd:.2f} limit "
            f"({limit.source}){busy}, and the next model request could cost up to ${usd:.4f} (its input and "
            f"{max_output(model):,} tokens of output), so it was not sent."
        )

    def settle(self, held: float, usd: float) -> None:
        """A request that held `held` has ended, costing `usd`."""
        with self._lock:
            self.held_usd = max(0.0, self.held_usd - held)
            self.run_usd += usd
        if usd > 0 and self.ledger is not None:
            self.ledger.add(usd)

    async def stream(self, model: Model, request: ModelRequest, *, input_tokens: int) -> AsyncIterator[ModelEvent]:
        """`model.stream(request)` within the budget: held before, settled after (see the module)."""
        most = request_maximum(model, input_tokens)
        self.hold(most, model)
        cost: float | None = None
        started = False
        try:
            async for event in model.stream(request):
                started = True
                if isinstance(event, MessageComplete):
                    cost = usd_of(model, event.usage)
                yield event
        finally:
            self.settle(most, cost if cost is not None else (most if started else 0.0))

    def describe(self) -> str:
        """'$0.0123 of $0.50 this run; $1.20 of $2.00 today' ('' without limits)."""
        spent = self.spent()
        return "; ".join(f"${spent[x.kind]:.4f} of ${x.usd:.2f} {_WORDS[x.kind]}" for x in self.limits)
