"""Edit: every refusal and its message, bytes on disk, what the model and the person see."""

from __future__ import annotations

import codecs
import os
import stat
from pathlib import Path

import pytest

from ipy_agent import Agent, PermissionAnswer, ScriptedModel
from ipy_agent.base.gitignore import gitignore_match
from ipy_agent.contract.tool import ToolError
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.tools.files.edit import EditTool
from ipy_agent.tools.files.read import ReadTool
from tests.support.tools import assert_edit_contract, fail_os, leftovers, read, run
from tests.support.transcript import all_results, result_text


async def edit(ctx: ToolContext, path: str, old: str, new: str, **kw):
    return await run(EditTool(), ctx, file_path=path, old_string=old, new_string=new, **kw)


def put(tmp_path: Path, name: str, data: bytes | str) -> Path:
    p = tmp_path / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data.encode() if isinstance(data, str) else data)
    return p


# --- the checks, in order -----------------------------------------------------------------


async def test_identical_strings_are_refused(ctx, tmp_path):
    put(tmp_path, "a.py", "x = 1\n")
    r = await edit(ctx, "a.py", "x = 1", "x = 1")
    assert "identical" in r.error and "new_string" in r.error


async def test_missing_file_says_so_and_suggests_a_sibling(ctx, tmp_path):
    put(tmp_path, "conf.yaml", "a: 1\n")
    r = await edit(ctx, "conf.yml", "a: 1", "a: 2")
    assert "does not exist" in r.error and str(tmp_path) in r.error
    assert "conf.yaml" in r.error and "Glob" in r.error


async def test_empty_old_string_creates_a_missing_file_with_parents(ctx, tmp_path):
    r = await edit(ctx, "pkg/sub/new.py", "", "print('hi')\n")
    assert r.error is None
    assert (tmp_path / "pkg/sub/new.py").read_bytes() == b"print('hi')\n"
    assert r.summary == "Created pkg/sub/new.py (1 lines)"
    assert r.content.startswith(f"Created {tmp_path / 'pkg/sub/new.py'}")


async def test_empty_old_string_on_a_non_empty_file_is_refused(ctx, tmp_path):
    put(tmp_path, "a.py", "x = 1\n")
    await read(ctx, tmp_path / "a.py")
    r = await edit(ctx, "a.py", "", "y = 2\n")
    assert "already exists and is not empty" in r.error and "Write" in r.error
    assert (tmp_path / "a.py").read_text() == "x = 1\n"


async def test_empty_old_string_fills_an_empty_file_after_a_read(ctx, tmp_path):
    put(tmp_path, "empty.txt", "")
    assert "not been read" in (await edit(ctx, "empty.txt", "", "hello\n")).error
    await read(ctx, tmp_path / "empty.txt")
    r = await edit(ctx, "empty.txt", "", "hello\n")
    assert r.error is None and (tmp_path / "empty.txt").read_text() == "hello\n"


async def test_notebooks_are_sent_to_notebook_edit(ctx, tmp_path):
    put(tmp_path, "nb.ipynb", '{"cells": []}')
    r = await edit(ctx, "nb.ipynb", "cells", "x")
    assert "NotebookEdit" in r.error


async def test_not_read_yet_is_refused_and_file_untouched(ctx, tmp_path):
    p = put(tmp_path, "a.py", "x = 1\n")
    r = await edit(ctx, "a.py", "x = 1", "x = 2")
    assert "has not been read yet" in r.error and "Read it first" in r.error
    assert p.read_text() == "x = 1\n"


async def test_changed_since_read_is_refused(ctx, tmp_path):
    p = put(tmp_path, "a.py", "x = 1\n")
    await read(ctx, p)
    p.write_text("x = 1\nperson = True\n")
    r = await edit(ctx, "a.py", "x = 1", "x = 2")
    assert "changed since you read it" in r.error and "Read it again" in r.error
    assert p.read_text() == "x = 1\nperson = True\n"


async def test_touch_without_content_change_is_not_a_change(ctx, tmp_path):
    p = put(tmp_path, "a.py", "x = 1\n")
    await read(ctx, p)
    os.utime(p, ns=(10**18, 10**18))
    assert (await edit(ctx, "a.py", "x = 1", "x = 2")).error is None
    assert p.read_text() == "x = 2\n"


async def test_not_found_quotes_the_string(ctx, tmp_path):
    p = put(tmp_path, "a.py", "def f():\n    return 1\n")
    await read(ctx, p)
    r = await edit(ctx, "a.py", "return 2", "return 3")
    assert "was not found" in r.error and "'return 2'" in r.error and "Read it again" in r.error


