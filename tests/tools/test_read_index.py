"""Reading pages of a big file in any order gives the same lines as reading it from the top.

Files over 8 MB are streamed, and the block starts of each scan are kept as a line index so
the next page does not count from the top again. The index must never shift a line.
"""

from __future__ import annotations

import asyncio
import random

from ipy_agent.contract.read_state import ReadState
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.tools.files.read import ReadTool


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


def test_far_ranges_of_very_big_files_found_by_tail_match_the_file(tmp_path, monkeypatch):
    import shutil

    from ipy_agent.tools.files import read_text as _read_text

    assert shutil.which("tail"), "coreutils tail is expected on the test machine"
    monkeypatch.setattr(_read_text, "TAIL_MIN_BYTES", 1024 * 1024)  # the real threshold is 256 MB
    path = tmp_path / "huge.log"
    lines = [f"{i} " + ("y" * (i % 97)) + ("\r" if i % 5 == 0 else "") for i in range(300_000)]
    lines[120_000] = "z" * 5000  # a line to cut
    path.write_text("\n".join(lines) + "\n")
    assert path.stat().st_size > _read_text.WHOLE_FILE_BYTES  # streamed, not loaded whole
    tool = ReadTool()
    ctx = ToolContext(cwd=tmp_path, read_state=ReadState())

    def page(offset: int, limit: int = 4) -> str:
        out = asyncio.run(tool.call(tool.input_model(file_path=str(path), offset=offset, limit=limit), ctx))
        content = tool.map_result(out, "t")["content"]
        return content if isinstance(content, str) else content[0]["text"]

    text = page(119_999)
    got = [line.strip() for line in text.splitlines() if "\t" in line]
    assert got[0] == f"119999\t{lines[119_998]}".replace("\r", "")
    assert got[2].startswith("120001\t" + "z" * 100) and len(got[2]) < 2100  # cut, with a marker
    assert "the file goes on" in text and "offset=120003" in text
    # the last lines: the range reaches the end, so the total is known
    tail_text = page(299_998, 10)
    assert [line.split("\t")[0].strip() for line in tail_text.splitlines() if "\t" in line] == [
        "299998",
        "299999",
        "300000",
    ]
    # past the end, the Python scan counts the lines to say how many there are
    import pytest

    from ipy_agent import ToolError

    with pytest.raises(ToolError, match="300,000 lines"):
        page(300_001)
