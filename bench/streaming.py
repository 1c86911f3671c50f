"""How much earlier a run ends when tools start as their tool_use blocks complete.

Replays, from a local Messages API server (tests/support/sse_server.py) through the real
anthropic client, an assistant message whose tool_use blocks arrive spaced in time, and runs
the same Agent twice: with streaming tool execution (the default: a call starts at its
`content_block_stop`) and with `streaming_tools=False` (calls start after `message_stop`).

Two shapes of tool call, because they gain differently:
- calls that may run together (read-only and concurrency-safe): the run can only end after the
  LAST call, which starts as its block completes either way, so streaming saves about the
  time between that block and `message_stop` (the `--tail`);
- calls that must run one at a time: with streaming, each runs while the next block is still
  being generated, so the chain overlaps the generation instead of following it.

Usage: /work/venv/bin/python bench/streaming.py [--calls 3] [--spacing 0.3] [--tool 0.3]
       [--tail 0.1] [--reps 3]
Timings are wall times of `agent.arun()` (two model requests each); the median of --reps.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pydantic import BaseModel, ConfigDict, Field

from ipy_agent import Agent, build_tool
from ipy_agent.models.anthropic import AnthropicModel
from tests.support.sse_server import ReplayServer, message_events


class LookupInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    key: str = Field(description="What to look up.")


def lookup_tool(seconds: float, concurrency_safe: bool):
    async def call(inp: LookupInput, ctx: Any) -> str:
        await asyncio.sleep(seconds)  # stands in for a file read, a search, a query
        return f"value of {inp.key}"

    return build_tool(
        name="Lookup",
        input_model=LookupInput,
        description="Look up a key (benchmark tool).",
        call=call,
        is_read_only=True,
        is_concurrency_safe=concurrency_safe,
    )


def script(server: ReplayServer, args: argparse.Namespace) -> None:
    uses = [
        {"type": "tool_use", "id": f"toolu_{i}", "name": "Lookup", "input": {"key": f"k{i}"}, "_delay": args.spacing}
        for i in range(args.calls)
    ]
    server.add(
        message_events([{"type": "text", "text": "Looking these up."}, *uses], tail_delay=args.tail),
        message_events([{"type": "text", "text": "Done."}]),
    )


async def one_run(server: ReplayServer, args: argparse.Namespace, *, streaming: bool, safe: bool) -> float:
    script(server, args)
    with tempfile.TemporaryDirectory() as cwd:
        model = AnthropicModel("claude-bench", api_key="bench", base_url=server.url, max_retries=0)
        agent = Agent(
            model=model,
            cwd=cwd,
            tools=[lookup_tool(args.tool, safe)],
            allow=["Lookup"],
            approver=lambda req: "allow",
            streaming_tools=streaming,
        )
        start = time.perf_counter()
        result = await agent.arun("look everything up")
        elapsed = time.perf_counter() - start
        await model.aclose()
    if result.stop_reason != "end_turn":
        print(f"  warning: run ended with {result.stop_reason!r}: {result.error}")
    return elapsed


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=3, help="tool_use blocks in the message")
    parser.add_argument("--spacing", type=float, default=0.3, help="seconds between tool_use blocks")
    parser.add_argument("--tool", type=float, default=0.3, help="seconds each tool call takes")
    parser.add_argument("--tail", type=float, default=0.1, help="seconds from the last block to message_stop")
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()

    print(
        f"{args.calls} tool calls, blocks {args.spacing:.2f} s apart, each call {args.tool:.2f} s, "
        f"message_stop {args.tail:.2f} s after the last block; median of {args.reps} runs\n"
    )
    print(f"{'calls':<22}{'streaming':>11}{'after message':>15}{'ends earlier by':>17}{'ratio':>8}")
    with ReplayServer() as server:
        for label, safe in (("run together (safe)", True), ("one at a time", False)):
            times = {}
            for streaming in (True, False):
                runs = [await one_run(server, args, streaming=streaming, safe=safe) for _ in range(args.reps)]
                times[streaming] = statistics.median(runs)
            saved = times[False] - times[True]
            print(
                f"{label:<22}{times[True]:>10.2f}s{times[False]:>14.2f}s{saved:>16.2f}s"
                f"{times[False] / times[True]:>7.2f}x"
            )


if __name__ == "__main__":
    asyncio.run(main())
