"""The guide in the system prompt promises only what the runtime enforces, and names only tools
that exist and are offered.

Every line of `GUIDE` (ipy_agent/loop/system_prompt.py) that states a rule names it; ENFORCED_BY
maps each rule to the tests that prove the runtime enforces it, whatever the model does. A new
rule without its proof, a proof that no longer exists, or a line that names a tool it does not
declare fails here. docs/system-prompt.md shows the same table to a reader.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

from ipy_agent import Agent, ScriptedModel, builtin_tools
from ipy_agent.loop.system_prompt import GUIDE, MODE_RULES, build_system_prompt, guide_text
from ipy_agent.notebook.render import OUTPUT_BUDGET_CHARS
from tests.support.frontend import Panel, cell, connected_bridge
from tests.support.transcript import use

ROOT = Path(__file__).resolve().parents[2]

# rule -> the tests that prove the runtime enforces it ("path::test_name").
ENFORCED_BY: dict[str, list[str]] = {
    "edit_before_read": [
        "tests/tools/files/test_edit.py::test_not_read_yet_is_refused_and_file_untouched",
        "tests/tools/files/test_edit.py::test_changed_since_read_is_refused",
        "tests/tools/notebook/test_notebook_edit.py::test_not_read_yet_and_changed_since_read",
    ],
    "read_only_calls_run_together": [
        "tests/runtime/test_executor.py::test_adjacent_safe_calls_run_together_unsafe_calls_alone_results_in_order",
    ],
    "permission_mode": [
        "tests/permissions/test_permissions.py::test_default_mode_reads_inside_pass_outside_ask",
        "tests/permissions/test_permissions.py::test_plan_mode_refuses_writes_even_with_allow_rules",
        "tests/permissions/test_permissions.py::test_accept_edits_passes_edits_inside_only",
        "tests/permissions/test_permissions.py::test_bypass_runs_everything_but_deny_rules",
    ],
    "denial_carries_the_reason": [
        "tests/permissions/test_permissions.py::test_a_denial_carries_the_persons_reason_to_the_model",
    ],
    "one_line_per_call": ["tests/ui/test_widgets.py::test_rows_never_show_the_raw_tool_result"],
    "large_results_spill": [
        "tests/runtime/test_budget_and_read_state.py::test_an_oversized_result_is_spilled_whole_with_a_preview",
        "tests/runtime/test_budget_and_read_state.py::test_the_spill_file_is_readable_without_a_prompt",
    ],
    "variables_run_no_code": ["tests/notebook/test_variables.py::test_no_user_code_runs_for_hostile_objects"],
    "notebook_run_asks": ["tests/loop/test_prompt_guide.py::test_notebook_run_asks_unless_the_person_allowed_it"],
    "cell_outputs_are_cut": [
        "tests/notebook/test_render.py::test_each_cells_outputs_are_budgeted_and_short_ones_survive",
    ],
    "stale_cells_refused": [
        "tests/tools/notebook/test_notebook_edit.py::test_not_read_yet_and_changed_since_read",
        "tests/notebook/test_live_kernel.py::test_a_cell_the_person_changed_after_the_read_is_refused_other_edits_go_on",
    ],
}


@cache
def _functions(path: str) -> set[str]:
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    return {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}


def test_every_rule_the_guide_states_has_its_proof():
    stated = {line.rule for line in GUIDE if line.rule}
    assert stated == set(ENFORCED_BY), "map each rule of GUIDE to its tests in ENFORCED_BY (and only those)"
    for rule, proofs in ENFORCED_BY.items():
        assert proofs, rule
        for proof in proofs:
            path, name = proof.split("::")
            assert name.startswith("test_") and name in _functions(path), f"{rule}: {proof} does not exist"


def test_every_mode_the_prompt_describes_is_a_permission_mode():
    from ipy_agent.contract.decision import PERMISSION_MODES

    assert set(MODE_RULES) == set(PERMISSION_MODES)


def test_every_tool_the_guide_names_exists_and_is_declared():
    names = {t.name for t in builtin_tools()}
    for line in GUIDE:
        assert set(line.tools) <= names, f"{line.text[:40]}…: unknown tools {set(line.tools) - names}"
        named = {n for n in names if re.search(rf"\b{n}\b", line.text)}
        assert named == set(line.tools), f"{line.text[:40]}…: names {named}, declares {set(line.tools)}"


def test_a_line_about_a_tool_not_offered_is_left_out():
    everything = guide_text([t.name for t in builtin_tools()], "default")
    assert "# Notebook work" in everything and "NotebookRun" in everything and "Variables" in everything
    plain = guide_text(["Read", "Edit", "Write", "Glob", "Grep", "Bash", "NotebookEdit"], "default")
    assert "NotebookRun" not in plain and "Variables" not in plain
    assert "NotebookEdit refuses it" in plain  # on disk, NotebookEdit is offered
    bare = guide_text(["Read"], "default")
    assert "# Notebook work" not in bare and "Notebook" not in bare


@pytest.mark.parametrize("mode", sorted(MODE_RULES))
def test_the_prompt_says_the_mode_in_force(tmp_path, mode):
    text = build_system_prompt(cwd=tmp_path, tool_names=["Read"], permission_mode=mode)
    assert MODE_RULES[mode] in text
    assert sum(MODE_RULES[m] in text for m in MODE_RULES) == 1


def test_the_numbers_the_guide_quotes_are_the_codes():
    text = guide_text(["NotebookRun"], "default")
    assert f"about {OUTPUT_BUDGET_CHARS:,} characters" in text


def test_the_guide_page_lists_every_rule_with_its_proof():
    page = (ROOT / "docs" / "system-prompt.md").read_text(encoding="utf-8")
    for rule, proofs in ENFORCED_BY.items():
        row = next((ln for ln in page.splitlines() if ln.startswith(f"| `{rule}` |")), None)
        assert row is not None, f"docs/system-prompt.md has no row for {rule}"
        for proof in proofs:
            assert proof.split("::")[1] in row, f"docs/system-prompt.md: {rule}'s row does not name {proof}"


def test_notebook_run_asks_unless_the_person_allowed_it(tmp_path: Path):
    """The rule `notebook_run_asks`: in the default mode a run asks, and a denied run runs nothing;
    an allow rule lets it run without asking."""
    panel = Panel(path="n.ipynb", cells=[cell("ran = True", cell_id="c1")])
    bridge = connected_bridge(panel, tmp_path, shell=object())
    ran: list[str] = []
    bridge.run_code = lambda code, timeout: ran.append(code)  # type: ignore[method-assign]
    asked: list[str] = []
    model = ScriptedModel([[use("NotebookRun", "n1", cell_id="c1")], "ok"])
    agent = Agent(
        model=model, cwd=tmp_path, notebook=bridge, approver=lambda req: asked.append(req.tool_name) or "deny"
    )
    agent.run("run it")
    assert asked == ["NotebookRun"] and ran == [] and agent.trace[0].status == "denied"
    assert "NotebookRun runs code in the person's kernel" in model.requests[0]["system"]


def test_the_guide_page_shows_the_guide_as_it_is():
    page = (ROOT / "docs" / "system-prompt.md").read_text(encoding="utf-8")
    shown = re.search(r"```text\n(# How to work\n.*?)```", page, flags=re.S)
    assert shown is not None, "docs/system-prompt.md has no ```text block with the guide"
    assert shown.group(1).rstrip("\n") == guide_text([t.name for t in builtin_tools()], "default")
