"""File tools at the edges: links, partial reads, mixed line endings, notebook ids, odd encodings.

Each test states what a person would notice on disk or what the model is told; each one failed
before the fix it covers.
"""

from __future__ import annotations

import codecs
import json
import os
import random
import stat
import tracemalloc
import warnings
from pathlib import Path

import nbformat
import pytest
from nbformat import v4

from ipy_agent.contract.tool import ToolError
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.tools.files.edit import EditTool
from ipy_agent.tools.files.read import ReadTool
from ipy_agent.tools.files.read_text import estimate_tokens
from ipy_agent.tools.files.write import WriteTool
from ipy_agent.tools.notebook.edit import NotebookEditTool
from ipy_agent.tools.shared import fileio as _fileio
from ipy_agent.tools.shared.diff import diff_spans, make_diff, split_lines
from tests.tools._edit_support import make_ctx, read, run


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return make_ctx(tmp_path)


async def read_out(ctx: ToolContext, **fields):
    tool = ReadTool()
    out = await tool.call(tool.input_model(**fields), ctx)
    return tool.map_result(out, "toolu_1")["content"]


async def read_refusal(ctx: ToolContext, **fields) -> str:
    with pytest.raises(ToolError) as err:
        await read_out(ctx, **fields)
    return str(err.value)


async def edit(ctx, path, old, new, **kw):
    return await run(EditTool(), ctx, file_path=str(path), old_string=old, new_string=new, **kw)


async def write(ctx, path, content):
    return await run(WriteTool(), ctx, file_path=str(path), content=content)


async def nbedit(ctx, **fields):
    return await run(NotebookEditTool(), ctx, **fields)


# --- symlinks and hard links ---------------------------------------------------------------------


async def test_edit_through_a_symlink_changes_the_target_and_keeps_the_link(ctx, tmp_path):
    (tmp_path / "real.py").write_text("x = 1\n")
    os.symlink("real.py", tmp_path / "link.py")
    await read(ctx, tmp_path / "link.py")
    r = await edit(ctx, tmp_path / "link.py", "x = 1", "x = 2")
    assert r.error is None
    assert os.path.islink(tmp_path / "link.py")
    assert (tmp_path / "real.py").read_text() == "x = 2\n"


async def test_write_through_a_symlink_read_by_its_real_name(ctx, tmp_path):
    (tmp_path / "real.txt").write_text("old\n")
    os.symlink("real.txt", tmp_path / "link.txt")
    await read(ctx, tmp_path / "real.txt")  # read by one name, written by the other
    r = await write(ctx, tmp_path / "link.txt", "new\n")
    assert r.error is None
    assert os.path.islink(tmp_path / "link.txt") and (tmp_path / "real.txt").read_text() == "new\n"


async def test_notebook_read_by_name_then_edited_through_a_link(ctx, tmp_path):
    nb = v4.new_notebook(cells=[v4.new_code_cell("a = 1")])
    nbformat.write(nb, str(tmp_path / "a.ipynb"))
    os.symlink("a.ipynb", tmp_path / "l.ipynb")
    await read(ctx, tmp_path / "a.ipynb")
    r = await nbedit(ctx, notebook_path=str(tmp_path / "l.ipynb"), cell_id=nb.cells[0].id, new_source="a = 2")
    assert r.error is None
    assert os.path.islink(tmp_path / "l.ipynb")
    assert json.loads((tmp_path / "a.ipynb").read_text())["cells"][0]["source"] == ["a = 2"]


async def test_a_hard_linked_file_stays_one_file(ctx, tmp_path):
    (tmp_path / "h1.txt").write_text("v1\n")
    os.link(tmp_path / "h1.txt", tmp_path / "h2.txt")
    await read(ctx, tmp_path / "h1.txt")
    assert (await edit(ctx, tmp_path / "h1.txt", "v1", "v2")).error is None
    assert (tmp_path / "h2.txt").read_text() == "v2\n"  # the other name sees the edit
    assert os.stat(tmp_path / "h1.txt").st_ino == os.stat(tmp_path / "h2.txt").st_ino
    # Shorter content is cut to its length, not left with the old tail.
    await read(ctx, tmp_path / "h2.txt")
    assert (await write(ctx, tmp_path / "h2.txt", "z\n")).error is None
    assert (tmp_path / "h1.txt").read_bytes() == b"z\n"


