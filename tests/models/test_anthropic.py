"""AnthropicModel against a local replay of the Messages API, with the real anthropic client."""

from __future__ import annotations

import asyncio
import copy
import socket
import subprocess
import sys
import time
from typing import Any

import pytest

from ipy_agent.models.anthropic import AnthropicModel, newest_sonnet
from ipy_agent.models.base import (
    BlockComplete,
    MessageComplete,
    ModelError,
    ModelRequest,
    TextDelta,
    ThinkingDelta,
    Usage,
)
from ipy_agent.models.pricing import context_window, estimate_cost, price_for
from tests.support.sse_server import ReplayServer, Reply, error_event, error_reply, message_events

EPHEMERAL = {"type": "ephemeral"}
TOOLS = [
    {
        "name": "Read",
        "description": "Read a file.",
        "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]},
    },
    {
        "name": "Grep",
        "description": "Search files.",
        "input_schema": {"type": "object", "properties": {"pattern": {"type": "string"}}, "required": ["pattern"]},
    },
]


def model_for(api_server: ReplayServer, **kwargs: Any) -> AnthropicModel:
    kwargs.setdefault("max_retries", 0)
    return AnthropicModel(
        kwargs.pop("model", "claude-test-model"), api_key="sk-test-key", base_url=api_server.url, **kwargs
    )


def req(messages: list[dict[str, Any]] | None = None, system: str = "You are a test.", tools=TOOLS) -> ModelRequest:
    return ModelRequest(system=system, messages=messages or [{"role": "user", "content": "hi"}], tools=tools)


async def collect(model: AnthropicModel, request: ModelRequest) -> list[tuple[float, Any]]:
    """Every event with the monotonic time the consumer received it."""
    return [(time.monotonic(), ev) async for ev in model.stream(request)]


def events_of(timed: list[tuple[float, Any]], cls: type) -> list[Any]:
    return [ev for _, ev in timed if isinstance(ev, cls)]


async def test_text_streams_in_deltas_and_request_carries_cache_breakpoints(api_server):
    api_server.add(message_events([{"type": "text", "text": "Hello from the replayed model!"}], chunk=6))
    messages = [
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "second"}]},
    ]
    request = req(messages)
    before = copy.deepcopy(request.messages), copy.deepcopy(request.tools)

    timed = await collect(model_for(api_server), request)

    deltas = events_of(timed, TextDelta)
    assert [d.text for d in deltas] == ["Hello ", "from t", "he rep", "layed ", "model!"]
    assert events_of(timed, BlockComplete)[0].block == {"type": "text", "text": "Hello from the replayed model!"}
    done = timed[-1][1]
    assert isinstance(done, MessageComplete)
    assert done.content == [{"type": "text", "text": "Hello from the replayed model!"}]
    assert (done.stop_reason, done.model) == ("end_turn", "claude-test")

    sent = api_server.requests[0]
    assert sent.path == "/v1/messages"
    assert sent.headers.get("x-api-key") == "sk-test-key" or sent.headers.get("authorization") == "Bearer sk-test-key"
    body = sent.body
    assert body["model"] == "claude-test-model" and body["stream"] is True
    assert body["system"] == [{"type": "text", "text": "You are a test.", "cache_control": EPHEMERAL}]
    assert body["tools"] == [TOOLS[0], {**TOOLS[1], "cache_control": EPHEMERAL}]
    # The last block of the latest message is a breakpoint, and the last block of the user message
    # before it (where the previous request had its breakpoint); the rest is sent as it is.
    assert body["messages"][0] == {
        "role": "user",
        "content": [{"type": "text", "text": "first", "cache_control": EPHEMERAL}],
    }
    assert body["messages"][1] == messages[1]
    assert body["messages"][2]["content"] == [
        {"type": "text", "text": "a"},
        {"type": "text", "text": "second", "cache_control": EPHEMERAL},
    ]
    assert (request.messages, request.tools) == before, "the request must not be modified"


async def test_string_content_and_no_system_or_tools(api_server):
    api_server.add(message_events([{"type": "text", "text": "ok"}]))
    await collect(model_for(api_server), req([{"role": "user", "content": "just text"}], system="", tools=[]))
    body = api_server.requests[0].body
    assert "system" not in body and "tools" not in body
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "just text", "cache_control": EPHEMERAL}]}
    ]