async def test_not_found_names_a_whitespace_near_miss_by_line(ctx, tmp_path):
    p = put(tmp_path, "a.py", "a = 0\ndef f():\n\treturn 1\n")
    await read(ctx, p)
    r = await edit(ctx, "a.py", "def f():\n    return 1", "def f():\n    return 2")
    assert "line 2" in r.error and "whitespace" in r.error
    assert p.read_text() == "a = 0\ndef f():\n\treturn 1\n"


async def test_not_found_spots_copied_line_numbers(ctx, tmp_path):
    p = put(tmp_path, "a.py", "x = 1\ny = 2\n")
    await read(ctx, p)
    r = await edit(ctx, "a.py", "1\tx = 1\n2\ty = 2", "z = 3")
    assert "line numbers" in r.error and "Remove the number" in r.error


async def test_several_matches_need_replace_all(ctx, tmp_path):
    p = put(tmp_path, "a.py", "n = 1\nprint(n)\nn = 1\n\nn = 1\n")
    await read(ctx, p)
    r = await edit(ctx, "a.py", "n = 1", "n = 2")
    assert "matches 3 places" in r.error and "lines 1, 3, 5" in r.error
    assert "replace_all to true" in r.error and "surrounding lines" in r.error
    assert p.read_text() == "n = 1\nprint(n)\nn = 1\n\nn = 1\n"


async def test_replace_all_changes_every_occurrence_and_says_how_many(ctx, tmp_path):
    p = put(tmp_path, "a.py", "n = 1\nprint(n)\nn = 1\n\nn = 1\n")
    await read(ctx, p)
    r = await edit(ctx, "a.py", "n = 1", "n = 2", replace_all=True)
    assert p.read_text() == "n = 2\nprint(n)\nn = 2\n\nn = 2\n"
    assert "Replaced all 3 occurrences" in r.content
    assert r.summary == "Edited a.py (+3 -3, 3 replacements)"


# --- what the model and the person see -------------------------------------------------------


async def test_model_gets_numbered_lines_around_the_change(ctx, tmp_path):
    lines = [f"line {i}" for i in range(1, 21)]
    p = put(tmp_path, "src/a.py", "\n".join(lines) + "\n")
    await read(ctx, p)
    r = await edit(ctx, "src/a.py", "line 10\n", "line ten\nline ten and a half\n")
    assert r.summary == "Edited src/a.py (+2 -1)"
    text = r.content
    assert text.startswith(f"Edited {p}.")
    assert "10\tline ten\n11\tline ten and a half\n12\tline 11" in text
    assert "7\tline 7" in text and "14\tline 13" in text  # three lines of context either side
    assert "3\tline 3" not in text and "line 19" not in text  # but only a few


async def test_preview_is_the_diff_and_writes_nothing(ctx, tmp_path):
    p = put(tmp_path, "a.py", "a\nb\nc\n")
    await read(ctx, p)
    tool = EditTool()
    inp = tool.input_model(file_path="a.py", old_string="b\n", new_string="B1\nB2\n")
    pv = await tool.preview(inp, ctx)
    assert (pv.added, pv.removed) == (2, 1)
    assert "-b\n+B1\n+B2\n" in pv.diff and pv.diff.startswith("--- a.py\n+++ a.py\n")
    assert pv.title == "Edit a.py" and pv.notes == ()
    assert p.read_text() == "a\nb\nc\n"


async def test_a_second_edit_needs_no_new_read(ctx, tmp_path):
    p = put(tmp_path, "a.py", "x = 1\n")
    await read(ctx, p)
    await edit(ctx, "a.py", "x = 1", "x = 2")
    r = await edit(ctx, "a.py", "x = 2", "x = 3")
    assert r.error is None and p.read_text() == "x = 3\n"
    assert ctx.read_state.get(str(p)).source == "Edit"


async def test_change_between_approval_and_write_is_refused(ctx, tmp_path):
    # The lifecycle validated, the person approved, then someone saved the file: call() must
    # notice immediately before writing and leave the new content alone.
    p = put(tmp_path, "a.py", "x = 1\n")
    await read(ctx, p)
    tool = EditTool()
    inp = tool.input_model(file_path="a.py", old_string="x = 1", new_string="x = 2")
    assert await tool.validate_input(inp, ctx) is None
    p.write_text("x = 1\n# saved by the person\n")
    with pytest.raises(ToolError, match="changed since you read it"):
        await tool.call(inp, ctx)
    assert p.read_text() == "x = 1\n# saved by the person\n"


# --- bytes on disk ---------------------------------------------------------------------------


async def test_crlf_stays_crlf(ctx, tmp_path):
    p = put(tmp_path, "win.txt", b"one\r\ntwo\r\nthree\r\n")
    await read(ctx, p)
    r = await edit(ctx, "win.txt", "one\ntwo\n", "one\n1.5\ntwo\n")
    assert r.error is None
    assert p.read_bytes() == b"one\r\n1.5\r\ntwo\r\nthree\r\n"


