"""Write: create and overwrite, the read-first rule, bytes on disk, the prompt's diff."""

from __future__ import annotations

import codecs
import os
import stat
from pathlib import Path

import pytest

from ipy_agent import Agent, ScriptedModel
from ipy_agent.contract.tool import ToolError
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.tools.files.edit import EditTool
from ipy_agent.tools.files.read import ReadTool
from ipy_agent.tools.files.write import WriteTool
from tests.tools._edit_support import assert_edit_contract, fail_os, leftovers, make_ctx, read, run, tool_results


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return make_ctx(tmp_path)


async def write(ctx: ToolContext, path: str, content: str):
    return await run(WriteTool(), ctx, file_path=path, content=content)


async def test_creates_a_file_and_its_parent_directories(ctx, tmp_path):
    r = await write(ctx, "src/new/mod.py", "a = 1\nb = 2\n")
    assert r.error is None
    assert (tmp_path / "src/new/mod.py").read_bytes() == b"a = 1\nb = 2\n"
    assert r.summary == "Created src/new/mod.py (2 lines)"
    assert r.content == f"Created {tmp_path / 'src/new/mod.py'} (2 lines)."
    assert ctx.read_state.get(str(tmp_path / "src/new/mod.py")).source == "Write"


async def test_overwriting_needs_a_read(ctx, tmp_path):
    p = tmp_path / "a.txt"
    p.write_text("keep me\n")
    r = await write(ctx, "a.txt", "replaced\n")
    assert "has not been read yet" in r.error and p.read_text() == "keep me\n"


async def test_overwriting_after_a_read(ctx, tmp_path):
    p = tmp_path / "a.txt"
    p.write_text("one\ntwo\n")
    await read(ctx, p)
    r = await write(ctx, "a.txt", "one\n2\nthree\n")
    assert r.error is None and p.read_text() == "one\n2\nthree\n"
    assert r.summary == "Wrote a.txt (3 lines)"
    assert "+2 -1" in r.content


async def test_overwriting_a_changed_file_is_refused(ctx, tmp_path):
    p = tmp_path / "a.txt"
    p.write_text("one\n")
    await read(ctx, p)
    p.write_text("one\nperson's line\n")
    r = await write(ctx, "a.txt", "mine\n")
    assert "changed since you read it" in r.error and p.read_text() == "one\nperson's line\n"


async def test_change_after_validation_is_caught_by_call(ctx, tmp_path):
    p = tmp_path / "a.txt"
    p.write_text("one\n")
    await read(ctx, p)
    tool = WriteTool()
    inp = tool.input_model(file_path="a.txt", content="mine\n")
    assert await tool.validate_input(inp, ctx) is None
    p.write_text("theirs\n")
    with pytest.raises(ToolError, match="changed since you read it"):
        await tool.call(inp, ctx)
    assert p.read_text() == "theirs\n"


async def test_file_created_by_someone_else_after_validation_is_not_clobbered(ctx, tmp_path):
    tool = WriteTool()
    inp = tool.input_model(file_path="new.txt", content="mine\n")
    assert await tool.validate_input(inp, ctx) is None
    (tmp_path / "new.txt").write_text("theirs\n")
    with pytest.raises(ToolError, match="has not been read yet"):
        await tool.call(inp, ctx)
    assert (tmp_path / "new.txt").read_text() == "theirs\n"


async def test_preview_diffs_against_empty_for_a_new_file(ctx, tmp_path):
    tool = WriteTool()
    pv = await tool.preview(tool.input_model(file_path="n.txt", content="a\nb\n"), ctx)
    assert pv.title == "Create n.txt" and (pv.added, pv.removed) == (2, 0)
    assert pv.diff.startswith("--- /dev/null\n+++ n.txt\n") and "+a\n+b\n" in pv.diff
    assert not (tmp_path / "n.txt").exists()


async def test_preview_diffs_against_the_old_content(ctx, tmp_path):
    p = tmp_path / "a.txt"
    p.write_text("one\ntwo\n")
    await read(ctx, p)
    tool = WriteTool()
    pv = await tool.preview(tool.input_model(file_path="a.txt", content="one\nTWO\n"), ctx)
    assert pv.title == "Overwrite a.txt" and "-two\n+TWO\n" in pv.diff and (pv.added, pv.removed) == (1, 1)
    assert p.read_text() == "one\ntwo\n"


