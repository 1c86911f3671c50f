"""Tool descriptions are product text: each tool's prompt is held to DESIGN's conventions.

One section per tool family, each written by the tool's owner. A description must say when to
use the tool and when to use another one (both sides of each boundary), give the reason before a
prohibition, and never promise what the code cannot do (the numbers it quotes are the code's).
"""

from __future__ import annotations

from pathlib import Path

from ipy_agent.runtime.read_state import ReadState
from ipy_agent.runtime.tool import ToolContext


def _ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(cwd=tmp_path, read_state=ReadState())


# --- Glob and Grep ------------------------------------------------------------------------------

from ipy_agent.tools.glob_tool import MAX_GLOB_FILES, GlobTool  # noqa: E402
from ipy_agent.tools.grep import DEFAULT_HEAD_LIMIT, MAX_LINE_COLUMNS, GrepTool  # noqa: E402


def test_grep_claims_content_search_back_from_bash_with_reasons(tmp_path):
    text = GrepTool().description(_ctx(tmp_path))
    prohibition = text.index("Do not run `grep`, `rg`")
    assert "Bash" in text[prohibition : prohibition + 80]
    # The reasons: structured output, the same permissions as Read, a bounded result.
    reasons = text[prohibition : prohibition + 500]
    assert "structured" in reasons and "permission rules as Read" in reasons and "paged" in reasons


def test_grep_sends_name_search_to_glob_and_reading_to_read(tmp_path):
    text = GrepTool().description(_ctx(tmp_path))
    assert "Use Glob instead to find files by name" in text
    assert "Read to look at a file" in text


def test_grep_documents_ripgrep_syntax_escapes_and_multiline(tmp_path):
    text = GrepTool().description(_ctx(tmp_path))
    assert "ripgrep" in text and "Rust regex" in text
    assert r"`interface\{\}` finds `interface{}`" in text
    assert "multiline: true" in text and "no look-around" in text


def test_grep_documents_head_limit_default_escape_hatch_and_narrowing(tmp_path):
    tool = GrepTool()
    text = tool.description(_ctx(tmp_path))
    assert f"head_limit (default {DEFAULT_HEAD_LIMIT})" in text
    assert "head_limit: 0 returns every result" in text
    assert "narrow the search" in text and "offset" in text
    assert f"{tool.max_result_chars:,} characters" in text
    assert f"longer than {MAX_LINE_COLUMNS} characters" in text


def test_grep_schema_uses_claude_code_flag_names():
    schema = GrepTool().input_schema()
    props = schema["properties"]
    for key in ("-i", "-n", "-A", "-B", "-C", "head_limit", "offset", "multiline", "output_mode"):
        assert key in props, key
    assert props["head_limit"]["default"] == DEFAULT_HEAD_LIMIT
    assert props["output_mode"]["default"] == "files_with_matches"
    assert "case_insensitive" not in props and schema["additionalProperties"] is False


def test_glob_claims_name_search_back_from_bash_and_sends_content_to_grep(tmp_path):
    text = GlobTool().description(_ctx(tmp_path))
    prohibition = text.index("not `find`, `ls -R` or `ls`")
    assert "in Bash" in text[prohibition : prohibition + 80]
    reasons = text[prohibition : prohibition + 400]
    assert "permission rules as Read" in reasons and "bounded" in reasons
    assert "Use Grep instead to search inside files" in text
    assert "Read to open a file" in text


def test_glob_states_its_cap_order_and_what_it_skips(tmp_path):
    text = GlobTool().description(_ctx(tmp_path))
    assert f"at most {MAX_GLOB_FILES}" in text and "most recently modified first" in text
    assert ".git" in text and ".gitignore is not applied" in text
    assert "narrow the pattern" in text