# --- partial reads and Write ---------------------------------------------------------------------


def numbered_file(path: Path, n: int) -> Path:
    path.write_text("".join(f"line {i}\n" for i in range(1, n + 1)))
    return path


async def test_write_after_a_ranged_read_is_refused(ctx, tmp_path):
    f = numbered_file(tmp_path / "big.txt", 5000)
    await read_out(ctx, file_path=str(f), offset=1, limit=10)
    r = await write(ctx, f, "replaced\n")
    assert "only partly read (lines 1-10)" in r.error and "Edit" in r.error and "Read the rest" in r.error
    assert len(f.read_text().splitlines()) == 5000


async def test_write_after_a_default_read_cut_at_2000_lines_is_refused(ctx, tmp_path):
    f = numbered_file(tmp_path / "big.txt", 5000)
    await read_out(ctx, file_path=str(f))
    r = await write(ctx, f, "replaced\n")
    assert "only partly read (lines 1-2000)" in r.error
    assert len(f.read_text().splitlines()) == 5000


async def test_write_after_reading_the_whole_file_is_allowed(ctx, tmp_path):
    f = numbered_file(tmp_path / "small.txt", 5)
    await read_out(ctx, file_path=str(f), offset=1, limit=100)  # a range that covers it all
    assert (await write(ctx, f, "replaced\n")).error is None
    assert f.read_text() == "replaced\n"


async def test_reading_the_rest_does_not_unlock_write_but_a_whole_read_does(ctx, tmp_path):
    f = numbered_file(tmp_path / "mid.txt", 30)
    await read_out(ctx, file_path=str(f), offset=11, limit=20)
    assert "lines 11-30" in (await write(ctx, f, "x\n")).error
    await read_out(ctx, file_path=str(f))
    assert (await write(ctx, f, "x\n")).error is None


async def test_edit_after_a_partial_read_is_allowed_but_does_not_unlock_write(ctx, tmp_path):
    f = numbered_file(tmp_path / "big.txt", 5000)
    await read_out(ctx, file_path=str(f), offset=1, limit=10)
    assert (await edit(ctx, f, "line 3\n", "line three\n")).error is None
    assert f.read_text().splitlines()[2] == "line three" and len(f.read_text().splitlines()) == 5000
    assert (await edit(ctx, f, "line 4\n", "line four\n")).error is None  # its own write is fresh
    assert "only partly read" in (await write(ctx, f, "replaced\n")).error
    assert len(f.read_text().splitlines()) == 5000


async def test_write_after_a_partial_notebook_read_is_refused(ctx, tmp_path):
    nb = v4.new_notebook(cells=[v4.new_code_cell(f"c{i}") for i in range(4)])
    nbformat.write(nb, str(tmp_path / "n.ipynb"))
    await read_out(ctx, file_path=str(tmp_path / "n.ipynb"), offset=2, limit=2)
    r = await write(ctx, tmp_path / "n.ipynb", "{}")
    assert "cell-1 to cell-2" in r.error and "NotebookEdit" in r.error


# --- mixed line endings --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "before, old, new, after",
    [
        # One CRLF line in an LF file must not make the whole file CRLF.
        (b"a\nb\nc\nd\r\ne\n", "a", "A", b"A\nb\nc\nd\r\ne\n"),
        # A file that is CRLF throughout stays so, new lines included.
        (b"a\r\nb\r\n", "a\nb", "a\nB\nc", b"a\r\nB\r\nc\r\n"),
    ],
)
async def test_line_endings_are_kept(ctx, tmp_path, before, old, new, after):
    f = tmp_path / "f.txt"
    f.write_bytes(before)
    await read(ctx, f)
    assert (await edit(ctx, f, old, new)).error is None
    assert f.read_bytes() == after