async def test_tool_use_block_is_handed_on_before_the_message_ends(api_server):
    tool = {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "/tmp/a b.txt", "limit": 5}}
    # After the tool_use block the server waits before message_delta / message_stop.
    api_server.add(message_events([{"type": "text", "text": "Reading."}, tool], chunk=5, tail_delay=0.4))

    timed = await collect(model_for(api_server), req())

    kinds = [type(ev).__name__ for _, ev in timed]
    blocks = [(t, ev) for t, ev in timed if isinstance(ev, BlockComplete)]
    assert blocks[1][1].block == tool and blocks[1][1].index == 1
    assert kinds.index("MessageComplete") > kinds.index("BlockComplete") and kinds[-1] == "MessageComplete"
    # The tool_use reached the consumer before the server even wrote message_stop.
    assert blocks[1][0] < api_server.sent_time("message_stop")
    done = timed[-1][1]
    assert done.stop_reason == "tool_use" and done.content[1] == tool


async def test_thinking_blocks_stream_and_are_echoed_back_with_signatures(api_server):
    thinking = {"type": "thinking", "thinking": "The user wants the file; read it first.", "signature": "sig-abc=="}
    redacted = {"type": "redacted_thinking", "data": "ENCRYPTED-blob"}
    tool_a = {"type": "tool_use", "id": "toolu_a", "name": "Read", "input": {"file_path": "a.py"}}
    tool_b = {"type": "tool_use", "id": "toolu_b", "name": "Grep", "input": {"pattern": "def "}}
    api_server.add(
        message_events([thinking, redacted, tool_a, tool_b], chunk=10),
        message_events([{"type": "text", "text": "Done."}]),
    )
    model = model_for(api_server, thinking={"type": "enabled", "budget_tokens": 2048}, max_tokens=8000)

    first = await collect(model, req())
    assert "".join(d.text for d in events_of(first, ThinkingDelta)) == thinking["thinking"]
    content = first[-1][1].content
    assert content == [thinking, redacted, tool_a, tool_b]

    results = [
        {"type": "tool_result", "tool_use_id": "toolu_a", "content": "1\tprint()"},
        {"type": "tool_result", "tool_use_id": "toolu_b", "content": "a.py:1"},
    ]
    history = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": content},
        {"role": "user", "content": results},
    ]
    await collect(model, req(history))

    body = api_server.requests[1].body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048} and body["max_tokens"] == 8000
    assert body["messages"][1]["content"] == [thinking, redacted, tool_a, tool_b]
    assert [b["tool_use_id"] for b in body["messages"][2]["content"]] == ["toolu_a", "toolu_b"]
    assert body["messages"][2]["content"][-1]["cache_control"] == EPHEMERAL


@pytest.mark.parametrize("stop", ["end_turn", "tool_use", "max_tokens", "pause_turn", "refusal", "stop_sequence"])
async def test_stop_reasons_pass_through(api_server, stop):
    api_server.add(message_events([{"type": "text", "text": "x"}], stop_reason=stop))
    timed = await collect(model_for(api_server), req())
    assert timed[-1][1].stop_reason == stop


async def test_usage_combines_message_start_and_message_delta(api_server):
    usage = {"input_tokens": 120, "cache_read_input_tokens": 3000, "cache_creation_input_tokens": 450}
    api_server.add(message_events([{"type": "text", "text": "x"}], usage=usage, output_tokens=42))
    done = (await collect(model_for(api_server), req()))[-1][1]
    assert done.usage == Usage(
        input_tokens=120, output_tokens=42, cache_read_input_tokens=3000, cache_creation_input_tokens=450
    )


ERRORS = [
    (401, "authentication_error", "invalid x-api-key", "authentication", "ANTHROPIC_API_KEY"),
    (403, "permission_error", "no access to this model", "permission", "'claude-test-model'"),
    (404, "not_found_error", "model: claude-test-model", "not_found", "IPY_AGENT_MODEL"),
    (
        400,
        "invalid_request_error",
        "prompt is too long: 215000 tokens > 200000 maximum",
        "context_too_long",
        "too long",
    ),
    (
        400,
        "invalid_request_error",
        "max_tokens: must be greater than thinking.budget_tokens",
        "invalid_request",
        "max_tokens: must be greater",
    ),
    (500, "api_error", "Internal server error", "other", "Run the prompt again"),
]


@pytest.mark.parametrize("status,error_type,detail,kind,hint", ERRORS)
async def test_http_errors_become_clear_model_errors(api_server, status, error_type, detail, kind, hint):
    api_server.add(error_reply(status, error_type, detail))
    with pytest.raises(ModelError) as info:
        await collect(model_for(api_server), req())
    assert info.value.kind == kind
    assert detail in str(info.value) and hint in str(info.value)


