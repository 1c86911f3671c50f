"""The same scripted tasks on every provider's wire: Anthropic, Bedrock, Vertex, Foundry, OpenAI-compatible.

Each runs a real Agent with the provider's real SDK client against a local server that speaks
that provider's format (tests/models/wires.py): a read-edit task with an approval, two reads
that start while the reply streams, an interrupt in the middle of a reply, a conversation too
long that is compacted and sent again, and the server's errors.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from ipy_agent import Agent, build_tool
from ipy_agent.history.messages import history_problems
from ipy_agent.permissions.decide import PermissionRequest
from ipy_agent.runtime.trace import TextEvent
from tests.support.sse_server import Reply
from tests.support.transcript import use
from tests.support.wires import ERROR_KINDS, WIRES, Wire

pytestmark = pytest.mark.timeout(60) if hasattr(pytest.mark, "timeout") else []
TITLES = {
    "anthropic": "Anthropic API",
    "bedrock": "Amazon Bedrock",
    "vertex": "Google Vertex AI",
    "foundry": "Microsoft Foundry",
    "openai": "vllm",
}


class Key(BaseModel):
    model_config = ConfigDict(extra="forbid")
    key: str


def probe(started: list[tuple[str, float, float]], seconds: float):
    """A read-only tool that records when each call ran."""

    async def call(inp: Key, ctx: Any) -> str:
        start = time.monotonic()
        await asyncio.sleep(seconds)
        started.append((inp.key, start, time.monotonic()))
        return f"value of {inp.key}"

    return build_tool(
        name="Probe",
        input_model=Key,
        description="Look up a key.",
        call=call,
        is_read_only=True,
        is_concurrency_safe=True,
    )


@pytest.fixture(params=WIRES, ids=lambda w: w.name)
def wire(request) -> Wire:
    return request.param


@pytest.fixture
def server(wire):
    with wire.server() as s:
        yield s


@pytest.fixture
async def model(wire, server):
    """The provider's model on the local server; its HTTP client is closed after the test."""
    made = wire.model(server)
    yield made
    await made.aclose()


async def test_read_edit_with_an_approval(wire, server, model, tmp_path):
    (tmp_path / "notes.txt").write_text("We agreed on teh plan.\n")
    server.add(
        wire.reply([{"type": "text", "text": "Reading the notes."}, use("Read", "toolu_r1", file_path="notes.txt")]),
        wire.reply([use("Edit", "toolu_e1", file_path="notes.txt", old_string="teh plan", new_string="the plan")]),
        wire.reply([{"type": "text", "text": "Fixed the typo."}]),
    )
    asked: list[PermissionRequest] = []

    def person(request: PermissionRequest) -> str:
        asked.append(request)
        return "allow"

    agent = Agent(model=model, cwd=tmp_path, approver=person)
    result = await agent.arun("fix the typo in notes.txt")

    assert (result.stop_reason, result.text) == ("end_turn", "Fixed the typo."), result.error
    assert (tmp_path / "notes.txt").read_text() == "We agreed on the plan.\n"
    assert [r.tool_name for r in asked] == ["Edit"], "the edit asked once; the read did not"
    assert len(server.requests) == 3
    for sent in server.requests:
        wire.check_request(sent)
    assert "teh plan" in wire.tool_results(server.requests[1].body)[-1]
    assert "notes.txt" in wire.tool_results(server.requests[2].body)[-1]
    assert history_problems(agent.messages) == []
    assert agent.messages[1]["content"][1]["name"] == "Read"  # the history is Anthropic-format on every wire
    if wire.name != "openai":  # Claude on every platform gets the same prompt-cache breakpoints
        body = server.requests[1].body
        assert body["system"][-1]["cache_control"] == body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
        assert body["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}


async def test_parallel_reads_start_while_the_reply_streams(wire, server, model, tmp_path):
    ran: list[tuple[str, float, float]] = []
    server.add(
        wire.reply([use("Probe", "toolu_a", key="alpha"), use("Probe", "toolu_b", key="beta")], tail_delay=0.6),
        wire.reply([{"type": "text", "text": "Both found."}]),
    )
    agent = Agent(model=model, cwd=tmp_path, tools=[probe(ran, 1.0)], approver=lambda r: "allow")

    result = await agent.arun("look up alpha and beta")

    assert result.text == "Both found." and sorted(k for k, _, _ in ran) == ["alpha", "beta"]
    times = {k: (start, end) for k, start, end in ran}
    ended = server.sent_time(wire.end_event, request=0)
    assert times["alpha"][0] < ended, "the first call started while the reply was still streaming"
    assert times["beta"][0] < times["alpha"][1], "the two reads ran at the same time"
    assert sorted(wire.tool_results(server.requests[1].body)) == ["value of alpha", "value of beta"]


async def test_interrupt_while_the_model_streams(wire, server, model, tmp_path):
    events = wire.reply([{"type": "text", "text": "I will think about this for a long while"}], end=False)
    server.add(Reply(events=events, hold_open=True))
    agent = Agent(model=model, cwd=tmp_path, tools=[])
    streaming = asyncio.Event()
    agent.on_event(lambda e: streaming.set() if isinstance(e, TextEvent) else None)

    task = asyncio.ensure_future(agent.arun("take your time"))
    await asyncio.wait_for(streaming.wait(), 20)
    agent.interrupt()
    result = await asyncio.wait_for(task, 20)

    assert result.stop_reason == "interrupted"
    assert await asyncio.to_thread(server.wait_disconnect, 10), "the client closed the stream"
    assert history_problems(agent.messages) == []


async def test_too_long_is_compacted_and_sent_again(wire, server, model, tmp_path):
    server.add(
        wire.reply([{"type": "text", "text": "The first answer."}]),
        wire.error("context_too_long"),
        wire.reply([{"type": "text", "text": "Summary: the person asked a first question and got an answer."}]),
        wire.reply([{"type": "text", "text": "The second answer."}]),
    )
    agent = Agent(model=model, cwd=tmp_path, tools=[])
    assert (await agent.arun("first question")).text == "The first answer."

    result = await agent.arun("second question")

    assert result.text == "The second answer.", result.error
    assert agent.context_manager.compactions == 1
    assert wire.is_summary_request(server.requests[2].body)
    assert "Summary: the person asked" in str(server.requests[3].body["messages"])
    assert history_problems(agent.messages) == []


@pytest.mark.parametrize("kind", ERROR_KINDS)
async def test_server_errors_end_the_run_and_say_why(wire, server, model, tmp_path, kind):
    server.add(wire.error(kind))
    agent = Agent(model=model, cwd=tmp_path, tools=[])

    result = await agent.arun("hello")

    assert (result.stop_reason, result.error_kind) == ("error", kind), result.error
    assert TITLES[wire.name].lower() in (result.error or "").lower()
    assert agent.messages == [], "a request the model never answered leaves no trace"
