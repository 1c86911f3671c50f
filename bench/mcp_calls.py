"""MCP call overhead: a call through the agent's manager (marshalled from the caller's loop to the
MCP thread and back, plus result mapping) against the same call on a bare SDK session in one loop.

Both talk to the same real stdio server (tests/support/mcp_servers/toolbox.py), one after the other in the
same run, so the ratio does not depend on the machine. Target: ratio <= 1.5 (the hop between
threads should cost little next to the server's own work).

    python bench/mcp_calls.py [--calls N]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOOLBOX = str(ROOT / "tests" / "support" / "mcp_servers" / "toolbox.py")
TARGET = 1.5


async def bare(calls: int) -> list[float]:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    times = []
    async with (
        stdio_client(
            StdioServerParameters(command=sys.executable, args=[TOOLBOX]), errlog=tempfile.TemporaryFile()
        ) as (r, w),
        ClientSession(r, w) as s,
    ):
        await s.initialize()
        await s.list_tools()
        for _ in range(calls):
            t = time.perf_counter()
            await s.call_tool("lookup", {"key": "k"})
            times.append(time.perf_counter() - t)
    return times


async def managed(calls: int) -> tuple[list[float], float]:
    from ipy_agent.mcp import McpManager
    from ipy_agent.mcp.tools import McpTool

    manager = McpManager(tempfile.mkdtemp(), {"tb": {"command": sys.executable, "args": [TOOLBOX]}})
    t = time.perf_counter()
    await manager.sync(None)
    startup = time.perf_counter() - t
    tool = next(x for x in manager.tools() if x.name == "mcp__tb__lookup")
    assert isinstance(tool, McpTool)
    times = []
    try:
        for _ in range(calls):
            t = time.perf_counter()
            out = await tool.call(tool.input_model(key="k"), None)  # type: ignore[arg-type]
            tool.map_result(out, "x")
            times.append(time.perf_counter() - t)
    finally:
        await manager.aclose()
    return times, startup


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    base = asyncio.run(bare(args.calls))
    ours, startup = asyncio.run(managed(args.calls))
    b, o = statistics.median(base), statistics.median(ours)
    print(f"bare SDK session: median {b * 1000:.2f} ms per call ({args.calls} calls)")
    print(f"through McpManager: median {o * 1000:.2f} ms per call; first sync (import + start + list) {startup:.1f} s")
    ratio = o / b
    print(f"ratio {ratio:.2f} (target <= {TARGET}) {'OK' if ratio <= TARGET else 'OVER'}")


if __name__ == "__main__":
    main()
