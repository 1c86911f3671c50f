"""Per-call cost of the whole tool lifecycle, next to pydantic-ai's, measured in the same run.

Both frameworks run the same conversation many times: the model asks for one no-op tool call,
then ends its turn. The model is free on both sides (ScriptedModel here, FunctionModel there),
so what is measured is the runtime: parse, validate, permission, call, map, budget, trace and
the loop around them. Runs alternate between the two so machine noise hits both alike.

Run: python bench/overhead.py [--runs 2000] [--rounds 5]
Target: our cost at most a quarter of pydantic-ai's for the same no-op tool turn.

The cost per turn must also stay flat as one conversation grows (no copies or scans of the whole
history per turn). `--growth` runs one conversation of 5,000 tool turns, with permission rules,
an approver and PreToolUse/PostToolUse hooks on, and prints the median runtime cost of a turn
around turn 50, 500 and 5,000 (the model is free: ScriptedModel).

Run: python bench/overhead.py --growth [--lengths 50,500,5000]
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

import itertools

from pydantic import BaseModel

from ipy_agent import Agent, ScriptedModel, build_tool
from ipy_agent.history.messages import history_problems


class Noop(BaseModel):
    x: int


async def _noop(inp: Noop, ctx) -> str:
    return "ok"


NOOP_TOOL = build_tool(
    name="noop", input_model=Noop, description="Does nothing.", call=_noop, is_read_only=True, is_concurrency_safe=True
)
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
    print(
        f"ratio ipy_agent / pydantic-ai: median {o / t:.2f} (paired rounds {min(ratios):.2f}-{max(ratios):.2f}); target <= 0.25"
    )
    print(f"share of a one-second model turn: {o / 1.0 * 100:.3f}%")


RESULT_TEXT = "x" * 200  # a small, realistic result: the history grows by it every turn
WINDOW = 25  # turns measured around each length


async def _growth_tool(inp: Noop, ctx) -> str:
    return RESULT_TEXT


async def growth(lengths: list[int]) -> None:
    """One conversation of max(lengths) tool turns; the median turn cost around each length."""
    total = max(lengths)
    turns: list = [[{"type": "tool_use", "id": f"t{i}", "name": "noop", "input": {"x": i}}] for i in range(total)]
    model = ScriptedModel([*turns, "done"], chunk_size=10_000)
    tool = build_tool(
        name="noop",
        input_model=Noop,
        description="Does nothing.",
        call=_growth_tool,
        is_read_only=True,
        is_concurrency_safe=True,
    )
    agent = Agent(
        model=model,
        tools=[tool],
        cwd=CWD,
        system_prompt="bench",
        max_turns=total + 1,
        allow=["noop", "Bash(git status:*)"],
        deny=["Read(**/.env)", "Bash(rm:*)"],
        ask=["Bash(git push:*)"],
        approver=lambda request: "deny",
    )
    agent.hooks.add("PreToolUse", lambda event: None)
    agent.hooks.add("PostToolUse", lambda event: None)
    starts: list[float] = []

    def on_event(event) -> None:
        if getattr(event, "kind", "") == "turn" and event.phase == "start":
            # CPU time of the process (all its threads): on a shared machine, wall time per turn
            # mostly measures who else had the CPU.
            starts.append(time.process_time())

    agent.on_event(on_event)
    began = time.perf_counter()
    result = await agent.arun("go")
    elapsed = time.perf_counter() - began
    # The context manager may clear old results as the history grows; the history stays valid.
    assert result.stop_reason == "end_turn" and result.turns == total + 1 and not history_problems(agent.messages), (
        result
    )
    per_turn = [b - a for a, b in itertools.pairwise(starts)]  # turn i: from its request to the next request
    print(f"one conversation of {total:,} tool turns, permissions and hooks on ({elapsed:.1f} s wall time in all)")
    print(f"CPU ms per turn{'':>1}{'median of ' + str(WINDOW):>23}{'mean':>10}{'mean, whole run so far':>26}")
    for n in lengths:
        window = per_turn[max(0, n - WINDOW) : n]
        so_far = per_turn[:n]
        print(
            f"{n:>14,}{statistics.median(window) * 1e3:>24.3f}{statistics.mean(window) * 1e3:>10.3f}"
            f"{statistics.mean(so_far) * 1e3:>26.3f}"
        )


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--growth", action="store_true", help="cost per turn as one conversation grows")
    ap.add_argument("--lengths", default="50,500,5000", help="conversation lengths (turns) to report with --growth")
    args = ap.parse_args()
    if args.growth:
        asyncio.run(growth(sorted(int(n) for n in args.lengths.split(","))))
    else:
        asyncio.run(main(args.runs, args.rounds))