@pytest.mark.parametrize(
    "bom,codec",
    [
        (codecs.BOM_UTF8, "utf-8"),
        (codecs.BOM_UTF16_LE, "utf-16-le"),
        (codecs.BOM_UTF16_BE, "utf-16-be"),
        (b"", "utf-8"),
    ],
)
async def test_encoding_round_trips(ctx, tmp_path, bom, codec):
    p = put(tmp_path, "t.txt", bom + "café = 1\r\nnaïve = 2\r\n".encode(codec))
    await read(ctx, p)
    r = await edit(ctx, "t.txt", "naïve = 2", "naïve = 3 ✓")
    assert r.error is None
    assert p.read_bytes() == bom + "café = 1\r\nnaïve = 3 ✓\r\n".encode(codec)


async def test_undecodable_file_is_refused(ctx, tmp_path):
    p = put(tmp_path, "latin.txt", "caf\xe9\n".encode("latin-1"))
    ctx.read_state.record(p, content=p.read_bytes())  # Read refuses it; pretend it was read
    r = await edit(ctx, "latin.txt", "caf", "cof")
    assert "not UTF-8 or UTF-16" in r.error and p.read_bytes() == b"caf\xe9\n"


@pytest.mark.parametrize("mode", [0o640, 0o755])
async def test_mode_bits_are_kept(ctx, tmp_path, mode):
    p = put(tmp_path, "run.sh", "echo hi\n")
    p.chmod(mode)
    await read(ctx, p)
    await edit(ctx, "run.sh", "hi", "bye")
    assert stat.S_IMODE(p.stat().st_mode) == mode and p.read_text() == "echo bye\n"


@pytest.mark.parametrize("fail_at", ["fsync", "replace"])
async def test_failed_write_leaves_old_content_and_no_temp_files(ctx, tmp_path, monkeypatch, fail_at):
    p = put(tmp_path, "a.py", "x = 1\n")
    await read(ctx, p)

    fail_os(monkeypatch, fail_at)
    tool = EditTool()
    with pytest.raises(OSError, match="No space"):
        await tool.call(tool.input_model(file_path="a.py", old_string="x = 1", new_string="x = 2"), ctx)
    monkeypatch.undo()
    assert p.read_text() == "x = 1\n" and leftovers(tmp_path) == []
    # Nothing was written, so the read state still describes the file on disk.
    assert (await edit(ctx, "a.py", "x = 1", "x = 2")).error is None


# --- quotes ------------------------------------------------------------------------------------


async def test_straight_quotes_match_curly_ones_and_the_file_keeps_its_quotes(ctx, tmp_path):
    p = put(tmp_path, "doc.md", "He said \u201chi there\u201d and left.\n")
    await read(ctx, p)
    r = await edit(ctx, "doc.md", 'said "hi there"', 'said "hello there"')
    assert r.error is None
    assert p.read_text() == "He said \u201chello there\u201d and left.\n"
    assert "curly and straight quotes" in r.content


async def test_new_code_written_with_straight_quotes_stays_straight(ctx, tmp_path):
    p = put(tmp_path, "a.py", "# \u2018note\u2019\nx = 1\n")
    await read(ctx, p)
    await edit(ctx, "a.py", "# 'note'\nx = 1", "# 'note'\nx = 1\ny = 'a'")
    assert p.read_text() == "# \u2018note\u2019\nx = 1\ny = 'a'\n"


# --- permissions ------------------------------------------------------------------------------


def test_flags_rules_and_suggestions(ctx, tmp_path):
    tool = EditTool()
    inp = tool.input_model(file_path="src/pkg/a.py", old_string="a", new_string="b")
    assert_edit_contract(tool, inp, ctx, path=tmp_path / "src/pkg/a.py", rule="Edit(src/pkg/**)")


@pytest.mark.parametrize("where", ["analysis.ipynb", "work/nbs/analysis.ipynb"])
def test_the_suggested_rule_for_a_notebook_names_that_notebook_only(ctx, tmp_path, where):
    """ "Always accept edits to this notebook" grants this notebook, not its folder's others."""
    tool = EditTool()
    rule = tool.suggest_rule(tool.input_model(file_path=where, old_string="a", new_string="b"), ctx)
    assert rule == f"Edit(./{where})"
    spec = rule[len("Edit(") : -1]
    assert gitignore_match(spec, tmp_path / where, cwd=tmp_path)
    assert not gitignore_match(spec, tmp_path / Path(where).with_name("other.ipynb"), cwd=tmp_path)


def test_a_notebook_whose_name_holds_a_pattern_character_gets_the_folder_rule(ctx):
    tool = EditTool()
    rule = tool.suggest_rule(tool.input_model(file_path="run[1].ipynb", old_string="a", new_string="b"), ctx)
    assert rule == "Edit(./*.ipynb)"


