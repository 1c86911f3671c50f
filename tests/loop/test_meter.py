"""One meter for money: every model request of a run passes the run's meter (runtime/meter.py),
whoever makes it: the loop, ten parallel Task subagents, compaction's summary request.

The attacks: a model that fans out into ten parallel Tasks, each spending; a run whose
compaction summary costs more than the budget has left; a policy's per-run limit that each Task
used to get whole. Each test has a control that turns the defence off (a subagent on a meter of
its own, as each loop had its own budget before; a meter that never refuses) and shows the same
run overspend. The models are ScriptedModels priced as Sonnet ($3 / $15 a million tokens) that
report usage, never more than the meter held for the request."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ipy_agent import Agent, ScriptedModel
from ipy_agent.config.policy import POLICY_ENV
from ipy_agent.config.spending import SpendingLedger
from ipy_agent.context.manager import ContextManager
from ipy_agent.history.messages import history_problems
from ipy_agent.loop.spend import Managed
from ipy_agent.loop.subagent import EXPLORE, SubagentType, TaskTool
from ipy_agent.models.base import MessageComplete, ModelError, ModelEvent, ModelRequest, Usage
from ipy_agent.models.pricing import estimate_cost
from ipy_agent.runtime.meter import Meter, request_maximum
from ipy_agent.tools import builtin_tools
from tests.support.tools import write_tree
from tests.support.transcript import all_results, result_text, use

SONNET = "claude-sonnet-4-5"
MAX_TOKENS = 4_000
# A request's usage: a small prompt and the whole output allowance, $0.0615 on Sonnet. Its held
# maximum (the estimated prompt, more than 500 tokens with the tool definitions, and 4,000
# tokens of output) is never less.
SPENT = {"input_tokens": 500, "output_tokens": MAX_TOKENS}
COST = estimate_cost(SONNET, Usage(**SPENT))


class PricedScript(ScriptedModel):
    """A scripted model that costs what a Sonnet costs; a compaction summary reports `summary`."""

    offline = False
    max_tokens = MAX_TOKENS

    def __init__(self, turns: list[Any], *, summary: Usage | None = None) -> None:
        super().__init__(turns, name=SONNET)
        self.summary = summary

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        async for event in super().stream(request):
            if request.purpose == "compaction" and self.summary is not None and isinstance(event, MessageComplete):
                event = replace(event, usage=self.summary, measured=True)
            yield event


def reply(blocks: str | list[dict[str, Any]]) -> dict[str, Any]:
    return {"reply": blocks, "usage": SPENT}


def explorer(n: int) -> SubagentType:
    """A read-only subagent type with its own script: two Globs, then a report (three requests)."""
    turns = [
        reply([use("Glob", f"g{n}a", pattern="*.py")]),
        reply([use("Glob", f"g{n}b", pattern="*.txt")]),
        reply(f"report {n}"),
    ]
    return replace(EXPLORE, name=f"explore{n}", model=PricedScript(turns))


def fan_out(tmp_path: Path, **agent_kw: Any) -> tuple[Agent, list[SubagentType]]:
    """A parent whose first reply starts ten parallel Tasks, each of its own explorer type."""
    write_tree(tmp_path, {"a.py": "x = 1\n", "b.txt": "b\n"})
    types = [explorer(n) for n in range(10)]
    tasks = [
        use("Task", f"t{n}", description=f"look {n}", prompt="look", subagent_type=f"explore{n}") for n in range(10)
    ]
    model = PricedScript([reply(tasks), reply("done")])
    return Agent(model, tools=[*builtin_tools(), TaskTool(types)], cwd=tmp_path, **agent_kw), types


def spent(agent: Agent) -> float:
    """What the run's requests cost, from the usage the models reported (the subagents' included)."""
    return estimate_cost(SONNET, agent.usage)


def subagent_requests(types: list[SubagentType]) -> int:
    return sum(len(t.model.requests) for t in types if isinstance(t.model, ScriptedModel))


def no_shared_meter(monkeypatch: pytest.MonkeyPatch) -> None:
    """The defence off: each subagent runs on a meter of its own, as each loop had its own budget."""
    monkeypatch.setattr(Managed, "share", lambda self, meter: None)


def test_the_held_maximum_covers_what_a_request_reports():
    assert request_maximum(PricedScript([]), 500) >= COST  # the premise of the tests below


@pytest.mark.timeout(60)
def test_ten_parallel_tasks_share_the_runs_max_budget_usd(tmp_path):
    agent, types = fan_out(tmp_path, max_budget_usd=0.5)
    result = agent.run("look everywhere")
    assert spent(agent) <= 0.5  # 31 requests would cost $1.91
    assert result.stop_reason == "budget_exceeded"
    assert re.search(r"spent \$0\.\d+ this run of a \$0\.50 limit \(max_budget_usd\)", result.text)
    # The model saw why its Tasks stopped: the limit, what was spent and the cap.
    told = [result_text(b) for b in all_results(agent.messages).values()]
    stopped = [t for t in told if "[The subagent stopped early: budget_exceeded.]" in t]
    assert stopped and all("of a $0.50 limit (max_budget_usd)" in t for t in stopped)
    assert subagent_requests(types) < 30
    assert history_problems(agent.messages) == []


@pytest.mark.timeout(60)
def test_control_ten_tasks_on_their_own_meters_overspend(tmp_path, monkeypatch):
    no_shared_meter(monkeypatch)
    agent, types = fan_out(tmp_path, max_budget_usd=0.5)
    agent.run("look everywhere")
    assert subagent_requests(types) == 30  # every subagent ran to its end, unbudgeted
    assert spent(agent) > 0.5 + request_maximum(agent.model, 10_000)


def policy_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, budget: dict[str, float]) -> Path:
    path = tmp_path / "managed-settings.json"
    path.write_text(json.dumps({"budget": budget}))
    monkeypatch.setenv(POLICY_ENV, str(path))
    return path


@pytest.mark.timeout(60)
def test_the_policys_per_run_limit_is_shared_by_parallel_tasks(tmp_path, monkeypatch):
    path = policy_file(tmp_path, monkeypatch, {"perRunUsd": 0.5})
    agent, _types = fan_out(tmp_path)
    result = agent.run("look everywhere")
    assert spent(agent) <= 0.5
    assert result.stop_reason == "budget_exceeded" and f"of a $0.50 limit (managed policy {path})" in result.text
    assert history_problems(agent.messages) == []


@pytest.mark.timeout(60)
def test_control_each_task_with_the_whole_per_run_limit_overspends(tmp_path, monkeypatch):
    policy_file(tmp_path, monkeypatch, {"perRunUsd": 0.5})
    no_shared_meter(monkeypatch)
    agent, _types = fan_out(tmp_path)
    agent.run("look everywhere")
    assert spent(agent) > 0.5 + request_maximum(agent.model, 10_000)


# --- compaction ---------------------------------------------------------------------------
SUMMARY = Usage(input_tokens=30_000, output_tokens=800)  # $0.102: the summary of a long conversation


def compacting(tmp_path: Path, **agent_kw: Any) -> tuple[Agent, PricedScript]:
    """A run whose second request is preceded by a compaction (a window of 2,000 tokens)."""
    write_tree(tmp_path, {"a.py": "x = 1\n"})
    model = PricedScript([reply([use("Glob", "g1", pattern="*.py")]), reply("done")], summary=SUMMARY)
    return Agent(model, cwd=tmp_path, context_window=2_000, tools=builtin_tools(), **agent_kw), model


def test_compactions_summary_request_is_refused_past_the_budget(tmp_path):
    agent, model = compacting(tmp_path, max_budget_usd=0.1)
    result = agent.run("find the python files")
    assert model.compactions == []  # the summary request was never sent
    assert result.stop_reason == "budget_exceeded"
    assert re.search(r"spent \$0\.06\d+ this run of a \$0\.10 limit \(max_budget_usd\).*not sent", result.text)
    assert spent(agent) <= 0.1
    assert history_problems(agent.messages) == []


def test_control_a_summary_request_nothing_refuses_overspends(tmp_path, monkeypatch):
    monkeypatch.setattr(Meter, "hold", lambda self, usd, model: None)  # counts, never refuses
    agent, model = compacting(tmp_path, max_budget_usd=0.1)
    agent.run("find the python files")
    assert len(model.compactions) == 1
    assert spent(agent) > 0.1 + COST


def test_compactions_summary_is_counted_in_the_runs_spending_and_the_ledger(tmp_path, monkeypatch):
    policy_file(tmp_path, monkeypatch, {"perDayUsd": 5})
    agent, model = compacting(tmp_path)
    assert agent.run("find the python files").stop_reason == "end_turn"
    assert len(model.compactions) == 1
    expected = 2 * COST + estimate_cost(SONNET, SUMMARY)
    assert agent.meter.run_usd == pytest.approx(expected)
    assert SpendingLedger().spent()[0] == pytest.approx(expected)


def test_control_the_summary_streamed_past_the_meter_is_missing_from_the_ledger(tmp_path, monkeypatch):
    async def unmetered(self: ContextManager, request: ModelRequest) -> str:
        final = None
        async for event in self.conversation.model.stream(request):  # the old door: no meter
            final = event if isinstance(event, MessageComplete) else final
        assert final is not None
        self.conversation.usage += final.usage
        return "".join(str(b.get("text", "")) for b in final.content)

    monkeypatch.setattr(ContextManager, "_summarise", unmetered)
    policy_file(tmp_path, monkeypatch, {"perDayUsd": 5})
    agent, model = compacting(tmp_path)
    agent.run("find the python files")
    assert len(model.compactions) == 1
    assert SpendingLedger().spent()[0] == pytest.approx(2 * COST)  # the summary's $0.10 went uncounted


def test_only_the_meter_sends_a_runs_requests():
    """The meter is the one seam: nothing in the package streams a model but the meter, a model
    that wraps another (recording), and the loop reading the context manager, whose every
    request goes through the conversation's meter."""
    root = Path(__file__).resolve().parents[2] / "ipy_agent"
    callers = set()
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "stream":
                callers.add((str(path.relative_to(root)), ast.unparse(node.func.value)))
    assert callers == {
        ("runtime/meter.py", "model"),
        ("models/recording.py", "self.model"),
        ("loop/turn.py", "model"),  # stream_reply, given the context manager
        ("context/manager.py", "self.conversation.meter"),
    }


