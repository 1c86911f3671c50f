"""Read: what the model receives for each kind of file, what the person sees, what is recorded."""

from __future__ import annotations

import base64
import codecs
import hashlib
import os
import socket
import struct
import threading
import tracemalloc
import zlib
from pathlib import Path

import nbformat
import pytest

from ipy_agent.contract.read_state import ReadState
from ipy_agent.contract.tool import RuleSubject, ToolError
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.tools.files.read import ReadTool


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(cwd=tmp_path, read_state=ReadState(), spill_dir=tmp_path.parent / f"{tmp_path.name}-spill")


async def read(ctx: ToolContext, **fields):
    tool = ReadTool()
    out = await tool.call(tool.input_model(**fields), ctx)
    return tool.map_result(out, "toolu_1")["content"], tool.summarize_result(out)


async def read_error(ctx: ToolContext, **fields) -> str:
    with pytest.raises(ToolError) as err:
        await read(ctx, **fields)
    return str(err.value)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def png_bytes(width: int = 3, height: int = 2) -> bytes:
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


# --- text ------------------------------------------------------------------------------------


async def test_whole_file_numbered_and_recorded(ctx, tmp_path):
    raw = b"import os\n\nprint(os.sep)\n"
    (tmp_path / "a.py").write_bytes(raw)
    content, summary = await read(ctx, file_path=str(tmp_path / "a.py"))
    assert content == "1\timport os\n2\t\n3\tprint(os.sep)"
    assert summary == "Read 3 lines"
    entry = ctx.read_state.get(str(tmp_path / "a.py"))
    assert entry.content_hash == sha(raw) and entry.offset is None and entry.limit is None
    assert ctx.read_state.check_fresh(str(tmp_path / "a.py"), raw) is None


async def test_relative_path_resolves_against_cwd(ctx, tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "n.txt").write_text("x\ny")
    content, _ = await read(ctx, file_path="sub/n.txt")
    assert content == "1\tx\n2\ty"
    assert str(tmp_path / "sub" / "n.txt") in ctx.read_state


async def test_range_shows_those_lines_and_hashes_whole_file(ctx, tmp_path):
    raw = "".join(f"line {i}\n" for i in range(1, 101)).encode()
    (tmp_path / "f.txt").write_bytes(raw)
    content, summary = await read(ctx, file_path="f.txt", offset=10, limit=3)
    assert content == "10\tline 10\n11\tline 11\n12\tline 12\n\n[Showing lines 10-12 of 100. Read on with offset=13.]"
    assert summary == "Read 3 lines"
    entry = ctx.read_state.get(str(tmp_path / "f.txt"))
    assert (entry.offset, entry.limit, entry.content_hash) == (10, 3, sha(raw))


async def test_default_limit_is_2000_lines(ctx, tmp_path):
    (tmp_path / "f.txt").write_text("".join(f"{i}\n" for i in range(1, 2501)))
    content, summary = await read(ctx, file_path="f.txt")
    lines = content.split("\n")
    assert lines[0] == "1\t1" and lines[1999] == "2000\t2000"
    assert lines[-1] == "[Showing lines 1-2000 of 2,500. Read on with offset=2001.]"
    assert summary == "Read 2000 lines"


async def test_offset_zero_means_start(ctx, tmp_path):
    (tmp_path / "f.txt").write_text("a\nb\n")
    content, _ = await read(ctx, file_path="f.txt", offset=0, limit=1)
    assert content.startswith("1\ta\n")


async def test_long_line_is_cut_with_marker(ctx, tmp_path):
    (tmp_path / "min.js").write_text("x" * 5000 + "\nshort\n")
    content, _ = await read(ctx, file_path="min.js")
    first, second = content.split("\n")
    assert first == "1\t" + "x" * 2000 + "[... line cut: first 2,000 of 5,000 characters shown]"
    assert second == "2\tshort"


async def test_large_file_without_range_is_refused_then_range_works(ctx, tmp_path):
    (tmp_path / "big.log").write_text("".join(f"entry {i}\n" for i in range(40_000)))  # ~420 KB
    message = await read_error(ctx, file_path="big.log")
    assert "over the 256 KB limit" in message and "offset and limit" in message and "Grep" in message
    assert str(tmp_path / "big.log") not in ctx.read_state
    content, _ = await read(ctx, file_path="big.log", offset=39_999, limit=5)
    assert content == "39999\tentry 39998\n40000\tentry 39999"