async def test_read_hides_the_cr_of_a_crlf_line_in_a_mixed_file(ctx, tmp_path):
    (tmp_path / "m.txt").write_bytes(b"a\nb\r\nc\n")
    assert await read_out(ctx, file_path=str(tmp_path / "m.txt")) == "1\ta\n2\tb\n3\tc"


async def test_old_string_with_plain_newlines_matches_crlf_lines_of_a_mixed_file(ctx, tmp_path):
    f = tmp_path / "mixed.txt"
    f.write_bytes(b"keep\nx = 1\r\ny = 2\r\nlast\n")
    await read(ctx, f)
    r = await edit(ctx, f, "x = 1\ny = 2\n", "x = 10\ny = 20\nz = 30\n")
    assert r.error is None
    # The lines it replaced were CRLF, so the lines written in their place are too.
    assert f.read_bytes() == b"keep\nx = 10\r\ny = 20\r\nz = 30\r\nlast\n"
    assert "3\ty = 20" in r.content and "\r" not in r.content


async def test_write_over_a_mixed_file_writes_the_content_as_given(ctx, tmp_path):
    f = tmp_path / "mixed.txt"
    f.write_bytes(b"a\nb\r\n")
    await read(ctx, f)
    assert (await write(ctx, f, "x\ny\n")).error is None
    assert f.read_bytes() == b"x\ny\n"


# --- notebook cell ids ---------------------------------------------------------------------------


def notebook_json(path: Path, cells: list[dict], minor: int = 5) -> None:
    path.write_text(json.dumps({"nbformat": 4, "nbformat_minor": minor, "metadata": {}, "cells": cells}))


def code(source: str, **extra) -> dict:
    return {"cell_type": "code", "metadata": {}, "source": source, "outputs": [], "execution_count": None, **extra}


async def test_cells_without_ids_show_stable_labels_that_notebookedit_accepts(ctx, tmp_path, capfd):
    notebook_json(tmp_path / "n.ipynb", [code("a=1"), {"cell_type": "markdown", "metadata": {}, "source": "# t"}])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nbformat's warnings must not escape (they print in the cell)
        first = (await read_out(ctx, file_path=str(tmp_path / "n.ipynb")))[0]["text"]
        second = (await read_out(ctx, file_path=str(tmp_path / "n.ipynb")))[0]["text"]
        assert first == second and '<cell id="cell-0"' in first and "0-based index" in first
        r = await nbedit(ctx, notebook_path=str(tmp_path / "n.ipynb"), cell_id="cell-0", new_source="a=2")
    assert r.error is None and "already had problems" in r.content
    assert capfd.readouterr().err == ""
    cells = json.loads((tmp_path / "n.ipynb").read_text())["cells"]
    assert cells[0]["source"] == ["a=2"] and "id" not in cells[0] and "id" not in cells[1]


async def test_duplicate_ids_are_shown_as_they_are_and_never_renamed(ctx, tmp_path):
    path = tmp_path / "dup.ipynb"
    notebook_json(path, [code("a=1", id="dup"), code("b=1", id="dup"), code("c=1", id="other")])
    text = (await read_out(ctx, file_path=str(path)))[0]["text"]
    assert text.count('<cell id="dup"') == 2 and "'dup' by cell-0, cell-1" in text
    r = await nbedit(ctx, notebook_path=str(path), cell_id="dup", new_source="a=9")
    assert "used by 2 cells" in r.error and "cell-N" in r.error
    r = await nbedit(ctx, notebook_path=str(path), cell_id="other", new_source="c=2")
    assert r.error is None
    assert [c["id"] for c in json.loads(path.read_text())["cells"]] == ["dup", "dup", "other"]


async def test_insert_into_an_old_minor_version_keeps_the_ids_cells_had(ctx, tmp_path):
    path = tmp_path / "v.ipynb"
    notebook_json(path, [code("a=1", id="abc"), code("b=1")], minor=2)
    await read(ctx, path)
    r = await nbedit(ctx, notebook_path=str(path), cell_id="abc", edit_mode="insert", cell_type="code", new_source="n")
    assert r.error is None
    nb = json.loads(path.read_text())
    assert nb["nbformat_minor"] == 5 and nb["cells"][0]["id"] == "abc"
    assert len({c["id"] for c in nb["cells"]}) == 3
    nbformat.validate(nbformat.from_dict(nb))


