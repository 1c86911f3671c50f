"""Reading pages of a big file in any order gives the same lines as reading it from the top.

Files over 8 MB are streamed, and the block starts of each scan are kept as a line index so
the next page does not count from the top again. The index must never shift a line.
"""

from __future__ import annotations

import asyncio
import random

from ipy_agent.runtime.read_state import ReadState
from ipy_agent.runtime.tool import ToolContext
from ipy_agent.tools.read import ReadTool


def _numbered_lines(out) -> list[str]:
    content = ReadTool().map_result(out, "t")["content"]
    text = content if isinstance(content, str) else content[0]["text"]
    return [line for line in text.splitlines() if "\t" in line]


def test_pages_in_any_order_match_the_file(tmp_path):
    path = tmp_path / "big.log"
    rng = random.Random(7)
    # uneven line lengths so block boundaries fall mid-line
    lines = [f"{i} " + "x" * rng.randrange(0, 120) for i in range(200_000)]
    path.write_text("\n".join(lines) + "\n")
    assert path.stat().st_size > 12 * 1024 * 1024
    tool = ReadTool()
    ctx = ToolContext(cwd=tmp_path, read_state=ReadState())

    async def page(offset: int, limit: int = 3):
        return await tool.call(tool.input_model(file_path=str(path), offset=offset, limit=limit), ctx)

    # pages that start exactly at a scanned block's first full line, where an off-by-one in
    # the index would show (blocks are 4 MiB; count the newlines before each block start)
    data = path.read_bytes()
    at_blocks = [data.count(b"\n", 0, k * 4 * 1024 * 1024) + 1 for k in (1, 2)]
    offsets = [190_000, *at_blocks, 1, 150_000, 150_001, 99_999, 199_998, 60_000, 190_000]
    for offset in offsets:
        got = _numbered_lines(asyncio.run(page(offset)))
        want = [f"{n}\t{lines[n - 1]}" for n in range(offset, min(offset + 3, len(lines) + 1))]
        assert [g.strip() for g in got] == want, offset
    # a changed file invalidates the index: same size and mtime never both survive a rewrite
    lines[150_000] = "changed " + lines[150_000]
    path.write_text("\n".join(lines) + "\n")
    got = _numbered_lines(asyncio.run(page(150_001, 1)))
    assert got[0].strip() == f"150001\t{lines[150_000]}"