def test_suggested_rule_for_a_top_level_file_stays_at_the_top_level(ctx, tmp_path):
    tool = EditTool()
    rule = tool.suggest_rule(tool.input_model(file_path="setup.py", old_string="a", new_string="b"), ctx)
    assert rule == "Edit(./*.py)"
    spec = rule[len("Edit(") : -1]
    assert gitignore_match(spec, tmp_path / "other.py", cwd=tmp_path)
    assert not gitignore_match(spec, tmp_path / "src/deep.py", cwd=tmp_path)
    assert not gitignore_match(spec, tmp_path / "notes.md", cwd=tmp_path)


def test_suggested_rule_outside_cwd_is_absolute(ctx, tmp_path):
    tool = EditTool()
    rule = tool.suggest_rule(tool.input_model(file_path="/etc/app/conf.ini", old_string="a", new_string="b"), ctx)
    assert rule == "Edit(//etc/app/**)"
    assert gitignore_match(rule[5:-1], "/etc/app/conf.ini", cwd=tmp_path)


def test_prompt_states_preconditions_and_boundaries(ctx):
    text = EditTool().description(ctx)
    assert "Read the file first" in text and "refuses" in text
    assert "Write" in text and "NotebookEdit" in text and "replace_all" in text
    assert "line-number prefix" in text


# --- through the agent --------------------------------------------------------------------------


def _tools():
    return [ReadTool(), EditTool()]


def _edit_use(tid: str, path: str, old: str, new: str) -> list[dict]:
    return [
        {
            "type": "tool_use",
            "id": tid,
            "name": "Edit",
            "input": {"file_path": path, "old_string": old, "new_string": new},
        }
    ]


def _tool_result(request: dict, tid: str) -> dict:
    return all_results(request["messages"])[tid]


def test_agent_edit_before_read_is_refused_then_works_after_read(tmp_path):
    p = put(tmp_path, "app.py", "DEBUG = True\n")
    model = ScriptedModel(
        [
            _edit_use("t1", "app.py", "DEBUG = True", "DEBUG = False"),
            [{"type": "tool_use", "id": "t2", "name": "Read", "input": {"file_path": "app.py"}}],
            _edit_use("t3", "app.py", "DEBUG = True", "DEBUG = False"),
            "done",
        ]
    )
    agent = Agent(model=model, cwd=tmp_path, permission_mode="acceptEdits", tools=_tools())
    result = agent.run("turn debug off")
    first = _tool_result(model.requests[1], "t1")
    assert first.get("is_error") and "has not been read yet" in result_text(first)
    done = _tool_result(model.requests[3], "t3")
    assert not done.get("is_error") and "1\tDEBUG = False" in result_text(done)
    assert p.read_text() == "DEBUG = False\n"
    assert result.stop_reason == "end_turn"
    assert agent.trace[-1].summary_result == "Edited app.py (+1 -1)"
    assert "-DEBUG = True\n+DEBUG = False\n" in agent.trace[-1].detail  # the person's diff


def test_agent_approver_sees_the_diff_before_the_file_changes(tmp_path):
    p = put(tmp_path, "app.py", "DEBUG = True\n")
    seen = []

    def approver(req):
        seen.append((req.tool_name, req.suggested_rule, req.diff, p.read_text()))
        return "allow"

    model = ScriptedModel(
        [
            [{"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "app.py"}}],
            _edit_use("t2", "app.py", "True", "False"),
            "done",
        ]
    )
    Agent(model=model, cwd=tmp_path, approver=approver, tools=_tools()).run("go")
    assert len(seen) == 1
    name, rule, diff, on_disk = seen[0]
    assert name == "Edit" and rule == "Edit(./*.py)"
    assert "-DEBUG = True\n+DEBUG = False\n" in diff and on_disk == "DEBUG = True\n"
    assert p.read_text() == "DEBUG = False\n"


def test_agent_file_changed_while_prompt_open_is_not_clobbered(tmp_path):
    p = put(tmp_path, "app.py", "DEBUG = True\n")

    def approver(req):
        p.write_text("DEBUG = True\nSAVED = 1\n")  # the person saves while the prompt is open
        return PermissionAnswer(behavior="allow")

    model = ScriptedModel(
        [
            [{"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "app.py"}}],
            _edit_use("t2", "app.py", "True", "False"),
            "done",
        ]
    )
    Agent(model=model, cwd=tmp_path, approver=approver, tools=_tools()).run("go")
    block = _tool_result(model.requests[2], "t2")
    assert block.get("is_error") and "changed since you read it" in result_text(block)
    assert p.read_text() == "DEBUG = True\nSAVED = 1\n"