async def test_replace_in_a_notebook_that_was_already_invalid_is_allowed_and_reported(ctx, tmp_path):
    path = tmp_path / "v.ipynb"
    notebook_json(path, [code("a=1", id="abc")], minor=2)  # 4.2 has no ids: invalid as written
    await read(ctx, path)
    r = await nbedit(ctx, notebook_path=str(path), cell_id="abc", new_source="a=2")
    assert r.error is None and "already had problems" in r.content and "'id' was unexpected" in r.content
    assert json.loads(path.read_text())["cells"][0] == code(["a=2"], id="abc")


async def test_an_edit_that_would_break_the_notebook_is_still_refused(ctx, tmp_path):
    path = tmp_path / "v.ipynb"
    # "collapsed" must be a boolean on a code cell; on a markdown cell any metadata goes.
    markdown = {"id": "md", "cell_type": "markdown", "metadata": {"collapsed": "yes"}, "source": "# t"}
    notebook_json(path, [markdown])
    await read(ctx, path)
    before = path.read_bytes()
    r = await nbedit(ctx, notebook_path=str(path), cell_id="md", cell_type="code", new_source="x = 1")
    assert "would not be valid nbformat" in r.error and "'yes' is not of type 'boolean'" in r.error
    assert path.read_bytes() == before


# --- line numbers: "\n" only -------------------------------------------------------------------


async def test_edit_snippet_numbers_agree_with_read_around_form_feeds(ctx, tmp_path):
    f = tmp_path / "ff.py"
    f.write_text("import os\n\x0c\ndef f():\n    return 1\u2028x\n\ndef g():\n    return 2\n")
    content = await read_out(ctx, file_path=str(f))
    assert "6\tdef g():" in content and "7\t    return 2" in content
    r = await edit(ctx, f, "return 2", "return 3")
    assert "7\t    return 3" in r.content and "6\tdef g():" in r.content


def test_diff_hunk_numbers_count_newlines_only():
    d = make_diff("a\x0cb\nc\n", "a\x0cb\nC\n", label="f")
    assert "@@ -1,2 +1,2 @@" in d.text and (d.added, d.removed) == (1, 1)


def apply_patch(old: str, diff: str) -> str:
    """Apply a unified diff as `patch` would, checking every context and removed line."""
    lines = split_lines(old, keepends=True)
    out: list[str] = []
    at = 0  # index into lines
    rows = diff.split("\n")[2:]
    i = 0
    while i < len(rows) and rows[i]:
        (start, count), (new_start, new_count) = (
            (int(x), int(y or 1)) for x, _, y in (r.lstrip("-+").partition(",") for r in rows[i].split()[1:3])
        )
        first = start - 1 if count else start
        out += lines[at:first]
        at = first
        assert len(out) == (new_start - 1 if new_count else new_start), rows[i]  # the new side's numbers
        i += 1
        while i < len(rows) and rows[i] and not rows[i].startswith("@@"):
            tag, body = rows[i][0], rows[i][1:] + "\n"
            if i + 1 < len(rows) and rows[i + 1].startswith("\\"):
                body = body[:-1]
                i += 1
            if tag in " -":
                assert lines[at] == body, (at, lines[at], body)
                at += 1
            if tag in " +":
                out.append(body)
            i += 1
    return "".join(out + lines[at:])


