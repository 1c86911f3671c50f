"""Streaming tool execution: our run against the SDK's own `tool_runner`, eager, on one stream.

Both clients talk to the same local Messages API (tests/support/sse_server.py), which replays an
assistant message whose three tool_use blocks arrive 0.3 s apart; each call takes 0.3 s. The
SDK's runner with `run_tools_eagerly=True` starts a tool as its block arrives, as we do; what
differs is what happens around it (running calls together, the end of the stream).
"""

from __future__ import annotations

import argparse
import asyncio
import time

from anthropic import AsyncAnthropic, beta_async_tool

from bench.streaming import one_run, script
from tests.support.sse_server import ReplayServer

__all__ = ["streaming_pair"]

ARGS = argparse.Namespace(calls=3, spacing=0.3, tool=0.3, tail=0.1, reps=1)


async def _sdk_run(server: ReplayServer) -> float:
    script(server, ARGS)
    client = AsyncAnthropic(api_key="bench", base_url=server.url, max_retries=0)

    @beta_async_tool
    async def Lookup(key: str) -> str:
        """Look up a key (benchmark tool)."""
        await asyncio.sleep(ARGS.tool)
        return f"value of {key}"

    start = time.perf_counter()
    runner = client.beta.messages.tool_runner(
        model="claude-bench",
        max_tokens=1024,
        tools=[Lookup],
        stream=True,
        messages=[{"role": "user", "content": "look everything up"}],
        run_tools_eagerly=True,
    )
    async for stream in runner:
        async for _ in stream:
            pass
    elapsed = time.perf_counter() - start
    await client.close()
    return elapsed


async def _pairs(reps: int) -> tuple[list[float], list[float]]:
    ours: list[float] = []
    sdk: list[float] = []
    with ReplayServer() as server:
        await one_run(server, ARGS, streaming=True, safe=True)  # warm-up: imports, connections
        await _sdk_run(server)
        for i in range(reps):
            if i % 2:
                sdk.append(await _sdk_run(server))
                ours.append(await one_run(server, ARGS, streaming=True, safe=True))
            else:
                ours.append(await one_run(server, ARGS, streaming=True, safe=True))
                sdk.append(await _sdk_run(server))
    return ours, sdk


def streaming_pair(reps: int) -> tuple[list[float], list[float]]:
    """Wall seconds of whole runs (two requests each): ours, the SDK's eager tool_runner."""
    return asyncio.run(_pairs(reps))