async def test_output_over_token_limit_is_refused_with_a_range_that_fits(ctx, tmp_path):
    (tmp_path / "wide.txt").write_text("".join(f"{i:04d} " + "y" * 120 + "\n" for i in range(1500)))
    message = await read_error(ctx, file_path="wide.txt")
    assert "25,000-token limit" in message and "Grep" in message
    fit = int(message.split("limit=")[1].split(")")[0])
    content, _ = await read(ctx, file_path="wide.txt", offset=1, limit=fit)
    assert len(content) <= 100_000 + 200 and content.count("\n") >= fit - 1


@pytest.mark.parametrize(
    "raw",
    [
        b"caf\xc3\xa9\r\nna\xc3\xafve\r\n",
        codecs.BOM_UTF8 + "café\nnaïve\n".encode(),
        codecs.BOM_UTF16_LE + "café\r\nnaïve\r\n".encode("utf-16-le"),
        codecs.BOM_UTF16_BE + "café\nnaïve".encode("utf-16-be"),
    ],
    ids=["utf8-crlf", "utf8-bom", "utf16le-crlf", "utf16be"],
)
async def test_encodings(ctx, tmp_path, raw):
    (tmp_path / "enc.txt").write_bytes(raw)
    content, _ = await read(ctx, file_path="enc.txt")
    assert content == "1\tcafé\n2\tnaïve"
    assert ctx.read_state.get(str(tmp_path / "enc.txt")).content_hash == sha(raw)


async def test_empty_file_gets_a_reminder(ctx, tmp_path):
    (tmp_path / "empty.py").write_bytes(b"")
    content, summary = await read(ctx, file_path="empty.py")
    assert content == f"[{tmp_path / 'empty.py'} exists but is empty (0 lines).]"
    assert summary == "Read empty file"
    assert ctx.read_state.get(str(tmp_path / "empty.py")).content_hash == sha(b"")


async def test_offset_past_the_end_says_how_many_lines(ctx, tmp_path):
    (tmp_path / "f.txt").write_text("a\nb\nc\n")
    message = await read_error(ctx, file_path="f.txt", offset=7)
    assert "has 3 lines" in message and "offset=7" in message


async def test_missing_file_suggests_close_names(ctx, tmp_path):
    (tmp_path / "config.yaml").write_text("a: 1\n")
    message = await read_error(ctx, file_path="config.yml")
    assert "does not exist" in message and repr(str(tmp_path / "config.yaml")) in message


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")
async def test_file_that_reports_size_zero_is_still_read(ctx):
    assert os.stat("/proc/self/status").st_size == 0
    content, _ = await read(ctx, file_path="/proc/self/status")
    assert content.startswith("1\tName:\t")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
async def test_unreadable_file_is_an_error_the_model_can_read(ctx, tmp_path):
    (tmp_path / "locked.txt").write_text("x")
    (tmp_path / "locked.txt").chmod(0)
    assert "Permission denied" in await read_error(ctx, file_path="locked.txt")


# --- things that are not text files -----------------------------------------------------------


def run_bounded(coro_factory, timeout: float = 10.0):
    """Run a read in a thread so that a regression that blocks fails instead of hanging the suite."""
    import asyncio

    box: dict[str, object] = {}

    def target() -> None:
        try:
            box["result"] = asyncio.run(coro_factory())
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), "Read blocked on a special file"
    return box


def test_fifo_is_refused_without_blocking(ctx, tmp_path):
    os.mkfifo(tmp_path / "pipe")
    box = run_bounded(lambda: read(ctx, file_path="pipe"))
    assert isinstance(box.get("error"), ToolError)
    assert "named pipe" in str(box["error"])


def test_device_is_refused_without_blocking(ctx):
    box = run_bounded(lambda: read(ctx, file_path="/dev/zero"))
    assert "is a device" in str(box["error"])


async def test_socket_and_directory_are_refused(ctx, tmp_path):
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp_path / "s.sock"))
    try:
        assert "is a socket" in await read_error(ctx, file_path="s.sock")
    finally:
        sock.close()
    (tmp_path / "pkg").mkdir()
    message = await read_error(ctx, file_path="pkg")
    assert "is a directory" in message and "Glob" in message


