"""Ten 100 ms tool calls in one model message, against one such call, for us and pydantic-ai.

Calls that are read-only and concurrency-safe run together, so ten of them should take about
as long as one. Both an async tool (awaits) and a sync tool (blocks a thread) are measured: a
sync tool needs a worker thread per call in the batch, or the batch queues behind the pool.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from typing import Any

from pydantic import BaseModel

from ipy_agent import Agent, ScriptedModel, build_tool

__all__ = ["ours_batch", "pydantic_ai_batch"]

CALL = 0.1
CWD = tempfile.mkdtemp(prefix="ipy-agent-bench-")


class Wait(BaseModel):
    i: int


async def _async_wait(inp: Wait, ctx: Any) -> str:
    await asyncio.sleep(CALL)
    return "ok"


def _sync_wait(inp: Wait, ctx: Any) -> str:
    time.sleep(CALL)
    return "ok"


def _tool(sync: bool) -> Any:
    return build_tool(
        name="wait",
        input_model=Wait,
        description="Waits 100 ms.",
        call=_sync_wait if sync else _async_wait,
        is_read_only=True,
        is_concurrency_safe=True,
    )


def ours_batch(calls: int, sync: bool) -> float:
    """Seconds for one run whose model asks for `calls` calls in one message."""
    uses = [{"type": "tool_use", "id": f"w{i}", "name": "wait", "input": {"i": i}} for i in range(calls)]
    agent = Agent(model=ScriptedModel([uses, "done"]), tools=[_tool(sync)], cwd=CWD, system_prompt="bench")
    start = time.perf_counter()
    result = asyncio.run(agent.arun("go"))
    elapsed = time.perf_counter() - start
    assert result.text == "done" and len(agent.messages[2]["content"]) == calls
    return elapsed


def pydantic_ai_batch(calls: int, sync: bool) -> float:
    from pydantic_ai import Agent as PAgent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    def respond(messages: list[Any], info: AgentInfo) -> ModelResponse:
        if any(isinstance(p, ToolReturnPart) for p in messages[-1].parts):
            return ModelResponse(parts=[TextPart("done")])
        return ModelResponse(parts=[ToolCallPart("wait", {"i": i}, tool_call_id=f"w{i}") for i in range(calls)])

    agent = PAgent(FunctionModel(respond), system_prompt="bench")
    if sync:

        @agent.tool_plain
        def wait(i: int) -> str:
            """Waits 100 ms."""
            time.sleep(CALL)
            return "ok"
    else:

        @agent.tool_plain
        async def wait(i: int) -> str:
            """Waits 100 ms."""
            await asyncio.sleep(CALL)
            return "ok"

    start = time.perf_counter()
    result = asyncio.run(agent.run("go"))
    elapsed = time.perf_counter() - start
    assert result.output == "done"
    return elapsed