def test_diffing_only_the_changed_spans_is_a_correct_patch():
    rng = random.Random(7)
    for _ in range(300):
        old = "".join(rng.choice(["a\n", "b\n", "c", "\n", "dd\n"]) for _ in range(rng.randint(0, 60)))
        spans, out, prev, delta = [], [], 0, 0
        for _ in range(rng.randint(1, 4)):
            s = rng.randint(prev, len(old))
            e = rng.randint(s, min(len(old), s + 6))
            piece = rng.choice(["", "X", "Y\nZ\n", "\n"])
            out += [old[prev:s], piece]
            spans.append((s, e, s + delta, s + delta + len(piece)))
            delta += len(piece) - (e - s)
            prev = e
        new = "".join(out) + old[prev:]
        part = diff_spans(old, new, spans, label="f")
        assert apply_patch(old, part.text) == new, (old, new, part.text)
        whole = make_diff(old, new, label="f")
        assert (part.text == "") == (whole.text == "")


# --- memory --------------------------------------------------------------------------------------


async def test_an_edit_of_a_large_file_holds_about_three_copies_not_seven(ctx, tmp_path):
    f = tmp_path / "log.txt"
    with open(f, "w") as fh:
        for i in range(200_000):
            fh.write(f"2024-01-01 12:00:00 INFO event number {i:09d}\n")
    size = f.stat().st_size
    await read_out(ctx, file_path=str(f), offset=1, limit=5)
    tool = EditTool()
    inp = tool.input_model(file_path=str(f), old_string="number 000100003", new_string="number THREE")
    tracemalloc.start()
    try:  # the lifecycle's order: validate, preview for the prompt, validate again, call
        assert await tool.validate_input(inp, ctx) is None
        preview = await tool.preview(inp, ctx)
        assert await tool.validate_input(inp, ctx) is None
        out = await tool.call(inp, ctx)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (
        "+2024-01-01 12:00:00 INFO event number THREE" in preview.diff and "@@ -100001,7 +100001,7 @@" in preview.diff
    )
    assert out.lines == 200_000
    assert peak < 4 * size, f"peak {peak / size:.1f}x the file size"


# --- token estimate, encodings, umask -------------------------------------------------------------


def test_token_estimate_counts_cjk_characters_as_tokens():
    assert estimate_tokens("abcd" * 100) == 100
    assert estimate_tokens("这是中文" * 100) == 400


async def test_a_chinese_file_over_the_token_limit_is_refused(ctx, tmp_path):
    f = tmp_path / "zh.txt"
    f.write_text("这是一个用来测试令牌估计的中文句子，其中包含很多汉字和标点符号。\n" * 1000)  # noqa: RUF001 (~35K characters, full-width punctuation on purpose)
    assert "over the 25,000-token limit" in await read_refusal(ctx, file_path=str(f))


@pytest.mark.parametrize("bom, codec", [(codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF32_BE, "utf-32-be")])
async def test_utf32_is_refused_by_read_and_edit_and_left_intact(ctx, tmp_path, bom, codec):
    f = tmp_path / "u32.txt"
    raw = bom + "abc\ndef\n".encode(codec)
    f.write_bytes(raw)
    assert "UTF-32" in await read_refusal(ctx, file_path=str(f))
    ctx.read_state.record(f, content=raw)  # as if it had been read: Edit must still refuse
    r = await edit(ctx, f, "d", "XY")
    assert "UTF-32" in r.error and f.read_bytes() == raw


async def test_write_over_an_unreadable_latin1_file_says_how_to_proceed(ctx, tmp_path):
    f = tmp_path / "l1.txt"
    f.write_bytes("café = 1\n".encode("latin-1"))
    assert "not UTF-8" in await read_refusal(ctx, file_path=str(f))
    r = await write(ctx, f, "cafe = 2\n")
    assert "iconv" in r.error and "delete it first" in r.error and "Read it first" not in r.error
    assert f.read_bytes() == "café = 1\n".encode("latin-1")


async def test_new_files_get_the_umask_mode_without_touching_the_umask(ctx, tmp_path, monkeypatch):
    umask = os.umask(0o022)
    os.umask(umask)

    def no_umask(*_):
        raise AssertionError("os.umask called during a write: it would race with other threads")

    monkeypatch.setattr(_fileio.os, "umask", no_umask)
    _fileio.atomic_write(tmp_path / "new.txt", b"x")
    assert stat.S_IMODE(os.stat(tmp_path / "new.txt").st_mode) == 0o666 & ~umask
