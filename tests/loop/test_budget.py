"""Budgets stop a run before the next model request, with a valid history and a message that says
what was spent and what the limit is: `max_budget_usd`, and the policy's per-run and per-day limits.

The model is the real AnthropicModel (the SDK's own client) against a local Messages API that
reports usage as the real one does, so the cost is computed from the tokens the API reported."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ipy_agent import Agent, AnthropicModel
from ipy_agent.config.policy import POLICY_ENV
from ipy_agent.config.spending import SpendingLedger
from ipy_agent.history.messages import history_problems
from tests.support.sse_server import ReplayServer, message_events
from tests.support.transcript import use

# Sonnet prices: $3 per million input tokens, so each reply below costs $0.30 and a bit.
TOKENS = 100_000


def model(server: ReplayServer, max_tokens: int = 1_000) -> AnthropicModel:
    """A model whose requests each hold about $0.02 (1,000 output tokens at $15 a million)."""
    return AnthropicModel(
        "claude-sonnet-4-5", api_key="sk-test", base_url=server.url, max_retries=0, max_tokens=max_tokens
    )


def tool_turn(n: int) -> list:
    call = use("Glob", f"toolu_{n}", pattern="*.txt")
    return message_events([{"type": "tool_use", **call}], usage={"input_tokens": TOKENS})


def test_max_budget_usd_stops_the_run_before_the_next_request(api_server, tmp_path):
    api_server.add(tool_turn(1), tool_turn(2), tool_turn(3))
    agent = Agent(model(api_server), cwd=tmp_path, max_budget_usd=0.5)
    result = agent.run("look around")
    assert result.stop_reason == "budget_exceeded"
    assert len(api_server.requests) == 2  # the third request was never sent
    assert history_problems(agent.messages) == []
    assert agent.messages[-1]["role"] == "user"  # both tool calls were answered
    assert re.search(r"spent \$0\.6\d+ this run of a \$0\.50 limit \(max_budget_usd\)", result.text)
    assert "$0.50 this run" in result.budget
    # The conversation goes on with a larger budget.
    api_server.add(message_events([{"type": "text", "text": "done"}]))
    agent.managed.max_budget_usd = None
    assert agent.run("go on").stop_reason == "end_turn"
    assert history_problems(agent.messages) == []


def test_a_request_whose_held_maximum_does_not_fit_is_not_sent(api_server, tmp_path):
    """16,000 output tokens at $15 a million may cost $0.24: after $0.30 of a $0.50 budget the
    second request is refused before it is sent, and the message names the limit."""
    api_server.add(tool_turn(1), tool_turn(2))
    agent = Agent(model(api_server, max_tokens=16_000), cwd=tmp_path, max_budget_usd=0.5)
    result = agent.run("look around")
    assert result.stop_reason == "budget_exceeded" and len(api_server.requests) == 1
    assert re.search(r"spent \$0\.30\d+ this run of a \$0\.50 limit \(max_budget_usd\)", result.text)
    assert re.search(r"could cost up to \$0\.2\d+ \(its input and 16,000 tokens of output\)", result.text)
    assert history_problems(agent.messages) == []


def test_the_policys_limit_per_day_counts_every_run_of_the_day(api_server, tmp_path, monkeypatch):
    path = tmp_path / "managed-settings.json"
    path.write_text(json.dumps({"budget": {"perDayUsd": 0.5}}))
    monkeypatch.setenv(POLICY_ENV, str(path))
    api_server.add(message_events([{"type": "text", "text": "one"}], usage={"input_tokens": TOKENS}))
    agent = Agent(model(api_server), cwd=tmp_path / "..")
    assert agent.run("first").stop_reason == "end_turn"
    day, total = SpendingLedger().spent()
    assert 0.3 < day == total < 0.31
    api_server.add(message_events([{"type": "text", "text": "two"}], usage={"input_tokens": TOKENS}))
    other = Agent(model(api_server), cwd=tmp_path)  # another notebook of the same person
    assert other.run("second").stop_reason == "end_turn"
    before = list(other.messages)
    result = other.run("third")
    assert result.stop_reason == "budget_exceeded" and len(api_server.requests) == 2
    assert "today" in result.text and "$0.50" in result.text and str(path) in result.text
    assert other.messages == before  # the refused prompt was not added


def test_a_gateway_refusal_over_budget_ends_the_run_plainly(api_server, tmp_path):
    from tests.support.sse_server import error_reply

    api_server.add(error_reply(402, "budget_exceeded_error", "alice has spent $2.01 of her $2.00 daily budget"))
    agent = Agent(model(api_server), cwd=tmp_path)
    result = agent.run("hello")
    assert result.stop_reason == "budget_exceeded" and result.error_kind == "budget_exceeded"
    assert "alice has spent $2.01 of her $2.00 daily budget" in result.text
    assert agent.messages == []


@pytest.mark.parametrize("bad", [0, -1.0])
def test_a_budget_must_be_positive(bad, tmp_path: Path):
    with pytest.raises(ValueError, match="more than \\$0"):
        Agent(AnthropicModel("claude-sonnet-4-5", api_key="x"), cwd=tmp_path, max_budget_usd=bad)
