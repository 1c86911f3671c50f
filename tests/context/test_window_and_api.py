"""Sizes and the API: per-model windows, the override, the API's token count, and the
"prompt is too long" retry, with the real anthropic SDK against the local replay server."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ipy_agent import Agent, ScriptedModel
from ipy_agent.context.compaction import COMPACTION_SYSTEM, SUMMARY_HEADER
from ipy_agent.history.messages import history_problems
from ipy_agent.models.anthropic import AnthropicModel
from ipy_agent.models.pricing import CONTEXT_1M_BETA, context_window
from ipy_agent.runtime.trace import ContextEvent
from tests.support.sse_server import ReplayServer, Reply, error_reply, message_events

TOO_LONG = "prompt is too long: 213417 tokens > 200000 maximum"


@pytest.mark.parametrize(
    ("model", "betas", "window"),
    [
        ("claude-sonnet-4-5", (), 200_000),
        ("claude-sonnet-4-5-20250929", (CONTEXT_1M_BETA,), 1_000_000),
        ("claude-sonnet-4-6", (), 1_000_000),
        ("claude-opus-4-5", (CONTEXT_1M_BETA,), 200_000),  # no long window on offer
        ("claude-opus-4-7", (), 1_000_000),
        ("claude-haiku-4-5-20251001", (), 200_000),
        ("claude-3-5-sonnet-20241022", (CONTEXT_1M_BETA,), 200_000),
        ("claude-fable-5-2", (), 1_000_000),
        ("some-other-model", (), 200_000),
    ],
)
def test_context_window_per_model(model, betas, window):
    assert context_window(model, betas=betas) == window


def test_the_agent_uses_the_models_window_unless_overridden(tmp_path):
    long = AnthropicModel("claude-sonnet-4-5", betas=[CONTEXT_1M_BETA], api_key="sk-test")
    assert Agent(long, cwd=tmp_path).context_manager.window == 1_000_000
    assert Agent(AnthropicModel("claude-sonnet-4-5", api_key="sk-test"), cwd=tmp_path).context_manager.window == 200_000
    assert Agent(long, cwd=tmp_path, context_window=50_000).context_manager.window == 50_000
    assert Agent(ScriptedModel([]), cwd=tmp_path).context_manager.window == 200_000
    with pytest.raises(ValueError, match="500"):
        Agent(ScriptedModel([]), cwd=tmp_path, context_window=500)


def sdk_agent(api_server: ReplayServer, tmp_path, **kw: Any) -> Agent:
    model = AnthropicModel(
        "claude-sonnet-4-6", api_key="sk-test", base_url=api_server.url, max_retries=0, betas=kw.pop("betas", ())
    )
    return Agent(model, cwd=tmp_path, tools=[], system_prompt="You help.", **kw)


def earlier_conversation(turns: int, size: int = 2_000) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(turns):
        out.append({"role": "user", "content": [{"type": "text", "text": f"question {i}: " + "q" * size}]})
        out.append({"role": "assistant", "content": [{"type": "text", "text": f"answer {i}: " + "a" * size}]})
    return out


def test_too_long_is_compacted_and_retried_once(api_server, tmp_path):
    agent = sdk_agent(api_server, tmp_path)
    agent.messages.extend(earlier_conversation(6))
    api_server.add(
        error_reply(400, "invalid_request_error", TOO_LONG),
        message_events([{"type": "text", "text": "The person asked six questions; all were answered."}]),
        message_events([{"type": "text", "text": "Here is the answer."}]),
    )
    events: list[Any] = []
    agent.on_event(events.append)
    result = agent.run("one more question")

    assert (result.stop_reason, result.text) == ("end_turn", "Here is the answer.")
    first, summary, retry = (r.body for r in api_server.requests)
    assert [r.path for r in api_server.requests] == ["/v1/messages"] * 3
    assert len(first["messages"]) == 13
    # The summary request: its own system prompt, no tools, the older turns as a transcript.
    assert summary["system"][0]["text"] == COMPACTION_SYSTEM and "tools" not in summary
    assert "question 0: " in summary["messages"][0]["content"][0]["text"]
    # The retry starts with the summary and keeps the latest exchange and the new prompt.
    assert retry["messages"][0]["content"][0]["text"].startswith(SUMMARY_HEADER)
    assert "all were answered" in retry["messages"][0]["content"][0]["text"]
    assert retry["messages"][-1]["content"][0]["text"] == "one more question"
    assert len(retry["messages"]) == 3 and history_problems(agent.messages) == []
    assert any(isinstance(e, ContextEvent) and e.action == "compacted" and e.trigger == "too_long" for e in events)


def test_too_long_twice_gives_up_with_a_clear_message(api_server, tmp_path):
    agent = sdk_agent(api_server, tmp_path)
    agent.messages.extend(earlier_conversation(3))
    api_server.add(
        error_reply(400, "invalid_request_error", TOO_LONG),
        message_events([{"type": "text", "text": "summary"}]),
        error_reply(400, "invalid_request_error", TOO_LONG),
    )
    result = agent.run("again")
    assert result.stop_reason == "error" and result.error_kind == "context_too_long"
    assert "compacted once already and is still too long" in result.text and "%agent --new" in result.text
    assert len(api_server.requests) == 3  # one retry, no loop
    assert history_problems(agent.messages) == []


def test_too_long_with_nothing_to_compact_says_why(api_server, tmp_path):
    agent = sdk_agent(api_server, tmp_path)
    api_server.add(error_reply(400, "invalid_request_error", TOO_LONG))
    result = agent.run("x" * 100)
    assert result.error_kind == "context_too_long"
    assert "Compacting the conversation was not possible (there are no earlier turns to summarise)" in result.text
    assert len(api_server.requests) == 1


def test_near_the_threshold_the_api_count_decides(api_server, tmp_path):
    # The local estimate says the request is over 80% of a 10k window; the API's count says it
    # is not, so nothing is cleared, and the count's ratio calibrates later estimates.
    agent = sdk_agent(api_server, tmp_path, context_window=10_000, betas=[CONTEXT_1M_BETA])
    agent.messages.extend(earlier_conversation(4, size=4_000))
    api_server.add(Reply(body={"input_tokens": 5_000}), message_events([{"type": "text", "text": "ok"}]))
    result = agent.run("and now?")

    assert result.text == "ok"
    count, request = api_server.requests
    assert count.path == "/v1/messages/count_tokens" and request.path == "/v1/messages"
    assert count.body["messages"] == request.body["messages"] and "max_tokens" not in count.body
    assert count.headers["anthropic-beta"] == CONTEXT_1M_BETA == request.headers["anthropic-beta"]
    cm = agent.context_manager
    assert cm.api_counts == 1 and cm.cleared == 0 and cm.compactions == 0
    assert cm.factor < 1.0 and cm.sizes[-1].tokens < cm.trigger
    assert json.dumps(request.body["messages"]).count("q" * 4_000) == 4  # nothing was cleared or summarised


def test_a_failed_count_falls_back_to_the_local_estimate(api_server, tmp_path):
    agent = sdk_agent(api_server, tmp_path, context_window=10_000)
    agent.messages.extend(earlier_conversation(4, size=4_000))
    api_server.add(
        error_reply(500, "api_error", "counting is down"),
        message_events([{"type": "text", "text": "summary of four questions"}]),
        message_events([{"type": "text", "text": "ok"}]),
    )
    result = agent.run("and now?")
    assert result.text == "ok"
    assert [r.path for r in api_server.requests] == ["/v1/messages/count_tokens", "/v1/messages", "/v1/messages"]
    assert agent.context_manager.compactions == 1  # the local estimate said "over", so it compacted
