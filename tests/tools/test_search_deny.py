"""Grep and Glob keep the files a Read deny rule names out of what the model receives.

anthropics/claude-code#6002 and #65816: `Read(**/.env)` stopped Read, yet a Grep over the
project printed the lines of `.env`. Every test here goes through Agent and ScriptedModel and
looks at what the model was actually sent (`model.requests`), not at a tool's internals.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ipy_agent import Agent, ScriptedModel
from ipy_agent.contract.read_state import ReadState
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.tools.search.glob_tool import GlobTool
from ipy_agent.tools.search.grep import GrepTool
from ipy_agent.tools.search.ripgrep import deny_globs
from tests.helpers import write_tree

DENY = ["Read(**/.env)", "Read(secrets/**)"]
SECRET = "SECRET"  # in every denied file, in no allowed one


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    files = {
        ".env": "API_KEY=sk-SECRET-root\n",
        "app/.env": "API_KEY=sk-SECRET-app\nDEBUG=1\n",
        "secrets/key.pem": "API_KEY SECRET-pem\n",
        "secrets/readme.txt": "nothing to find here\n",
        "config.py": "from os import getenv\nAPI_KEY = getenv('API_KEY')\n",
        # `secrets/**` is anchored at cwd: a folder of that name deeper down is not covered.
        "app/secrets/notes.txt": "API_KEY is documented in the wiki\n",
    }
    return write_tree(tmp_path, files)


def run_tool(cwd: Path, name: str, inp: dict, deny: list[str] = DENY) -> tuple[str, ScriptedModel]:
    """One call through the whole runtime; returns the tool_result text the model got."""
    model = ScriptedModel([[{"type": "tool_use", "id": "t1", "name": name, "input": inp}], "done"])
    agent = Agent(model=model, cwd=cwd, tools=[GrepTool(), GlobTool()], deny=deny)
    agent.run("look")
    result = model.requests[1]["messages"][-1]["content"][0]
    assert result["type"] == "tool_result" and not result.get("is_error"), result
    return result["content"], model


def assert_never_sent(model: ScriptedModel) -> None:
    sent = json.dumps(model.requests)
    assert SECRET not in sent
    assert ".env" not in sent.replace("Read(**/.env)", "")  # not even the names


def test_files_with_matches_leaves_denied_files_out_and_says_how_many(tree):
    text, model = run_tool(tree, "Grep", {"pattern": "API_KEY"})
    lines = text.splitlines()
    assert lines[0] == "Found 2 files (newest first)"
    assert sorted(lines[1:3]) == ["app/secrets/notes.txt", "config.py"]
    # Four denied files in the tree (readme.txt matches nothing but is hidden all the same).
    assert lines[-1] == "(4 files hidden by deny rules: Read(**/.env), Read(secrets/**))"
    assert_never_sent(model)


def test_hidden_count_does_not_tell_whether_denied_files_match(tree):
    # Counting only denied files that match would reveal what they contain.
    matching, _ = run_tool(tree, "Grep", {"pattern": "sk-SECRET"})
    nothing, _ = run_tool(tree, "Grep", {"pattern": "no such text anywhere"})
    assert matching.startswith("No matches found") and nothing.startswith("No matches found")
    assert (
        matching.splitlines()[-1]
        == nothing.splitlines()[-1]
        == ("(4 files hidden by deny rules: Read(**/.env), Read(secrets/**))")
    )


def test_content_mode_drops_the_lines_and_context_of_denied_files(tree):
    text, model = run_tool(tree, "Grep", {"pattern": "API_KEY|DEBUG", "output_mode": "content", "-C": 2})
    assert "config.py:2:API_KEY = getenv('API_KEY')" in text
    assert "app/secrets/notes.txt:1:API_KEY is documented in the wiki" in text
    assert text.endswith("(4 files hidden by deny rules: Read(**/.env), Read(secrets/**))")
    assert_never_sent(model)


def test_count_mode_counts_only_allowed_files(tree):
    text, model = run_tool(tree, "Grep", {"pattern": "API_KEY", "output_mode": "count"})
    assert text.splitlines()[:2] == ["app/secrets/notes.txt:1", "config.py:2"]
    assert "Found 3 matches in 2 files" in text
    assert_never_sent(model)


def test_search_inside_a_denied_folder_finds_nothing_it_may_show(tree):
    # The root `secrets` itself is not covered by `secrets/**`, so the call runs; its files are.
    text, model = run_tool(tree, "Grep", {"pattern": ".", "path": "secrets", "output_mode": "content"})
    assert text.startswith("No matches found")
    assert text.endswith("(2 files hidden by deny rules: Read(secrets/**))")
    assert_never_sent(model)


def test_glob_lists_no_denied_file_and_counts_only_names_that_match(tree):
    text, model = run_tool(tree, "Glob", {"pattern": "**/*"})
    assert sorted(text.split("\n\n")[0].splitlines()) == ["app/secrets/notes.txt", "config.py"]
    assert text.endswith("(4 files hidden by deny rules: Read(**/.env), Read(secrets/**))")
    assert_never_sent(model)
    only_env, _ = run_tool(tree, "Glob", {"pattern": ".env"})
    assert only_env == ("No files found matching '.env' in '.'.\n\n(2 files hidden by deny rules: Read(**/.env))")
    python, _ = run_tool(tree, "Glob", {"pattern": "*.py"})
    assert python == "config.py"  # nothing was left out, so no note


@pytest.mark.parametrize("rule", ["Read(//{tree}/config.py)", "Read(./config.py)", "Read(/config.py)"])
def test_anchored_and_absolute_rules_are_applied_after_ripgrep(tree, rule):
    rule = rule.format(tree=tree.as_posix().lstrip("/"))
    text, _model = run_tool(tree, "Grep", {"pattern": "getenv", "output_mode": "content"}, deny=[rule])
    assert text == f"No matches found for 'getenv' in '.'.\n\n(1 file hidden by deny rules: {rule})"
    listed, _ = run_tool(tree, "Glob", {"pattern": "*.py"}, deny=[rule])
    assert listed == f"No files found matching '*.py' in '.'.\n\n(1 file hidden by deny rules: {rule})"


def test_a_deny_rule_added_during_the_conversation_applies_to_the_next_search(tree):
    model = ScriptedModel(
        [
            [{"type": "tool_use", "id": "t1", "name": "Grep", "input": {"pattern": "sk-"}}],
            "first",
            [{"type": "tool_use", "id": "t2", "name": "Grep", "input": {"pattern": "sk-"}}],
            "second",
        ]
    )
    agent = Agent(model=model, cwd=tree, tools=[GrepTool()])
    agent.run("before")
    assert ".env" in model.requests[1]["messages"][-1]["content"][0]["content"]
    agent.rules.add("deny", "Read(**/.env)")
    agent.run("after")
    second = model.requests[3]["messages"][-1]["content"][0]["content"]
    assert second.startswith("No matches found") and "2 files hidden" in second


def test_deny_globs_pass_ripgrep_only_what_means_the_same(tmp_path):
    ctx = ToolContext(
        cwd=tmp_path,
        read_state=ReadState(),
        read_deny=("**/.env", "secrets/**", "*.pem", "./local.cfg", "//etc/passwd", "~/.ssh/**", "*.{a,b}"),
    )
    # In cwd: unanchored ones as they are, anchored ones pinned to the search root.
    assert deny_globs(ctx, tmp_path) == ["**/.env", "/secrets/**", "*.pem", "/local.cfg"]
    # Deeper down, an anchored rule would be re-rooted wrongly: only the unanchored ones go.
    assert deny_globs(ctx, tmp_path / "app") == ["**/.env", "*.pem"]
    # Outside cwd no cwd-relative rule applies at all.
    assert deny_globs(ctx, tmp_path.parent) == []