@pytest.mark.parametrize(
    "status,error_type,kind", [(529, "overloaded_error", "overloaded"), (429, "rate_limit_error", "rate_limit")]
)
async def test_retried_errors_fail_after_the_sdk_retries(api_server, status, error_type, kind):
    api_server.add(*[error_reply(status, error_type, "busy", retry_after_ms="1")] * 2)
    with pytest.raises(ModelError) as info:
        await collect(model_for(api_server, max_retries=1), req())
    assert info.value.kind == kind and "after 1 retry" in str(info.value)
    assert len(api_server.requests) == 2


async def test_overloaded_then_success_is_retried_by_the_sdk(api_server):
    api_server.add(
        error_reply(529, "overloaded_error", "Overloaded", retry_after_ms="1"),
        message_events([{"type": "text", "text": "second time lucky"}]),
    )
    timed = await collect(model_for(api_server, max_retries=2), req())
    assert timed[-1][1].content == [{"type": "text", "text": "second time lucky"}]
    assert len(api_server.requests) == 2 and api_server.requests[0].body == api_server.requests[1].body


async def test_error_event_mid_stream_raises_after_the_text_so_far(api_server):
    events = message_events([{"type": "text", "text": "partial answer"}], end=False)
    api_server.add([*events[:4], error_event("overloaded_error", "Overloaded")])
    received: list[Any] = []
    with pytest.raises(ModelError) as info:
        async for ev in model_for(api_server).stream(req()):
            received.append(ev)
    assert info.value.kind == "overloaded" and "during the response" in str(info.value)
    assert received and all(isinstance(ev, TextDelta) for ev in received)


async def test_connection_refused_is_a_connection_error(api_server):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    model = AnthropicModel("claude-test-model", api_key="k", base_url=f"http://127.0.0.1:{port}", max_retries=0)
    with pytest.raises(ModelError) as info:
        await collect(model, req())
    assert info.value.kind == "connection" and f"127.0.0.1:{port}" in str(info.value)


async def test_stream_cut_before_message_stop_is_a_connection_error(api_server):
    api_server.add(Reply(events=message_events([{"type": "text", "text": "half"}], end=False), cut=True))
    with pytest.raises(ModelError) as info:
        await collect(model_for(api_server), req())
    assert info.value.kind == "connection"


async def test_missing_key_gives_one_clear_message_and_sends_nothing(api_server, monkeypatch):
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    model = AnthropicModel("claude-test-model", base_url=api_server.url)
    with pytest.raises(ModelError) as info:
        await collect(model, req())
    assert info.value.kind == "missing_key"
    assert "ANTHROPIC_API_KEY" in str(info.value) and "%agent --script PATH" in str(info.value)
    assert api_server.requests == []


async def test_key_and_base_url_come_from_the_environment(api_server, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-from-env")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", api_server.url)
    monkeypatch.setenv("IPY_AGENT_MODEL", "claude-from-env")
    api_server.add(message_events([{"type": "text", "text": "hi"}]))
    await collect(AnthropicModel(max_retries=0), req())
    sent = api_server.requests[0]
    assert sent.body["model"] == "claude-from-env"
    assert "sk-from-env" in (sent.headers.get("x-api-key", "") + sent.headers.get("authorization", ""))


async def test_a_client_passed_in_is_used_as_is_and_left_open(api_server, monkeypatch):
    import anthropic

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    client = anthropic.AsyncAnthropic(api_key="sk-own-client", base_url=api_server.url, max_retries=0)
    api_server.add(message_events([{"type": "text", "text": "one"}]), message_events([{"type": "text", "text": "two"}]))
    model = AnthropicModel("claude-test-model", client=client)
    await collect(model, req())
    await model.aclose()
    await collect(AnthropicModel("claude-test-model", client=client), req())
    assert len(api_server.requests) == 2
    assert "sk-own-client" in (
        api_server.requests[1].headers.get("x-api-key", "") + api_server.requests[1].headers.get("authorization", "")
    )
    await client.close()


def test_model_name_argument_then_env_then_newest_sdk_sonnet(monkeypatch):
    monkeypatch.setenv("IPY_AGENT_MODEL", "claude-env")
    assert AnthropicModel("claude-arg").name == "claude-arg"
    assert AnthropicModel().name == "claude-env"
    monkeypatch.delenv("IPY_AGENT_MODEL")
    import typing

    from anthropic.types.model import Model

    listed = {a for arg in typing.get_args(Model) for a in typing.get_args(arg)}
    name = AnthropicModel().name
    assert name == newest_sonnet() and name in listed and name.startswith("claude-sonnet-")
    assert not any(part.isdigit() and len(part) == 8 for part in name.split("-")), "an alias, not a snapshot"


