"""Grep: results checked against ripgrep itself on a real tree, plus paging, filters and errors."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

import pydantic
import pytest

from ipy_agent import Agent, ScriptedModel
from ipy_agent.contract.tool import ToolError
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.tools.search import ripgrep as _search
from ipy_agent.tools.search.grep import GrepTool
from tests.helpers import call_direct, tool_ctx

PYDANTIC_DIR = Path(pydantic.__file__).parent
TOOL = GrepTool()


make_ctx = tool_ctx


async def grep(ctx: ToolContext, **fields):
    return await call_direct(TOOL, ctx, **fields)


def raw_rg(*args: str, cwd: Path) -> list[str]:
    """ripgrep run directly, the way a person would in a shell; "./" prefixes dropped."""
    proc = subprocess.run([_search.find_rg(), *args, "."], cwd=cwd, capture_output=True, text=True)
    assert proc.returncode in (0, 1), proc.stderr
    return [line.removeprefix("./") for line in proc.stdout.splitlines()]


def body(text: str) -> list[str]:
    """The result lines before any trailing note."""
    return text.split("\n\n")[0].splitlines()


# --- against ripgrep on an installed package ------------------------------------------------


async def test_files_with_matches_are_ripgreps_files_newest_first():
    ctx = make_ctx(PYDANTIC_DIR)
    out, text = await grep(ctx, pattern=r"def model_\w+", head_limit=0)
    expected = raw_rg("-l", r"def model_\w+", cwd=PYDANTIC_DIR)
    assert len(expected) > 5
    lines = text.splitlines()
    assert lines[0] == f"Found {len(expected)} files (newest first)"
    assert sorted(lines[1:]) == sorted(expected)
    mtimes = [os.stat(PYDANTIC_DIR / p).st_mtime for p in lines[1:]]
    assert mtimes == sorted(mtimes, reverse=True)
    assert TOOL.summarize_result(out) == f"Found {len(expected)} files"


async def test_count_mode_matches_ripgrep_counts():
    ctx = make_ctx(PYDANTIC_DIR)
    out, text = await grep(ctx, pattern="ValidationError", output_mode="count", head_limit=0)
    expected = dict(line.rsplit(":", 1) for line in raw_rg("--count-matches", "ValidationError", cwd=PYDANTIC_DIR))
    got = dict(line.rsplit(":", 1) for line in body(text))
    assert got == expected
    total = sum(int(n) for n in expected.values())
    assert text.endswith(f"Found {total:,} matches in {len(expected)} files")
    assert TOOL.summarize_result(out) == f"{total:,} matches in {len(expected)} files"


async def test_content_lines_equal_ripgrep_in_path_order():
    ctx = make_ctx(PYDANTIC_DIR)
    out, text = await grep(ctx, pattern=r"^class \w+Error", output_mode="content", head_limit=0)
    expected = raw_rg("-n", "-H", "--sort=path", r"^class \w+Error", cwd=PYDANTIC_DIR)
    assert len(expected) > 3
    assert text.splitlines() == expected
    assert TOOL.summarize_result(out) == f"Found {len(expected)} lines"


async def test_context_lines_equal_ripgrep():
    ctx = make_ctx(PYDANTIC_DIR)
    _, text = await grep(
        ctx, pattern="def __get_pydantic_core_schema__", output_mode="content", head_limit=0, **{"-B": 1, "-A": 2}
    )
    expected = raw_rg("-n", "-H", "--sort=path", "-B1", "-A2", "def __get_pydantic_core_schema__", cwd=PYDANTIC_DIR)
    assert "--" in expected
    assert text.splitlines() == expected


async def test_case_insensitive_and_type_filter_match_ripgrep():
    ctx = make_ctx(PYDANTIC_DIR)
    _, text = await grep(ctx, pattern="basemodel", head_limit=0, type="py", **{"-i": True})
    assert sorted(body(text)[1:]) == sorted(raw_rg("-l", "-i", "--type", "py", "basemodel", cwd=PYDANTIC_DIR))
    _, strict = await grep(ctx, pattern="basemodel", head_limit=0, type="py")
    assert len(body(strict)) < len(body(text))


async def test_glob_filter_matches_ripgrep(tmp_path):
    ctx = make_ctx(PYDANTIC_DIR)
    _, text = await grep(ctx, pattern="Field", glob="*.pyi v1/*.py", head_limit=0)
    expected = raw_rg("-l", "--glob", "*.pyi", "--glob", "v1/*.py", "Field", cwd=PYDANTIC_DIR)
    assert sorted(body(text)[1:]) == sorted(expected)
    assert all(p.endswith(".pyi") or p.startswith("v1/") for p in expected)


# --- behaviour on small trees -----------------------------------------------------------------


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("import os\nTODO = 1\nx = 2\ny = 3\nTODO again\n")
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "notes.txt").write_text("a TODO in a hidden folder\n")
    (tmp_path / ".env").write_text("TODO=secret\n")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "COMMIT_EDITMSG").write_text("TODO in git metadata\n")
    return tmp_path


async def test_hidden_files_found_and_vcs_folder_skipped(tree):
    _, text = await grep(make_ctx(tree), pattern="TODO")
    assert sorted(body(text)[1:]) == [".env", ".hidden/notes.txt", "src/app.py"]
    _, content = await grep(make_ctx(tree), pattern="TODO", output_mode="content")
    assert ".git" not in content


async def test_no_match_says_so_and_is_not_an_error(tree):
    out, text = await grep(make_ctx(tree), pattern="NOT_THERE_ANYWHERE")
    assert text.startswith("No matches found")
    assert TOOL.summarize_result(out) == "No matches found"


async def test_a_binary_file_that_matches_is_reported_in_content_mode(tree):
    (tree / "blob.dat").write_bytes(b"TODO\x00\x01binary")
    ctx = make_ctx(tree)
    _, files = await grep(ctx, pattern="TODO", path="blob.dat")
    out, text = await grep(ctx, pattern="TODO", path="blob.dat", output_mode="content")
    assert body(files) == ["Found 1 file (newest first)", "blob.dat"]
    assert text.startswith("blob.dat: binary file matches")
    assert TOOL.summarize_result(out) == "Found 1 line" and out.num_files == 1


async def test_bad_regex_returns_ripgreps_message_as_error_result(tree):
    model = ScriptedModel([[{"type": "tool_use", "id": "t1", "name": "Grep", "input": {"pattern": "foo(bar"}}], "ok"])
    agent = Agent(model=model, cwd=tree, tools=[GrepTool()])
    agent.run("search")
    result = agent.messages[2]["content"][0]
    assert result["is_error"] is True
    assert "regex parse error" in result["content"] and "unclosed group" in result["content"]
    assert "escape literal" in result["content"]


async def test_unknown_type_is_ripgreps_error(tree):
    with pytest.raises(ToolError, match="unrecognized file type: nosuchtype"):
        await grep(make_ctx(tree), pattern="x", type="nosuchtype")


async def test_files_paging_follows_newest_first_order(tmp_path):
    for i in range(30):
        f = tmp_path / f"f{i:02}.txt"
        f.write_text("needle\n")
        os.utime(f, (1_000_000 + i, 1_000_000 + i))
    ctx = make_ctx(tmp_path)
    out, text = await grep(ctx, pattern="needle", head_limit=10, offset=10)
    assert body(text)[1:] == [f"f{i:02}.txt" for i in range(19, 9, -1)]
    assert "[Showing results with pagination = limit: 10, offset: 10]" in text
    assert "10 more files not shown" in text and "offset: 20" in text and "head_limit: 0" in text
    assert TOOL.summarize_result(out) == "Found 30 files (showing 10)"
    _, everything = await grep(ctx, pattern="needle", head_limit=0)
    assert len(everything.splitlines()) == 31 and "pagination" not in everything


async def test_default_head_limit_is_250(tmp_path):
    (tmp_path / "big.txt").write_text("hit\n" * 300)
    _, text = await grep(make_ctx(tmp_path), pattern="hit", output_mode="content")
    assert len(body(text)) == 250
    assert body(text)[-1] == "big.txt:250:hit"
    assert "limit: 250, offset: 0" in text and "50 more lines not shown" in text


async def test_content_paging_counts_lines_not_separators(tmp_path):
    (tmp_path / "a.txt").write_text("hit\nx\nx\nx\nhit\nx\n")
    ctx = make_ctx(tmp_path)
    _, text = await grep(ctx, pattern="hit", output_mode="content", head_limit=3, **{"-C": 1})
    assert body(text) == ["a.txt:1:hit", "a.txt-2-x", "--", "a.txt-4-x"]
    _, rest = await grep(ctx, pattern="hit", output_mode="content", offset=3, **{"-C": 1})
    assert body(rest) == ["a.txt:5:hit", "a.txt-6-x"]


async def test_line_numbers_can_be_turned_off(tree):
    _, text = await grep(make_ctx(tree), pattern="^TODO", output_mode="content", path="src", **{"-n": False})
    assert body(text) == ["src/app.py:TODO = 1", "src/app.py:TODO again"]


async def test_multiline_spans_lines(tree):
    _, flat = await grep(make_ctx(tree), pattern=r"x = 2.y = 3", output_mode="content")
    assert flat.startswith("No matches found")
    _, text = await grep(make_ctx(tree), pattern=r"x = 2.y = 3", output_mode="content", multiline=True)
    assert body(text) == ["src/app.py:3:x = 2", "src/app.py:4:y = 3"]


async def test_paths_relative_to_cwd_or_absolute_outside(tree, tmp_path_factory):
    _, inside = await grep(make_ctx(tree), pattern="TODO", path="src/app.py", output_mode="count")
    assert body(inside) == ["src/app.py:2"]
    other = tmp_path_factory.mktemp("elsewhere")
    ctx = make_ctx(other)
    _, outside = await grep(ctx, pattern="TODO", path=str(tree / "src"))
    assert body(outside)[1:] == [str(tree / "src" / "app.py")]
    inp = TOOL.input_model(pattern="TODO", path=str(tree))
    assert (await TOOL.check_permissions(inp, ctx)).behavior == "ask"
    assert (await TOOL.check_permissions(inp, make_ctx(tree))).behavior == "passthrough"
    assert TOOL.rule_subject(inp, ctx).value == str(tree)


async def test_missing_path_is_refused_with_the_working_directory(tree):
    inp = TOOL.input_model(pattern="x", path="nope")
    message = await TOOL.validate_input(inp, make_ctx(tree))
    assert "'" + str(tree / "nope") + "'" in message and "does not exist" in message


async def test_read_deny_rule_blocks_grep_on_that_path(tree):
    model = ScriptedModel(
        [[{"type": "tool_use", "id": "t1", "name": "Grep", "input": {"pattern": "TODO", "path": "src"}}], "ok"]
    )
    agent = Agent(model=model, cwd=tree, tools=[GrepTool()], deny=["Read(src)"])
    agent.run("search")
    result = agent.messages[2]["content"][0]
    assert result["is_error"] is True and "app.py" not in result["content"]


async def test_cancel_kills_ripgrep(tmp_path, monkeypatch):
    # ripgrep blocks opening a FIFO nobody writes to: the call can only end by being cancelled.
    # (Grep itself refuses a FIFO path, see tests/security/test_resource_bounds.py; this drives
    # the runner directly.)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    started: list[asyncio.subprocess.Process] = []
    real_exec = asyncio.create_subprocess_exec

    async def spy(*args, **kwargs):
        proc = await real_exec(*args, **kwargs)
        started.append(proc)
        return proc

    monkeypatch.setattr(_search.asyncio, "create_subprocess_exec", spy)
    task = asyncio.create_task(_search.run_rg(["x", "--", "pipe"], cwd=tmp_path))
    for _ in range(200):
        if started:
            break
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, timeout=10)
    assert started and started[0].returncode is not None


def test_missing_ripgrep_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(_search.sys, "executable", str(tmp_path / "python"))
    monkeypatch.setattr(_search.sysconfig, "get_path", lambda *a, **k: str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ToolError, match=r"pip install ripgrep==14\.1\.0"):
        _search.find_rg.__wrapped__()


def test_summaries_for_the_person(tree):
    inp = TOOL.input_model(pattern="TODO", path="src", glob="*.py")
    assert TOOL.summarize_use(inp) == '"TODO" in src (*.py)'
    assert TOOL.is_read_only(inp) and TOOL.is_concurrency_safe(inp)
    assert TOOL.rule_names == ("Read",) and TOOL.kind == "read" and TOOL.max_result_chars == 20_000
