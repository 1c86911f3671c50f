"""Per-call cost of the whole tool lifecycle, next to pydantic-ai's, measured in the same run.

Both frameworks run the same conversation many times: the model asks for one no-op tool call,
then ends its turn. The model is free on both sides (ScriptedModel here, FunctionModel there),
so what is measured is the runtime: parse, validate, permission, call, map, budget, trace and
the loop around them. Runs alternate between the two so machine noise hits both alike.

Run: python bench/overhead.py [--runs 2000] [--rounds 5]
Target: our cost at most a quarter of pydantic-ai's for the same no-op tool turn.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pydantic import BaseModel  # noqa: E402

from ipy_agent import Agent, ScriptedModel, build_tool  # noqa: E402


class Noop(BaseModel):
    x: int


async def _noop(inp: Noop, ctx) -> str:
    return "ok"


NOOP_TOOL = build_tool(name="noop", input_model=Noop, description="Does nothing.", call=_noop, is_read_only=True,
                       is_concurrency_safe=True)
CWD = tempfile.mkdtemp()


async def ours(runs: int) -> float:
    start = time.perf_counter()
    for i in range(runs):
        model = ScriptedModel([[{"type": "tool_use", "id": f"t{i}", "name": "noop", "input": {"x": i}}], "done"])
        agent = Agent(model=model, tools=[NOOP_TOOL], cwd=CWD, system_prompt="bench")
        result = await agent.arun("go")
        assert result.text == "done" and agent.messages[2]["content"][0]["content"] == "ok"
    return (time.perf_counter() - start) / runs


def _pydantic_ai_agent():
    from pydantic_ai import Agent as PAgent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    def respond(messages, info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        if any(isinstance(p, ToolReturnPart) for p in last.parts):
            return ModelResponse(parts=[TextPart("done")])
        return ModelResponse(parts=[ToolCallPart("noop", {"x": 1})])

    agent = PAgent(FunctionModel(respond), system_prompt="bench")

    @agent.tool_plain
    async def noop(x: int) -> str:
        """Does nothing."""
        return "ok"

    return agent


async def theirs(runs: int, agent) -> float:
    start = time.perf_counter()
    for _ in range(runs):
        result = await agent.run("go")
        assert result.output == "done"
    return (time.perf_counter() - start) / runs


async def main(runs: int, rounds: int) -> None:
    p_agent = _pydantic_ai_agent()
    await ours(50)  # warm up imports and caches on both sides
    await theirs(50, p_agent)
    ours_t, theirs_t = [], []
    for _ in range(rounds):
        ours_t.append(await ours(runs))
        theirs_t.append(await theirs(runs, p_agent))
    o, t = statistics.median(ours_t), statistics.median(theirs_t)
    ratios = [a / b for a, b in zip(ours_t, theirs_t)]
    print(f"one no-op tool-call turn (model request + call + final request), {runs} runs x {rounds} rounds")
    print(f"{'':24}{'median/turn':>14}{'best':>12}")
    print(f"{'ipy_agent':24}{o * 1e6:>11.0f} us{min(ours_t) * 1e6:>9.0f} us")
    print(f"{'pydantic-ai FunctionModel':24}{t * 1e6:>11.0f} us{min(theirs_t) * 1e6:>9.0f} us")
    print(f"ratio ipy_agent / pydantic-ai: median {o / t:.2f} (paired rounds {min(ratios):.2f}-{max(ratios):.2f}); target <= 0.25")
    print(f"share of a one-second model turn: {o / 1.0 * 100:.3f}%")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    asyncio.run(main(args.runs, args.rounds))
