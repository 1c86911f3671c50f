"""A whole Agent run with AnthropicModel against the local Messages API replay."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field

from ipy_agent import Agent, build_tool
from ipy_agent.models.anthropic import AnthropicModel
from tests.support.sse_server import ReplayServer, error_event, error_reply, message_events
from tests.support.transcript import use


class ProbeInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    key: str = Field(description="What to look up.")


def probe_tool(started: list[tuple[str, float]], seconds: float = 0.0):
    """A read-only, concurrency-safe tool that records when each call starts."""

    async def call(inp: ProbeInput, ctx: Any) -> str:
        started.append((inp.key, time.monotonic()))
        if seconds:
            await asyncio.sleep(seconds)
        return f"value of {inp.key}"

    return build_tool(
        name="Probe",
        input_model=ProbeInput,
        description="Look up a key (read-only test tool).",
        call=call,
        is_read_only=True,
        is_concurrency_safe=True,
    )


def agent_for(api_server: ReplayServer, tmp_path, tool, **kwargs: Any) -> Agent:
    model = AnthropicModel("claude-test-model", api_key="sk-test", base_url=api_server.url, max_retries=0)
    return Agent(model=model, cwd=tmp_path, tools=[tool], allow=["Probe"], approver=lambda req: "allow", **kwargs)


def assert_valid_conversation(messages: list[dict[str, Any]]) -> None:
    """What the Messages API requires of a history: user first, roles alternate, no empty
    message, and every tool_use answered by a tool_result in the very next (user) message."""
    assert messages and messages[0]["role"] == "user"
    for i, m in enumerate(messages):
        blocks = m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}]
        assert blocks, f"message {i} is empty"
        if i:
            assert m["role"] != messages[i - 1]["role"], f"messages {i - 1} and {i} have the same role"
        if m["role"] == "assistant":
            ids = [b["id"] for b in blocks if b["type"] == "tool_use"]
            answer = messages[i + 1]["content"] if i + 1 < len(messages) else []
            answered = [b.get("tool_use_id") for b in answer if isinstance(b, dict) and b.get("type") == "tool_result"]
            assert answered[: len(ids)] == ids, f"tool_use {ids} of message {i} not answered in order: {answered}"


async def test_tool_round_trip_starts_tools_before_message_stop(api_server, tmp_path):
    started: list[tuple[str, float]] = []
    api_server.add(
        message_events(
            [
                {"type": "text", "text": "Looking both up."},
                use("Probe", "toolu_1", key="alpha"),
                use("Probe", "toolu_2", key="beta"),
            ],
            tail_delay=0.5,
        ),
        message_events([{"type": "text", "text": "alpha and beta found."}]),
    )
    agent = agent_for(api_server, tmp_path, probe_tool(started))

    result = await agent.arun("look up alpha and beta")

    assert result.stop_reason == "end_turn" and result.text == "alpha and beta found."
    first, second = (r.body for r in api_server.requests)
    assert [t["name"] for t in first["tools"]] == ["Probe"]
    assert first["tools"][0]["input_schema"]["properties"]["key"]["type"] == "string"
    assert first["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    results = second["messages"][-1]["content"]
    assert [b["tool_use_id"] for b in results] == ["toolu_1", "toolu_2"]
    assert "value of alpha" in str(results[0]["content"]) and "value of beta" in str(results[1]["content"])
    assert second["messages"][1]["content"][1:] == [
        use("Probe", "toolu_1", key="alpha"),
        use("Probe", "toolu_2", key="beta"),
    ]
    # Both calls started while the server was still holding back message_stop.
    stop_sent = api_server.sent_time("message_stop", request=0)
    assert [k for k, _ in started] == ["alpha", "beta"] and all(t < stop_sent for _, t in started)
    assert_valid_conversation(agent.messages)


async def test_without_streaming_tools_calls_wait_for_the_whole_message(api_server, tmp_path):
    started: list[tuple[str, float]] = []
    api_server.add(
        message_events([use("Probe", "toolu_1", key="alpha")], tail_delay=0.3),
        message_events([{"type": "text", "text": "ok"}]),
    )
    agent = agent_for(api_server, tmp_path, probe_tool(started), streaming_tools=False)
    await agent.arun("look up alpha")
    assert started and started[0][1] > api_server.sent_time("message_stop", request=0)


async def test_error_mid_stream_after_a_started_tool_keeps_the_history_valid(api_server, tmp_path):
    started: list[tuple[str, float]] = []
    events = message_events(
        [
            {"type": "text", "text": "Checking."},
            use("Probe", "toolu_1", key="alpha"),
            {"type": "text", "text": "and then some more words", "_delay": 0.2},
        ],
        end=False,
    )
    api_server.add([*events[:-2], error_event("overloaded_error", "Overloaded")])
    agent = agent_for(api_server, tmp_path, probe_tool(started))

    result = await agent.arun("look up alpha")

    assert result.stop_reason == "error" and result.error_kind == "overloaded"
    assert "overloaded" in (result.error or "").lower()
    assert_valid_conversation(agent.messages)
    # The block that was cut off never reaches the history; the finished tool call does.
    assert "some more words" not in str(agent.messages)
    assert agent.messages[-1]["content"][0]["tool_use_id"] == "toolu_1"
    assert [k for k, _ in started] == ["alpha"] and "value of alpha" in str(agent.messages[-1]["content"][0])

    api_server.add(message_events([{"type": "text", "text": "Recovered."}]))
    again = await agent.arun("try again")
    assert again.stop_reason == "end_turn" and again.text == "Recovered."
    assert_valid_conversation(api_server.requests[-1].body["messages"])


@pytest.mark.parametrize("fail", ["http_401", "text_then_error_event"])
async def test_error_before_any_tool_leaves_no_assistant_message(api_server, tmp_path, fail):
    if fail == "http_401":
        api_server.add(error_reply(401, "authentication_error", "invalid x-api-key"))
    else:
        events = message_events([{"type": "text", "text": "half a sentence"}], end=False)
        api_server.add([*events[:4], error_event("api_error", "Internal server error")])
    agent = agent_for(api_server, tmp_path, probe_tool([]))

    result = await agent.arun("hello")

    assert result.stop_reason == "error"
    assert result.error_kind == ("authentication" if fail == "http_401" else "other")
    # The model never answered: the request leaves no trace (it would be merged into the next one).
    assert agent.messages == []
    assert "half a sentence" not in str(agent.messages)
