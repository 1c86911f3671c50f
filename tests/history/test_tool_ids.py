"""tool_use ids the model sends are untrusted: repeated, malformed or non-string ids are replaced,
across turns and across a history replaced behind the agent's back, and the history stays valid."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from ipy_agent import Agent
from ipy_agent.history.messages import history_problems
from ipy_agent.history.tool_ids import HistoryIds, ToolUseIds
from ipy_agent.models.base import BlockComplete, MessageComplete, ModelRequest, Usage
from tests.support.transcript import use


class RepeatsIds:
    """A model (or proxy) that sends the same ids every turn, plus malformed ones, then stops."""

    name = "repeats"

    def __init__(self, turns: int) -> None:
        self.turns = turns
        self.requests: list[list[dict[str, Any]]] = []

    async def stream(self, request: ModelRequest) -> AsyncIterator[Any]:
        self.requests.append(list(request.messages))
        await asyncio.sleep(0)
        if len(self.requests) > self.turns:
            content: list[dict[str, Any]] = [{"type": "text", "text": "done"}]
            yield MessageComplete(content=content, stop_reason="end_turn", usage=Usage(input_tokens=1))
            return
        content = [
            {**use("R", "dup", text="a"), "id": "dup"},
            {**use("R", "x", text="b"), "id": "../../etc"},
            {**use("R", "y", text="c"), "id": 7},
        ]
        for i, block in enumerate(content):
            yield BlockComplete(block=block, index=i)
        yield MessageComplete(content=content, stop_reason="tool_use", usage=Usage(input_tokens=1))


def _ids(messages: list[dict[str, Any]]) -> list[str]:
    return [
        b["id"] for m in messages if isinstance(m["content"], list) for b in m["content"] if b["type"] == "tool_use"
    ]


async def test_repeated_and_malformed_ids_are_replaced_in_every_turn(tmp_path, rec):
    model = RepeatsIds(turns=3)
    agent = Agent(model=model, tools=[rec.tool("R", read_only=True)], cwd=tmp_path)
    result = await asyncio.wait_for(agent.arun("go"), 20)

    assert result.stop_reason == "end_turn"
    ids = _ids(agent.messages)
    assert len(ids) == 9 and len(set(ids)) == 9  # the model sent "dup" three times
    assert ids[0] == "dup" and "dup" not in ids[1:]
    assert all(i.replace("_", "").replace("-", "").isalnum() for i in ids)  # no path characters, no numbers
    assert history_problems(agent.messages) == []
    # What the model is sent next answers each of its calls exactly once, under the fixed ids.
    answered = [
        b["tool_use_id"]
        for m in model.requests[-1]
        if m["role"] == "user" and isinstance(m["content"], list)
        for b in m["content"]
        if b["type"] == "tool_result"
    ]
    assert sorted(answered) == sorted(ids)


async def test_a_history_replaced_between_runs_is_counted_afresh(tmp_path, rec):
    agent = Agent(model=RepeatsIds(turns=1), tools=[rec.tool("R", read_only=True)], cwd=tmp_path)
    await asyncio.wait_for(agent.arun("go"), 20)
    first = _ids(agent.messages)
    # A resumed conversation: new message objects with the same content (the index's anchor differs).
    agent.messages = [{**m} for m in agent.messages]
    agent.model = RepeatsIds(turns=1)
    await asyncio.wait_for(agent.arun("again"), 20)
    ids = _ids(agent.messages)
    assert ids[:3] == first and len(set(ids)) == 6
    assert history_problems(agent.messages) == []


def test_history_ids_follow_growth_replacement_and_shrinking():
    msgs: list[dict[str, Any]] = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [use("R", "a1"), use("R", "a2")]},
    ]
    index = HistoryIds()
    assert "a1" in index.synced(msgs) and "a2" in index  # the last message counts too
    msgs.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a1", "content": "ok"}]})
    msgs.append({"role": "assistant", "content": [use("R", "b1")]})
    assert "a1" in index.synced(msgs) and "b1" in index
    msgs[-1] = {"role": "assistant", "content": [use("R", "c1")]}  # the last message replaced
    assert "c1" in index.synced(msgs) and "b1" not in index
    del msgs[1:]  # a reset
    assert "a1" not in index.synced(msgs)
    fixer = ToolUseIds(
        index.synced([{"role": "assistant", "content": [use("R", "z")]}, {"role": "user", "content": "x"}])
    )
    assert fixer.fix(use("R", "z"))["id"] != "z" and fixer.fix(use("R", "fresh"))["id"] == "fresh"
