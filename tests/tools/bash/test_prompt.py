"""Bash's description is product text: held to the rules in issue 3 item 8 and DESIGN's
conventions, and to the numbers the code actually uses."""

from __future__ import annotations

from pathlib import Path

from ipy_agent.tools.bash.process import OUTPUT_LIMIT
from ipy_agent.tools.bash.tool import DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS, BashInput, BashTool
from tests.support.tools import tool_ctx


def _text(tmp_path: Path) -> str:
    return BashTool().description(tool_ctx(tmp_path))


def _paragraph_with(text: str, needle: str) -> str:
    at = text.index(needle)
    start = text.rfind("\n\n", 0, at) + 2
    end = text.find("\n\n", at)
    return text[start : end if end >= 0 else len(text)]


def test_reading_searching_and_listing_go_to_the_dedicated_tools_with_reasons(tmp_path):
    para = _paragraph_with(_text(tmp_path), "use the dedicated tools")
    for tool in ("Read", "Grep", "Glob"):
        assert tool in para
    for shell in ("cat", "grep", "find", "ls"):
        assert shell in para
    # The reasons, not only the rule: structure, permissions, budgets.
    assert "structured" in para and "permission" in para and "budget" in para


def test_says_when_bash_is_the_right_tool(tmp_path):
    assert "tests" in _text(tmp_path) and "git" in _text(tmp_path)


def test_quoting_chaining_and_parallel_calls(tmp_path):
    text = _text(tmp_path)
    assert "spaces" in _paragraph_with(text, "Quote paths")
    chain = _paragraph_with(text, "&&")
    assert "depend" in chain and "parallel" in chain


def test_timeout_numbers_are_the_codes(tmp_path):
    text = _text(tmp_path)
    assert f"{DEFAULT_TIMEOUT_MS:,}" in text and f"{MAX_TIMEOUT_MS:,}" in text and "milliseconds" in text
    assert BashInput(command="x").timeout == DEFAULT_TIMEOUT_MS


def test_output_cap_and_where_the_full_text_goes(tmp_path):
    para = _paragraph_with(_text(tmp_path), "cut in the middle")
    assert f"{OUTPUT_LIMIT:,}" in para and "file" in para and "Read" in para


def test_git_safety_note_with_its_reason(tmp_path):
    para = _paragraph_with(_text(tmp_path), "Git safety")
    assert "force-push" in para and "--no-verify" in para and "Commit only when asked" in para
    assert "because" in para  # the reason comes with the prohibition


def test_exit_code_rules_match_the_code(tmp_path):
    text = _text(tmp_path)
    assert '"Exit code N"' in text
    for name in ("grep", "rg", "diff", "find", "test"):
        assert name in _paragraph_with(text, "Exit status 1")


def test_promises_nothing_the_tool_cannot_do(tmp_path):
    text = _text(tmp_path)
    # The background parameter it describes exists, with the tools that read and stop such a
    # command; environment variables really do not persist.
    assert set(BashInput.model_json_schema()["properties"]) == {
        "command",
        "timeout",
        "description",
        "run_in_background",
        "dangerouslyDisableSandbox",
    }
    background = _paragraph_with(text, "run_in_background")
    assert "BashOutput" in background and "KillShell" in background
    # The sandbox it describes is the one the parameter leaves (tests/security/test_sandbox.py).
    assert "dangerouslyDisableSandbox" in _paragraph_with(text, "sandbox")
    assert "do not carry over" in text
