"""Runtime cost of one tool turn deep into a conversation, next to pydantic-ai's.

A conversation of N tool turns is built first (the history a long session has); then both
frameworks run K more tool turns on top of it, and we time those K turns. We first run one
prompt of one tool turn on the loaded history, untimed: it indexes the history once (what a
resumed conversation pays once, `first_run_seconds`), as a session that grew turn by turn
already has; the K timed turns are then what every further turn costs. The model is free on
both sides (ScriptedModel here, FunctionModel there), so the time is the runtime's own: what it
does per turn with a history of that length. Permissions and hooks are on for us (an allow rule
decides every call; a PreToolUse and a PostToolUse hook run), which pydantic-ai has no
equivalent of, so the comparison is conservative.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from typing import Any

from pydantic import BaseModel

from ipy_agent import Agent, ScriptedModel, build_tool

__all__ = ["first_run_seconds", "ours_per_turn", "pydantic_ai_per_turn"]

K = 20  # turns timed on top of the built history (fewer at 5,000: a peer turn there takes seconds)
OUR_K = 100  # ours are cheap at any length: more turns per sample, less noise in the flatness ratio


def turns_timed(n: int) -> int:
    return K if n <= 1000 else 5


class Noop(BaseModel):
    x: int


async def _noop(inp: Noop, ctx: Any) -> str:
    return "ok"


NOOP = build_tool(name="noop", input_model=Noop, description="Does nothing.", call=_noop)
CWD = tempfile.mkdtemp(prefix="ipy-agent-bench-")


def _history(n: int) -> list[dict[str, Any]]:
    msgs: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for i in range(n):
        msgs.append(
            {"role": "assistant", "content": [{"type": "tool_use", "id": f"h{i}", "name": "noop", "input": {"x": i}}]}
        )
        msgs.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"h{i}", "content": "ok"}]})
    msgs.append({"role": "assistant", "content": [{"type": "text", "text": "done"}]})
    return msgs


def _loaded_agent(n: int, k: int) -> Agent:
    turns: list[Any] = [[{"type": "tool_use", "id": f"k{i}", "name": "noop", "input": {"x": i}}] for i in range(k)]
    first: list[Any] = [[{"type": "tool_use", "id": "w0", "name": "noop", "input": {"x": 0}}], "ready"]
    # keep_requests=0: the scripted model's log of requests is a test aid, not the runtime's cost.
    agent = Agent(
        model=ScriptedModel([*first, *turns, "done"], keep_requests=0),
        tools=[NOOP],
        cwd=CWD,
        system_prompt="bench",
        allow=["noop"],
        max_turns=k + 5,
    )
    agent.hooks.add("PreToolUse", lambda event: None)
    agent.hooks.add("PostToolUse", lambda event: None)
    agent.messages = _history(n)
    return agent


def first_run_seconds(n: int) -> float:
    """Seconds of the first prompt (one tool turn) on a loaded history of `n` turns."""
    agent = _loaded_agent(n, 0)
    start = time.perf_counter()
    result = asyncio.run(agent.arun("load"))
    elapsed = time.perf_counter() - start
    assert result.text == "ready", result
    return elapsed


def ours_per_turn(n: int) -> float:
    """Seconds per tool turn with `n` turns already in the conversation."""
    k = OUR_K
    agent = _loaded_agent(n, k)

    async def run() -> float:
        assert (await agent.arun("load")).text == "ready"
        start = time.perf_counter()
        result = await agent.arun("go on")
        elapsed = time.perf_counter() - start
        assert result.text == "done", result
        return elapsed

    return asyncio.run(run()) / k


def pydantic_ai_per_turn(n: int) -> float:
    from pydantic_ai import Agent as PAgent
    from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart, UserPromptPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    k = turns_timed(n)
    calls = [0]

    def respond(messages: list[Any], info: AgentInfo) -> ModelResponse:
        calls[0] += 1
        if calls[0] > k:
            return ModelResponse(parts=[TextPart("done")])
        return ModelResponse(parts=[ToolCallPart("noop", {"x": calls[0]}, tool_call_id=f"k{calls[0]}")])

    agent = PAgent(FunctionModel(respond), system_prompt="bench")

    @agent.tool_plain
    async def noop(x: int) -> str:
        """Does nothing."""
        return "ok"

    history: list[Any] = [ModelRequest(parts=[UserPromptPart("go")])]
    for i in range(n):
        history.append(ModelResponse(parts=[ToolCallPart("noop", {"x": i}, tool_call_id=f"h{i}")]))
        history.append(ModelRequest(parts=[ToolReturnPart("noop", "ok", tool_call_id=f"h{i}")]))
    history.append(ModelResponse(parts=[TextPart("done")]))
    start = time.perf_counter()
    result = asyncio.run(agent.run("go on", message_history=history))
    elapsed = time.perf_counter() - start
    assert result.output == "done"
    return elapsed / k
