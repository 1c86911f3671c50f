"""Budgets in US dollars and the managed policy in force for one agent.

`Agent(max_budget_usd=...)` (or `%agent --max-budget-usd`) limits one run; a managed policy
(config/policy.py) may set `perRunUsd`, `perDayUsd` and `perUserUsd`, and the smaller per-run
limit holds. They are enforced by the run's meter (runtime/meter.py), which every model request
of the run passes: this module makes it when a run begins (`Managed.begin_run`) and hands it to
a Task's subagent (`Managed.share`), so a run and all its subagents spend one budget. A run at a
limit stops before its next turn with `stop_reason="budget_exceeded"` and a message saying what
was spent and what the limit is; a request whose held maximum does not fit is refused by the
meter with the same words. Spending per day and per user is counted across kernels in the
person's ledger (config/spending.py) while the policy sets such a limit. `Managed` is what an
agent holds of it all: the policy in force, the rules it added, the run's meter.
"""

from __future__ import annotations

from ipy_agent.config.policy import Policy, load_policy
from ipy_agent.config.spending import SpendingLedger
from ipy_agent.contract.tool_context import SandboxSetting
from ipy_agent.mcp import McpManager
from ipy_agent.models.base import Model, model_label
from ipy_agent.permissions.rules import PermissionRules, Rule
from ipy_agent.runtime.meter import Limit, LimitKind, Meter
from ipy_agent.runtime.trace import RunResult

__all__ = ["Managed", "limits_of"]


def limits_of(asked: float | None, policy: Policy) -> tuple[Limit, ...]:
    """The limits in force: the run's own `asked` and the policy's per run (the smaller wins),
    per day and per user."""
    limits: list[Limit] = []
    run = policy.budget_limit("per_run", asked, "max_budget_usd")
    if run is not None:
        source = "max_budget_usd" if asked is not None and run == asked else policy.label
        limits.append(Limit(kind="run", usd=run, source=source))
    kinds: tuple[tuple[LimitKind, str], ...] = (("day", "per_day"), ("user", "per_user"))
    for kind, key in kinds:
        if (usd := policy.budget.get(key)) is not None:
            limits.append(Limit(kind=kind, usd=usd, source=policy.label))
    return tuple(limits)


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
        self.shared = False  # a Task's subagent runs on its parent's meter
        self.meter = self.new_meter()  # the current (or last) run's; every model request passes it

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

    def new_meter(self) -> Meter:
        """A meter with the limits in force and, when a limit needs it, the person's ledger."""
        limits = limits_of(self.max_budget_usd, self.policy)
        counted = any(limit.kind != "run" for limit in limits)
        return Meter(limits, SpendingLedger() if counted else None)

    def begin_run(self) -> None:
        """A run begins: a new meter, unless this agent runs on its parent's (a Task's subagent)."""
        if not self.shared:
            self.meter = self.new_meter()

    def share(self, meter: Meter) -> None:
        """Run on `meter` (the parent's, for a Task's subagent): one budget for the whole run."""
        self.meter, self.shared = meter, True

    def describe(self) -> str:
        """Spending against the limits in force ('' when there are none)."""
        return (self.meter if self.meter.limits else self.new_meter()).describe()

    def stop(self, turns: int) -> RunResult | None:
        """The run's end when a limit is already spent, before the next request; else None."""
        over = self.meter.reached()
        if over is None:
            return None
        return RunResult(
            stop_reason="budget_exceeded", text=over, turns=turns, error=over, error_kind="budget_exceeded"
        )