@pytest.mark.parametrize(
    ("name", "raw", "expected"),
    [
        ("blob.bin", b"abc\x00\x01\x02" * 10, "binary file (it contains NUL bytes)"),
        ("tool", b"\x7fELF\x02\x01\x01" + b"\x00" * 50, "ELF executable"),
        ("data.xlsx", b"PK\x03\x04" + b"\x00" * 50, "ZIP archive"),
        ("db.sqlite", b"SQLite format 3\x00" + b"\x00" * 50, "SQLite database"),
        ("paper.pdf", b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n", "PDF document"),
        ("latin1.txt", "café\n".encode("latin-1"), "not UTF-8 or UTF-16 text"),
    ],
)
async def test_binary_files_are_refused_by_type(ctx, tmp_path, name, raw, expected):
    (tmp_path / name).write_bytes(raw)
    message = await read_error(ctx, file_path=name)
    assert expected in message and repr(str(tmp_path / name)) in message
    assert str(tmp_path / name) not in ctx.read_state


# --- images ------------------------------------------------------------------------------------


async def test_png_comes_back_as_an_image_block(ctx, tmp_path):
    data = png_bytes()
    (tmp_path / "plot.png").write_bytes(data)
    content, summary = await read(ctx, file_path="plot.png")
    assert content == [
        {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": base64.b64encode(data).decode()},
        }
    ]
    assert summary == "Read image (1 KB)"
    assert ctx.read_state.get(str(tmp_path / "plot.png")).content_hash == sha(data)


async def test_image_media_type_comes_from_the_content(ctx, tmp_path):
    jpeg = (
        b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00\xff\xc0\x00\x11\x08\x00\x10\x00\x20"
        + b"\x00" * 40
    )
    (tmp_path / "photo.png").write_bytes(jpeg)
    (tmp_path / "figure.dat").write_bytes(png_bytes())
    content, _ = await read(ctx, file_path="photo.png")
    assert content[0]["source"]["media_type"] == "image/jpeg"
    content, _ = await read(ctx, file_path="figure.dat")
    assert content[0]["type"] == "image" and content[0]["source"]["media_type"] == "image/png"


async def test_oversized_or_fake_images_are_refused(ctx, tmp_path):
    (tmp_path / "huge.png").write_bytes(png_bytes() + b"\x00" * (4 * 1024 * 1024))
    message = await read_error(ctx, file_path="huge.png")
    assert "over the API's limit" in message and "MB" in message
    (tmp_path / "wide.png").write_bytes(png_bytes(width=9000, height=10))
    assert "9000x10 pixels" in await read_error(ctx, file_path="wide.png")
    (tmp_path / "notes.png").write_text("not an image")
    assert "not PNG, JPEG, GIF or WebP" in await read_error(ctx, file_path="notes.png")


# --- notebooks ------------------------------------------------------------------------------


def write_notebook(path: Path, n_cells: int = 3) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Title", id="intro")]
    for i in range(1, n_cells):
        cell = nbformat.v4.new_code_cell(f"x = {i}\nx", id=f"c{i}", execution_count=i)
        cell.outputs = [nbformat.v4.new_output("execute_result", data={"text/plain": str(i)}, execution_count=i)]
        nb.cells.append(cell)
    nbformat.write(nb, path)


async def test_notebook_is_rendered_as_cells(ctx, tmp_path):
    write_notebook(tmp_path / "nb.ipynb")
    content, summary = await read(ctx, file_path="nb.ipynb")
    assert summary == "Read notebook (3 cells)"
    text = "".join(b["text"] for b in content)
    assert text.startswith(f"Notebook {tmp_path / 'nb.ipynb'} (3 cells)\n")
    assert '<cell id="intro" index="0" type="markdown">\n# Title\n</cell>' in text
    assert (
        '<cell id="c2" index="2" type="code" execution_count="2">\nx = 2\nx\n<outputs>\nOut[2]: 2\n</outputs>\n</cell>'
        in text
    )
    assert '"cell_type"' not in text  # never raw JSON
    raw = (tmp_path / "nb.ipynb").read_bytes()
    assert ctx.read_state.get(str(tmp_path / "nb.ipynb")).content_hash == sha(raw)


async def test_notebook_offset_and_limit_count_cells(ctx, tmp_path):
    write_notebook(tmp_path / "nb.ipynb", n_cells=6)
    content, summary = await read(ctx, file_path="nb.ipynb", offset=3, limit=2)
    text = content[0]["text"]
    # The range is named the way cells are labelled (cell-N, 0-based), and it says how to go on.
    assert "showing cell-2 to cell-3" in text and 'id="c2"' in text and 'id="c3"' in text
    assert 'id="c1"' not in text and 'id="c4"' not in text
    assert "Read on with offset=5" in content[-1]["text"]
    assert summary == "Read notebook (2 of 6 cells)"
    assert "has 6 cells" in await read_error(ctx, file_path="nb.ipynb", offset=9)


async def test_broken_notebook_says_so(ctx, tmp_path):
    (tmp_path / "bad.ipynb").write_text("{not json")
    assert "is not a readable notebook" in await read_error(ctx, file_path="bad.ipynb")


# --- large files: streamed, memory stays flat ---------------------------------------------------


def write_big(path: Path, lines: int) -> None:
    with open(path, "wb") as f:
        step = 100_000
        for base in range(0, lines, step):
            f.write("".join(f"row {i:08d} payload\n" for i in range(base, min(base + step, lines))).encode())


async def read_measuring_memory(ctx: ToolContext, **fields) -> tuple[str, int]:
    """The content the model receives and the peak of Python allocations while reading."""
    tracemalloc.start()
    try:
        content, _ = await read(ctx, **fields)
        return content, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


async def test_range_near_the_end_of_a_large_file_streams(ctx, tmp_path):
    path = tmp_path / "big.log"
    write_big(path, 2_400_000)  # 2.4 M lines of 21 bytes: ~50 MB
    size = path.stat().st_size
    assert size > 48 * 1024 * 1024
    content, peak = await read_measuring_memory(ctx, file_path=str(path), offset=2_399_998, limit=5)
    assert content == "2399998\trow 02399997 payload\n2399999\trow 02399998 payload\n2400000\trow 02399999 payload"
    assert peak < 20 * 1024 * 1024, f"peak {peak / 1e6:.1f} MB"
    entry = ctx.read_state.get(str(path))
    assert entry.size == size and (entry.offset, entry.limit) == (2_399_998, 3)  # what was shown
    message = await read_error(ctx, file_path=str(path), offset=2_400_001)
    assert "has 2,400,000 lines" in message
    # An edit may follow: unchanged, the file is fresh; rewritten to the same size with its old
    # mtime put back (as `touch -r` does), it is not. Nothing hashed the 50 MB to know it.
    assert ctx.read_state.check_fresh(str(path), path.read_bytes()) is None
    st = path.stat()
    with open(path, "r+b") as f:
        f.write(b"ROW")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert "changed since you read it" in ctx.read_state.check_fresh(str(path), path.read_bytes())


async def test_large_file_head_read_says_the_file_goes_on(ctx, tmp_path):
    path = tmp_path / "big.log"
    write_big(path, 4_000_000)  # ~84 MB: too much to count the rest on a ranged read
    content, _ = await read(ctx, file_path=str(path), offset=1, limit=2)
    assert content.startswith(
        "1\trow 00000000 payload\n2\trow 00000001 payload\n\n[Showing lines 1-2; the file goes on ("
    )


async def test_one_gigantic_line_does_not_load_into_memory(ctx, tmp_path):
    path = tmp_path / "one.json"
    with open(path, "wb") as f:
        for _ in range(20):
            f.write(b"ab" * (512 * 1024))
        f.write(b"\ntail\n")
    content, peak = await read_measuring_memory(ctx, file_path=str(path), offset=1, limit=2)
    first, second = content.split("\n")[:2]
    assert first == "1\t" + "ab" * 1000 + "[... line cut: first 2,000 characters shown]"
    assert second == "2\ttail"
    assert peak < 20 * 1024 * 1024


# --- permissions, flags, prompt -----------------------------------------------------------------


async def test_permission_asks_outside_working_dirs_only(ctx, tmp_path):
    tool = ReadTool()
    outside = tool.input_model(file_path="/etc/hostname")
    check = await tool.check_permissions(outside, ctx)
    assert check.behavior == "ask" and "'/etc/hostname'" in check.message
    assert tool.suggest_rule(outside, ctx) == "Read(//etc/**)"
    inside = tool.input_model(file_path="src/x.py")
    assert (await tool.check_permissions(inside, ctx)).behavior == "passthrough"
    spilled = tool.input_model(file_path=str(ctx.spill_dir / "toolu_9.txt"))
    assert (await tool.check_permissions(spilled, ctx)).behavior == "passthrough"
    assert tool.rule_subject(inside, ctx) == RuleSubject(kind="path", value=str(tmp_path / "src" / "x.py"))


def test_flags_and_prompt(ctx):
    tool = ReadTool()
    inp = tool.input_model(file_path="a")
    assert tool.is_read_only(inp) and tool.is_concurrency_safe(inp) and not tool.is_destructive(inp)
    assert (tool.name, tool.kind, tool.rule_names) == ("Read", "read", ("Read",))
    assert tool.max_result_chars >= 10**9
    text = tool.description(ctx)
    for word in ("Grep", "Glob", "`cat`", "absolute", "offset", "limit", "several files"):
        assert word in text
    assert "pdf" not in text.lower()
    schema = tool.input_schema()
    assert schema["required"] == ["file_path"] and schema["additionalProperties"] is False


# --- through the agent loop ----------------------------------------------------------------------


def tool_results(agent) -> list[dict]:
    return [
        b
        for m in agent.messages
        if m["role"] == "user" and isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]


def test_parallel_reads_in_one_message_reach_the_model_in_order(tmp_path):
    from ipy_agent import Agent, ScriptedModel

    (tmp_path / "a.py").write_text("A = 1\n")
    (tmp_path / "b.py").write_text("B = 2\nC = 3\n")
    uses = [
        {"type": "tool_use", "id": f"t{i}", "name": "Read", "input": {"file_path": str(tmp_path / n)}}
        for i, n in enumerate(["a.py", "b.py"])
    ]
    model = ScriptedModel([uses, "done"])
    agent = Agent(model=model, cwd=tmp_path)
    assert agent.run("look").stop_reason == "end_turn"
    sent = model.requests[1]["messages"][-1]["content"]
    assert [(b["tool_use_id"], b["content"], b.get("is_error", False)) for b in sent] == [
        ("t0", "1\tA = 1", False),
        ("t1", "1\tB = 2\n2\tC = 3", False),
    ]
    assert [r.summary_result for r in agent.trace] == ["Read 1 line", "Read 2 lines"]
    assert agent.trace[0].batch == agent.trace[1].batch  # concurrency-safe: one batch
    assert str(tmp_path / "a.py") in agent.read_state and str(tmp_path / "b.py") in agent.read_state


def test_read_outside_the_working_dirs_asks_the_person(tmp_path, tmp_path_factory):
    from ipy_agent import Agent, ScriptedModel

    elsewhere = tmp_path_factory.mktemp("elsewhere") / "secret.txt"
    elsewhere.write_text("token\n")
    asked = []

    def deny(request):
        asked.append(request)
        return "deny"

    use = [{"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": str(elsewhere)}}]
    agent = Agent(model=ScriptedModel([use, "ok"]), cwd=tmp_path, approver=deny)
    agent.run("read it")
    assert len(asked) == 1 and asked[0].tool_name == "Read"
    [result] = tool_results(agent)
    assert result["is_error"] and "token" not in str(result["content"])
    assert str(elsewhere) not in agent.read_state


