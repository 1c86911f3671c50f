"""Memory a conversation holds after 1,000 tool turns with 10 KB results, against the results' text.

The conversation has to keep every tool_result (the model sees them again each request), so
the floor is the text itself; what the runtime adds on top (records, traces, request logs,
copies) is the overhead. Measured with tracemalloc in a fresh subprocess, with the agent still
alive after the run, as current traced memory after minus before.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

__all__ = ["retained_after_turns"]

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import asyncio, gc, json, sys, tempfile, tracemalloc
sys.path.insert(0, ROOT)
from typing import Any
from pydantic import BaseModel
from ipy_agent import Agent, ScriptedModel, build_tool

TURNS, SIZE = int(sys.argv[1]), int(sys.argv[2])

class Fetch(BaseModel):
    i: int

async def fetch(inp: Fetch, ctx: Any) -> str:
    # distinct text per call, so nothing can be shared between results
    return (f"{inp.i:08d} " * (SIZE // 9 + 1))[:SIZE]

tool = build_tool(name="fetch", input_model=Fetch, description="Returns 10 KB.", call=fetch,
                  is_read_only=True, is_concurrency_safe=True)
turns = [[{"type": "tool_use", "id": f"f{i}", "name": "fetch", "input": {"i": i}}] for i in range(TURNS)]
gc.collect()
tracemalloc.start()
before = tracemalloc.get_traced_memory()[0]
agent = Agent(model=ScriptedModel([*turns, "done"]), tools=[tool], cwd=tempfile.mkdtemp(), system_prompt="bench",
              max_turns=TURNS + 5)
result = asyncio.run(agent.arun("go"))
assert result.text == "done", result
gc.collect()
after = tracemalloc.get_traced_memory()[0]
print(json.dumps({"retained": after - before, "text": TURNS * SIZE}))
""".replace("ROOT", repr(str(ROOT)))


def retained_after_turns(turns: int = 1000, size: int = 10_000) -> tuple[int, int]:
    """(bytes retained by the agent after the run, bytes of result text)."""
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(turns), str(size)], capture_output=True, text=True, cwd=ROOT, check=False
    )
    if out.returncode != 0:
        raise RuntimeError(f"memory benchmark failed:\n{out.stderr[-2000:]}")
    data = json.loads(out.stdout.strip().splitlines()[-1])
    return int(data["retained"]), int(data["text"])
