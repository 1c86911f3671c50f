"""Glob: newest first, relative paths, the 100-file cap, VCS folders skipped, plain no-match."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ipy_agent import Agent, ScriptedModel
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.tools.search.glob_tool import GlobTool
from tests.helpers import call_direct, tool_ctx

TOOL = GlobTool()


make_ctx = tool_ctx


async def glob(ctx: ToolContext, **fields):
    return await call_direct(TOOL, ctx, **fields)


def touch(path: Path, mtime: int, text: str = "") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.utime(path, (mtime, mtime))


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    touch(tmp_path / "old.py", 1_000)
    touch(tmp_path / "src" / "new.py", 3_000)
    touch(tmp_path / "src" / "pkg" / "mid.py", 2_000)
    touch(tmp_path / "src" / "readme.md", 4_000)
    touch(tmp_path / ".tools" / "hidden.py", 500)
    touch(tmp_path / ".git" / "hooks" / "pre-commit.py", 9_000)
    touch(tmp_path / "build" / "gen.py", 100)
    (tmp_path / ".gitignore").write_text("build/\n")
    return tmp_path


async def test_newest_first_relative_to_cwd(tree):
    out, text = await glob(make_ctx(tree), pattern="**/*.py")
    assert text.splitlines() == ["src/new.py", "src/pkg/mid.py", "old.py", ".tools/hidden.py", "build/gen.py"]
    assert TOOL.summarize_result(out) == "Found 5 files"


async def test_pattern_without_slash_matches_names_at_any_depth(tree):
    _, text = await glob(make_ctx(tree), pattern="mid.py")
    assert text == "src/pkg/mid.py"


async def test_pattern_with_slash_is_anchored_at_the_search_path(tree):
    _, text = await glob(make_ctx(tree), pattern="src/*.py")
    assert text == "src/new.py"
    _, text = await glob(make_ctx(tree), pattern="*.py", path="src/pkg")
    assert text == "src/pkg/mid.py"


async def test_hidden_included_git_skipped_gitignore_not_applied(tree):
    _, text = await glob(make_ctx(tree), pattern="*.py")
    assert ".tools/hidden.py" in text and "build/gen.py" in text
    assert ".git" not in text


async def test_no_match_says_so(tree):
    out, text = await glob(make_ctx(tree), pattern="**/*.rs")
    assert text == "No files found matching '**/*.rs' in '.'."
    assert TOOL.summarize_result(out) == "No files found"


async def test_at_most_100_newest_with_a_note(tmp_path):
    for i in range(130):
        touch(tmp_path / f"d{i % 3}" / f"f{i:03}.txt", 10_000 + i)
    out, text = await glob(make_ctx(tmp_path), pattern="**/*.txt")
    files, note = text.split("\n\n")
    names = [Path(p).name for p in files.splitlines()]
    assert names == [f"f{i:03}.txt" for i in range(129, 29, -1)]
    assert "100 most recently modified of 130" in note and "more specific pattern" in note
    assert TOOL.summarize_result(out) == "Found 130 files (showing 100)"


async def test_absolute_pattern_and_outside_cwd(tree, tmp_path_factory):
    elsewhere = make_ctx(tmp_path_factory.mktemp("elsewhere"))
    _, text = await glob(elsewhere, pattern=f"{tree}/src/*.py")
    assert text == str(tree / "src" / "new.py")
    inp = TOOL.input_model(pattern="*.py", path=str(tree))
    assert (await TOOL.check_permissions(inp, elsewhere)).behavior == "ask"
    assert (await TOOL.check_permissions(inp, make_ctx(tree))).behavior == "passthrough"
    assert TOOL.rule_subject(inp, elsewhere).value == str(tree)
    assert TOOL.suggest_rule(inp, elsewhere) == f"Read(/{tree.as_posix()}/**)"


async def test_path_must_be_an_existing_directory(tree):
    ctx = make_ctx(tree)
    on_file = await TOOL.validate_input(TOOL.input_model(pattern="*", path="old.py"), ctx)
    assert "is a file, not a directory" in on_file and "Read" in on_file
    missing = await TOOL.validate_input(TOOL.input_model(pattern="*", path="nowhere"), ctx)
    assert "does not exist" in missing


async def test_bad_glob_is_an_error_result_the_model_reads(tree):
    model = ScriptedModel([[{"type": "tool_use", "id": "t1", "name": "Glob", "input": {"pattern": "src/[ab"}}], "ok"])
    agent = Agent(model=model, cwd=tree, tools=[GlobTool()])
    agent.run("find")
    result = agent.messages[2]["content"][0]
    assert result["is_error"] is True and "src/[ab" in result["content"] and "unclosed" in result["content"]


async def test_through_the_agent_the_model_gets_the_list(tree):
    model = ScriptedModel([[{"type": "tool_use", "id": "t1", "name": "Glob", "input": {"pattern": "*.md"}}], "ok"])
    agent = Agent(model=model, cwd=tree, tools=[GlobTool()])
    agent.run("find")
    assert agent.messages[2]["content"][0]["content"] == "src/readme.md"
    assert agent.trace[0].summary_result == "Found 1 file"


def test_flags():
    inp = TOOL.input_model(pattern="*.py")
    assert TOOL.is_read_only(inp) and TOOL.is_concurrency_safe(inp) and not TOOL.is_destructive(inp)
    assert TOOL.rule_names == ("Read",) and TOOL.kind == "read"
    assert TOOL.summarize_use(TOOL.input_model(pattern="*.py", path="src")) == "*.py in src"