def test_spilled_output_of_another_tool_is_readable_without_a_prompt(tmp_path):
    from pydantic import BaseModel

    from ipy_agent import Agent, ScriptedModel, build_tool

    class NoArgs(BaseModel):
        pass

    loud = build_tool(
        name="Loud",
        input_model=NoArgs,
        description="Print a lot.",
        is_read_only=True,
        max_result_chars=1_000,
        call=lambda inp, ctx: "".join(f"log line {i}\n" for i in range(3_000)),
    )

    def read_spilled(messages):
        text = str(messages[-1]["content"][0]["content"])
        path = text.split("saved to: ")[1].split("\n")[0]
        return [
            {"type": "tool_use", "id": "t2", "name": "Read", "input": {"file_path": path, "offset": 2_999, "limit": 2}}
        ]

    model = ScriptedModel([[{"type": "tool_use", "id": "t1", "name": "Loud", "input": {}}], read_spilled, "done"])
    agent = Agent(
        model=model, cwd=tmp_path, tools=[ReadTool(), loud], approver=lambda req: pytest.fail(f"asked: {req}")
    )
    agent.run("go")
    first, second = tool_results(agent)
    assert "<persisted-output>" in first["content"]
    assert second["content"] == "2999\tlog line 2998\n3000\tlog line 2999"