class TooLongFirst(PricedScript):
    """Answers its first turn request as the API answers a prompt over the window."""

    refused = False

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        if request.purpose == "turn" and not self.refused:
            self.refused = True
            raise ModelError("prompt is too long: 210000 tokens > 200000 maximum", kind="context_too_long")
        async for event in super().stream(request):
            yield event


def test_the_retry_after_prompt_is_too_long_and_its_summary_pass_the_meter(tmp_path):
    """The refused request (the API bills nothing), the summary, the retry and the next turn all
    hold; those answered are settled with their usage."""
    agent, _model = too_long_at_first(tmp_path)
    assert agent.run("go on").stop_reason == "end_turn"
    assert agent.meter.requests == 4  # refused, summary, retried, the last turn
    assert agent.meter.run_usd == pytest.approx(2 * COST + estimate_cost(SONNET, SUMMARY))


def too_long_at_first(tmp_path: Path, **agent_kw: Any) -> tuple[Agent, TooLongFirst]:
    write_tree(tmp_path, {"a.py": "x = 1\n"})
    model = TooLongFirst([reply([use("Glob", "g1", pattern="*.py")]), reply("done")], summary=SUMMARY)
    agent = Agent(model, cwd=tmp_path, tools=builtin_tools(), **agent_kw)
    agent.messages[:] = [
        {"role": "user", "content": "earlier"},
        {"role": "assistant", "content": [{"type": "text", "text": "earlier answer"}]},
    ]
    return agent, model


def test_the_retry_is_refused_when_the_summary_left_no_room(tmp_path):
    agent, model = too_long_at_first(tmp_path, max_budget_usd=0.15)
    result = agent.run("go on")
    assert result.stop_reason == "budget_exceeded" and "of a $0.15 limit (max_budget_usd)" in result.text
    assert model.requests == [] and len(model.compactions) == 1  # the retry was never sent
    assert spent(agent) <= 0.15


def test_control_a_retry_nothing_refuses_overspends(tmp_path, monkeypatch):
    monkeypatch.setattr(Meter, "hold", lambda self, usd, model: None)
    agent, model = too_long_at_first(tmp_path, max_budget_usd=0.15)
    agent.run("go on")
    assert len(model.requests) >= 1 and spent(agent) > 0.15