async def test_crlf_file_stays_crlf(ctx, tmp_path):
    p = tmp_path / "w.txt"
    p.write_bytes(b"old\r\n")
    await read(ctx, p)
    await write(ctx, "w.txt", "new\nlines\n")
    assert p.read_bytes() == b"new\r\nlines\r\n"


async def test_lf_file_gets_content_exactly_as_given(ctx, tmp_path):
    p = tmp_path / "u.txt"
    p.write_bytes(b"old\n")
    await read(ctx, p)
    await write(ctx, "u.txt", "a\r\nb\n")
    assert p.read_bytes() == b"a\r\nb\n"


@pytest.mark.parametrize("bom,codec", [(codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le")])
async def test_encoding_is_kept(ctx, tmp_path, bom, codec):
    p = tmp_path / "e.txt"
    p.write_bytes(bom + "old\n".encode(codec))
    await read(ctx, p)
    await write(ctx, "e.txt", "neu ✓\n")
    assert p.read_bytes() == bom + "neu ✓\n".encode(codec)


async def test_mode_bits_are_kept(ctx, tmp_path):
    p = tmp_path / "run.sh"
    p.write_text("echo 1\n")
    p.chmod(0o750)
    await read(ctx, p)
    await write(ctx, "run.sh", "echo 2\n")
    assert stat.S_IMODE(p.stat().st_mode) == 0o750 and p.read_text() == "echo 2\n"


async def test_failed_write_leaves_old_content_and_no_temp_files(ctx, tmp_path, monkeypatch):
    p = tmp_path / "a.txt"
    p.write_text("old\n")
    await read(ctx, p)
    fail_os(monkeypatch, "replace")
    tool = WriteTool()
    with pytest.raises(OSError):
        await tool.call(tool.input_model(file_path="a.txt", content="new\n"), ctx)
    assert p.read_text() == "old\n" and leftovers(tmp_path) == []


async def test_read_only_file_is_refused(ctx, tmp_path, monkeypatch):
    p = tmp_path / "locked.txt"
    p.write_text("keep\n")
    p.chmod(0o444)
    await read(ctx, p)
    # The tests may run as root, for whom every file is writable; ask as an ordinary user would.
    monkeypatch.setattr("os.access", lambda path, mode: not (mode & os.W_OK))
    r = await write(ctx, "locked.txt", "overwrite\n")
    assert "read-only (mode 444)" in r.error and p.read_text() == "keep\n"


async def test_directory_is_refused(ctx, tmp_path):
    (tmp_path / "d").mkdir()
    r = await write(ctx, "d", "x")
    assert "is a directory" in r.error


async def test_edit_after_write_needs_no_read(ctx, tmp_path):
    await write(ctx, "a.py", "x = 1\n")
    r = await run(EditTool(), ctx, file_path="a.py", old_string="x = 1", new_string="x = 2")
    assert r.error is None and (tmp_path / "a.py").read_text() == "x = 2\n"


def test_flags_rules_and_prompt(ctx, tmp_path):
    tool = WriteTool()
    inp = tool.input_model(file_path="docs/guide.md", content="")
    assert_edit_contract(tool, inp, ctx, path=tmp_path / "docs/guide.md", rule="Edit(docs/**)")
    text = tool.description(ctx)
    assert "Read all of it earlier" in text and "Edit instead" in text and "NotebookEdit" in text


def test_agent_overwrite_before_read_is_refused_then_works(tmp_path):
    p = tmp_path / "notes.txt"
    p.write_text("old\n")
    use = {"type": "tool_use", "name": "Write", "input": {"file_path": "notes.txt", "content": "new\n"}}
    model = ScriptedModel(
        [
            [{**use, "id": "t1"}],
            [{"type": "tool_use", "id": "t2", "name": "Read", "input": {"file_path": "notes.txt"}}],
            [{**use, "id": "t3"}],
            "done",
        ]
    )
    agent = Agent(model=model, cwd=tmp_path, permission_mode="acceptEdits", tools=[ReadTool(), WriteTool()])
    agent.run("rewrite notes")
    results = tool_results(agent.messages)
    assert results["t1"].get("is_error") and "has not been read yet" in results["t1"]["content"]
    assert not results["t3"].get("is_error") and p.read_text() == "new\n"
