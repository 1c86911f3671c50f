"""Budgets in US dollars: what a run may spend, and the policy's limits per run, per day and per user.

`Agent(max_budget_usd=...)` (or `%agent --max-budget-usd`) limits one run; a managed policy
(config/policy.py) may set `perRunUsd`, `perDayUsd` and `perUserUsd`, and the smaller limit
holds. The check runs before each model request: a run that has reached a limit stops there
with `stop_reason="budget_exceeded"` and a message saying what was spent and what the limit is.
Spending per day and per user is counted across kernels in the person's ledger
(config/spending.py) while the policy sets such a limit. `Managed` is what an agent holds of
it all: the policy in force, the rules it added, the run's budget and spending.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from ipy_agent.config.policy import Policy, load_policy
from ipy_agent.config.spending import SpendingLedger
from ipy_agent.contract.tool_context import SandboxSetting
from ipy_agent.mcp import McpManager
from ipy_agent.models.base import Model, Priced, Usage, model_label
from ipy_agent.models.pricing import estimate_cost
from ipy_agent.permissions.decide import PermissionRules
from ipy_agent.permissions.rules import Rule
from ipy_agent.runtime.conversation import Conversation
from ipy_agent.runtime.trace import RunResult

from .turn import usage_delta

__all__ = ["Budget", "Managed", "usd_of"]


def usd_of(model: Model, usage: Usage) -> float:
    """The estimated cost of `usage` on `model` (0 for an offline or local model)."""
    if getattr(model, "offline", False):
        return 0.0
    if isinstance(model, Priced):
        return model.cost(usage).usd or 0.0
    return estimate_cost(str(getattr(model, "name", "") or ""), usage)


@dataclass(frozen=True, kw_only=True)
class Limit:
    kind: str  # "run", "day", "user"
    usd: float
    source: str  # "max_budget_usd", "managed policy /etc/..."


_WORDS = {"run": "this run", "day": "today", "user": "in all (this user)"}


@dataclass(kw_only=True)
class Budget:
    """The limits in force for the next run, and the ledger they are counted in."""

    limits: tuple[Limit, ...] = ()
    ledger: SpendingLedger | None = None

    @classmethod
    def of(cls, asked: float | None, policy: Policy, ledger: SpendingLedger | None = None) -> Budget:
        limits: list[Limit] = []
        run = policy.budget_limit("per_run", asked, "max_budget_usd")
        if run is not None:
            source = "max_budget_usd" if asked is not None and run == asked else policy.label
            limits.append(Limit(kind="run", usd=run, source=source))
        for kind, key in (("day", "per_day"), ("user", "per_user")):
            if (usd := policy.budget.get(key)) is not None:
                limits.append(Limit(kind=kind, usd=usd, source=policy.label))
        counted = any(limit.kind != "run" for limit in limits)
        return cls(limits=tuple(limits), ledger=(ledger or SpendingLedger()) if counted else None)

    def spent(self, run_usd: float) -> dict[str, float]:
        """What counts against each kind of limit, with this run's `run_usd` included."""
        day, total = self.ledger.spent() if self.ledger is not None else (0.0, 0.0)
        return {"run": run_usd, "day": day, "user": total}

    def exceeded(self, run_usd: float) -> str | None:
        """A message when a limit is reached, else None."""
        spent = self.spent(run_usd)
        for limit in self.limits:
            if spent[limit.kind] >= limit.usd:
                return (
                    f"Budget reached: spent ${spent[limit.kind]:.4f} {_WORDS[limit.kind]} of a "
                    f"${limit.usd:.2f} limit ({limit.source}); the run stopped before the next model request."
                )
        return None

    def record(self, usd: float) -> None:
        if self.ledger is not None:
            self.ledger.add(usd)

    def describe(self, run_usd: float) -> str:
        """'$0.0123 of $0.50 this run; $1.20 of $2.00 today' ('' without limits)."""
        spent = self.spent(run_usd)
        return "; ".join(f"${spent[x.kind]:.4f} of ${x.usd:.2f} {_WORDS[x.kind]}" for x in self.limits)


class Managed:
    """What the administrator's policy and the run's budget say about one agent's runs.

    Held by `Agent` as `agent.managed`: the policy in force (re-read before each run unless one
    was given), the rules it added, the run's own budget and what the run has spent so far."""

    def __init__(self, policy: Policy | None, max_budget_usd: float | None, mode: str) -> None:
        self.fixed = policy is not None
        self.policy = policy if policy is not None else load_policy()  # PolicyError: nothing runs
        self.policy.check_mode(mode, "permission_mode")
        self.max_budget_usd = self.check_budget(max_budget_usd)
        self.rules: list[Rule] = []  # the policy's rules, as added to the agent's
        self.run_start = Usage()  # the usage when the current (or last) run began
        self.budget = Budget()

    def check_budget(self, usd: float | None) -> float | None:
        self.policy.budget_limit("per_run", usd, "max_budget_usd")  # a bad value says so now
        return usd

    def apply(self, rules: PermissionRules, sandbox: SandboxSetting, mcp: McpManager) -> SandboxSetting:
        """Put the policy's rules and MCP filter in force; the sandbox setting it leaves."""
        self.rules = rules.replace(self.rules, self.policy.rules)
        mcp.blocked = self.policy.mcp_blocked
        return "always" if self.policy.check_sandbox(sandbox, "sandbox") == "always" else sandbox

    def enforce(
        self, rules: PermissionRules, sandbox: SandboxSetting, mcp: McpManager, mode: str, model: Model
    ) -> SandboxSetting:
        """Read the policy again (unless it was given; PolicyError when it cannot be read), put it
        in force, and raise PolicyViolation when this run's mode or model is not allowed."""
        if not self.fixed:
            self.policy = load_policy()
            sandbox = self.apply(rules, sandbox, mcp)
        self.policy.check_mode(mode, "permission_mode")
        if self.policy.models:
            self.policy.check_model(str(getattr(model, "name", "") or model_label(model)), "model")
        return sandbox

    def begin_run(self, usage: Usage) -> None:
        self.run_start = copy.copy(usage)
        self.budget = Budget.of(self.max_budget_usd, self.policy)

    def describe(self, conversation: Conversation) -> str:
        """Spending against the limits in force ('' when there are none)."""
        budget = Budget.of(self.max_budget_usd, self.policy) if not self.budget.limits else self.budget
        return budget.describe(self.run_cost(conversation.model, conversation.usage))

    def run_cost(self, model: Model, usage: Usage) -> float:
        """What the run in progress (or the last one) has cost so far, in US dollars (estimated)."""
        return usd_of(model, usage_delta(usage, self.run_start))

    def stop(self, model: Model, usage: Usage, turns: int) -> RunResult | None:
        """The run's end when a budget is reached, before the next request; else None."""
        over = self.budget.exceeded(self.run_cost(model, usage))
        if over is None:
            return None
        return RunResult(
            stop_reason="budget_exceeded", text=over, turns=turns, error=over, error_kind="budget_exceeded"
        )
