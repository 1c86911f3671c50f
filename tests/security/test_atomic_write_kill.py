"""Atomic writes, killed with SIGKILL at random points: the file is old or new, never partial.

A child process writes a large file over and over through the Write tool (alternating two
contents); we SIGKILL it at a random moment (fixed seed) and look at the file. It must be exactly
one of the contents, and the only litter a kill may leave is the documented temporary name
`.<name>.<random>.tmp` beside the target (a process killed between creating and renaming it
cannot remove it; its name says what it is).
"""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

KILLS = 20
SIZE = 3 * 1024 * 1024
_CHILD = r"""
import asyncio, sys
from pathlib import Path
from ipy_agent.contract.decision import CallDecision
from ipy_agent.contract.read_state import ReadState
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.tools.files.write import WriteTool, WriteInput

target = Path(sys.argv[1])
contents = [("a" * 99 + "\n") * (int(sys.argv[2]) // 100), ("b" * 99 + "\n") * (int(sys.argv[2]) // 100)]
ctx = ToolContext(cwd=target.parent, read_state=ReadState())
person = CallDecision(source="person")
ctx.read_state.record(target, content=target.read_bytes())  # as after a full Read

async def main():
    tool, i = WriteTool(), 0
    while True:
        await tool.call(WriteInput(file_path=str(target), content=contents[i % 2]), ctx, person)
        if i == 0:
            print("ready", flush=True)
        i += 1

asyncio.run(main())
"""
TEMP_PATTERN = re.compile(r"^\.big\.txt\.[^/]+\.tmp$")


@pytest.mark.slow
def test_sigkill_at_random_points_leaves_old_or_new(tmp_path):
    target = tmp_path / "big.txt"
    old = ("o" * 99 + "\n") * (SIZE // 100)
    target.write_text(old)
    valid = {old, ("a" * 99 + "\n") * (SIZE // 100), ("b" * 99 + "\n") * (SIZE // 100)}
    rng = random.Random(9)
    partial, litter_names = 0, set()
    for _ in range(KILLS):
        child = subprocess.Popen(
            [sys.executable, "-c", _CHILD, str(target), str(SIZE)],
            stdout=subprocess.PIPE,
            cwd=Path(__file__).resolve().parents[2],
        )
        assert child.stdout is not None
        assert child.stdout.readline().strip() == b"ready"
        time.sleep(rng.uniform(0, 0.25))
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        if target.read_text() not in valid:
            partial += 1
        litter_names |= {p.name for p in tmp_path.iterdir() if p.name != "big.txt"}
    print(
        f"\n[atomic writes] SIGKILLs: {KILLS}; partial files: {partial}; temporary files left: {len(litter_names)} "
        f"(pattern .big.txt.*.tmp)"
    )
    assert partial == 0
    assert all(TEMP_PATTERN.match(n) for n in litter_names), litter_names
