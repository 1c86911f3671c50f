"""Tool descriptions are product text: each tool's prompt is held to DESIGN's conventions.

One section per tool family, each written by the tool's owner. A description must say when to
use the tool and when to use another one (both sides of each boundary), give the reason before a
prohibition, and never promise what the code cannot do (the numbers it quotes are the code's).
"""

from __future__ import annotations

from pathlib import Path

from ipy_agent.contract.tool_context import ToolContext

# --- Glob and Grep ------------------------------------------------------------------------------
from ipy_agent.tools.search.glob_tool import MAX_GLOB_FILES, GlobTool
from ipy_agent.tools.search.grep import DEFAULT_HEAD_LIMIT, MAX_LINE_COLUMNS, GrepTool
from tests.support.tools import tool_ctx


def test_grep_claims_content_search_back_from_bash_with_reasons(tmp_path):
    text = GrepTool().description(tool_ctx(tmp_path))
    prohibition = text.index("Do not run `grep`, `rg`")
    assert "Bash" in text[prohibition : prohibition + 80]
    # The reasons: structured output, the same permissions as Read, a bounded result.
    reasons = text[prohibition : prohibition + 500]
    assert "structured" in reasons and "permission rules as Read" in reasons and "paged" in reasons


def test_grep_sends_name_search_to_glob_and_reading_to_read(tmp_path):
    text = GrepTool().description(tool_ctx(tmp_path))
    assert "Use Glob instead to find files by name" in text
    assert "Read to look at a file" in text


def test_grep_documents_ripgrep_syntax_escapes_and_multiline(tmp_path):
    text = GrepTool().description(tool_ctx(tmp_path))
    assert "ripgrep" in text and "Rust regex" in text
    assert r"`interface\{\}` finds `interface{}`" in text
    assert "multiline: true" in text and "no look-around" in text


def test_grep_documents_head_limit_default_escape_hatch_and_narrowing(tmp_path):
    tool = GrepTool()
    text = tool.description(tool_ctx(tmp_path))
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
    text = GlobTool().description(tool_ctx(tmp_path))
    prohibition = text.index("not `find`, `ls -R` or `ls`")
    assert "in Bash" in text[prohibition : prohibition + 80]
    reasons = text[prohibition : prohibition + 400]
    assert "permission rules as Read" in reasons and "bounded" in reasons
    assert "Use Grep instead to search inside files" in text
    assert "Read to open a file" in text


def test_glob_states_its_cap_order_and_what_it_skips(tmp_path):
    text = GlobTool().description(tool_ctx(tmp_path))
    assert f"at most {MAX_GLOB_FILES}" in text and "most recently modified first" in text
    assert ".git" in text and ".gitignore is not applied" in text
    assert "narrow the pattern" in text


# --- the live-notebook tools: NotebookRead, NotebookRun, Variables, and NotebookEdit's live note ---

from ipy_agent.notebook.render import OUTPUT_BUDGET_CHARS  # noqa: E402
from ipy_agent.tools.notebook.edit import NotebookEditTool  # noqa: E402
from ipy_agent.tools.notebook.read import NotebookReadTool  # noqa: E402
from ipy_agent.tools.notebook.run import DEFAULT_TIMEOUT, MAX_TIMEOUT, NotebookRunTool  # noqa: E402
from ipy_agent.tools.notebook.variables import VariablesTool  # noqa: E402


class _Bridge:
    """What the tools see of the kernel's bridge when a page is connected."""

    connected = True
    display_path = "work/analysis.ipynb"
    path = "/srv/work/analysis.ipynb"
    shell = object()


def _live_ctx(tmp_path: Path) -> ToolContext:
    return tool_ctx(tmp_path, notebook=_Bridge())


def test_notebook_read_claims_the_open_notebook_from_read_and_says_why(tmp_path):
    text = NotebookReadTool().description(_live_ctx(tmp_path))
    assert "'work/analysis.ipynb'" in text
    assert "Use this, not Read, for the open notebook: Read shows the file on disk, which may be older" in text
    assert "Use Read for other notebooks and files" in text
    assert "use Variables" in text and "use NotebookRun" in text
    assert f"about {OUTPUT_BUDGET_CHARS:,} characters" in text


def test_notebook_run_sends_shell_work_to_bash_and_looking_to_read_and_variables(tmp_path):
    text = NotebookRunTool().description(_live_ctx(tmp_path))
    assert "Use Bash for shell commands" in text and "separate process and cannot see the kernel's variables" in text
    assert "do not run cells just to look at them" in text and "Running changes the kernel's state" in text
    assert "NotebookRead shows their last outputs" in text and "Variables shows" in text
    assert f"default: the cell's policy, else {DEFAULT_TIMEOUT:g}; at most {MAX_TIMEOUT:g}" in text
    assert "agent:never-run is refused" in text  # the person's cell policies hold, and it says so


def test_variables_promises_no_code_runs_and_routes_running_to_notebook_run(tmp_path):
    text = VariablesTool().description(_live_ctx(tmp_path))
    assert "never runs code of the variables' classes (no repr)" in text
    assert "instead of running a cell just to look (NotebookRun changes the kernel's state; this does not)" in text


def test_notebook_edit_says_where_its_edits_land(tmp_path):
    live = NotebookEditTool().description(_live_ctx(tmp_path))
    assert "is edited live" in live and "Read its cells with NotebookRead (not Read" in live
    assert "refused for a cell the person changed since" in live
    assert "Any other notebook is changed on disk" in live
    # The same words without a page: a definition that changed with the page would make the
    # prompt cache write every tool definition again when the notebook connects.
    assert NotebookEditTool().description(tool_ctx(tmp_path)) == live


def test_live_tools_are_offered_only_where_they_can_work(tmp_path):
    plain = tool_ctx(tmp_path)
    assert not NotebookReadTool().is_enabled(plain) and not NotebookRunTool().is_enabled(plain)
    assert not VariablesTool().is_enabled(plain)
    live = _live_ctx(tmp_path)
    assert (
        NotebookReadTool().is_enabled(live) and NotebookRunTool().is_enabled(live) and VariablesTool().is_enabled(live)
    )
    no_page = tool_ctx(tmp_path, notebook=type("B", (), {"connected": False, "shell": object()})())
    assert not NotebookReadTool().is_enabled(no_page) and not NotebookRunTool().is_enabled(no_page)
    assert VariablesTool().is_enabled(no_page)  # the kernel is there; the page is not needed


def test_live_tool_flags_fail_closed_where_they_must():
    run, read, var = NotebookRunTool(), NotebookReadTool(), VariablesTool()
    inp = run.input_model(cell_id="c1")
    assert not run.is_read_only(inp) and not run.is_concurrency_safe(inp)
    # Not "may destroy data ... cannot be undone": %agent_rewind puts back the variables a run
    # rebinds, and the prompt itself says what a rewind cannot undo (tools/notebook/run.py).
    assert not run.is_destructive(inp)
    assert read.is_read_only(read.input_model()) and var.is_read_only(var.input_model())