def test_importing_the_package_does_not_import_the_sdk():
    code = (
        "import sys, ipy_agent, ipy_agent.models.anthropic, ipy_agent.models.pricing; print('anthropic' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


async def test_cancel_mid_stream_closes_the_connection(api_server):
    events = message_events([{"type": "text", "text": "a long answer that never ends"}], end=False)
    api_server.add(Reply(events=events[:4], hold_open=True))
    started = asyncio.Event()

    async def consume() -> None:
        async for _ in model_for(api_server).stream(req()):
            started.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(started.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await asyncio.to_thread(api_server.wait_disconnect, 10), "the client left the stream's connection open"
    assert api_server.disconnects == [0]


async def test_consumer_that_stops_early_and_closes_the_stream_frees_the_connection(api_server):
    events = message_events([{"type": "text", "text": "a long answer that never ends"}], end=False)
    api_server.add(Reply(events=events[:4], hold_open=True))
    stream = model_for(api_server).stream(req())
    async for _ in stream:
        break
    await stream.aclose()
    assert await asyncio.to_thread(api_server.wait_disconnect, 10), "the client left the stream's connection open"


def test_cost_estimate_by_family():
    million = 1_000_000
    assert estimate_cost("claude-sonnet-4-5", Usage(input_tokens=million)) == pytest.approx(3.0)
    assert estimate_cost("claude-sonnet-4-5", Usage(output_tokens=million)) == pytest.approx(15.0)
    assert estimate_cost("claude-sonnet-4-5", Usage(cache_creation_input_tokens=million)) == pytest.approx(3.75)
    assert estimate_cost("claude-sonnet-4-5", Usage(cache_read_input_tokens=million)) == pytest.approx(0.3)
    assert estimate_cost("claude-opus-4-1", Usage(output_tokens=million)) == pytest.approx(75.0)
    assert estimate_cost("claude-opus-4-5-20251101", Usage(output_tokens=million)) == pytest.approx(25.0)
    assert estimate_cost("claude-3-5-haiku-20241022", Usage(input_tokens=million)) == pytest.approx(0.8)
    assert estimate_cost("claude-haiku-4-5", Usage(input_tokens=million)) == pytest.approx(1.0)
    assert price_for("claude-haiku-4-5").known and not price_for("my-local-llm").known
    assert context_window("claude-sonnet-4-5") == 200_000


async def test_a_tool_call_without_arguments_streams_an_empty_partial_json(api_server):
    events = message_events([{"type": "tool_use", "id": "toolu_now", "name": "Now", "input": {}}])
    for e in events:
        if e.data.get("delta", {}).get("type") == "input_json_delta":
            e.data["delta"]["partial_json"] = ""  # what the API sends for a call with no arguments
    api_server.add(events)
    timed = await collect(model_for(api_server), req())
    done = events_of(timed, MessageComplete)[0]
    assert done.content == [{"type": "tool_use", "id": "toolu_now", "name": "Now", "input": {}}]
    assert done.stop_reason == "tool_use"


async def test_max_tokens_in_the_middle_of_a_tool_call_drops_the_cut_call(api_server):
    write = {"type": "tool_use", "id": "toolu_w", "name": "Write", "input": {"file_path": "a.txt", "content": "x" * 50}}
    events = message_events([{"type": "text", "text": "Writing."}, write], stop_reason="max_tokens", chunk=10)
    deltas = [e for e in events if e.data.get("delta", {}).get("type") == "input_json_delta"]
    for e in deltas[len(deltas) // 2 :]:
        events.remove(e)  # the reply ran out of tokens half way through the input
    api_server.add(events)
    done = events_of(await collect(model_for(api_server), req()), MessageComplete)[0]
    assert done.stop_reason == "max_tokens"
    assert done.content == [{"type": "text", "text": "Writing."}]


async def test_invalid_tool_json_without_max_tokens_is_still_an_error(api_server):
    events = message_events([{"type": "tool_use", "id": "toolu_x", "name": "Read", "input": {"file_path": "abc"}}])
    for e in events:
        if e.data.get("delta", {}).get("type") == "input_json_delta":
            e.data["delta"]["partial_json"] = e.data["delta"]["partial_json"].replace('"', "'")
    api_server.add(events)
    with pytest.raises(ModelError, match="not valid JSON"):
        await collect(model_for(api_server), req())
