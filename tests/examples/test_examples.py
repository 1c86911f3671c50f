"""The shipped example transcripts run offline and do what the README says."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ipy_agent import Agent, ScriptedModel
from ipy_agent.history.messages import history_problems

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "transcripts"


def test_read_and_edit_transcript_fixes_the_typo(tmp_path):
    (tmp_path / "notes.txt").write_text("teh plan\nline two\n")
    shutil.copy(EXAMPLES / "read_and_edit.json", tmp_path)
    asked: list[str] = []
    agent = Agent(
        model=ScriptedModel.from_file(tmp_path / "read_and_edit.json"),
        cwd=tmp_path,
        approver=lambda req: asked.append(req.tool_name) or "allow",
    )
    result = agent.run("tidy up notes.txt")
    assert (tmp_path / "notes.txt").read_text() == "the plan\nline two\n"
    assert asked == ["Edit"] and result.stop_reason == "end_turn" and history_problems(agent.messages) == []


def test_read_and_edit_transcript_tells_the_truth_after_a_deny(tmp_path):
    (tmp_path / "notes.txt").write_text("teh plan\nline two\n")
    agent = Agent(
        model=ScriptedModel.from_file(EXAMPLES / "read_and_edit.json"),
        cwd=tmp_path,
        approver=lambda req: "deny",
    )
    result = agent.run("tidy up notes.txt")
    assert (tmp_path / "notes.txt").read_text() == "teh plan\nline two\n"
    assert result.stop_reason == "end_turn" and "still says" in result.text and "now says" not in result.text


@pytest.mark.parametrize("answer", ["allow", "deny"])
def test_the_tour_transcript_says_what_happened_to_the_file(tmp_path, answer):
    (tmp_path / "notes.txt").write_text("Meeting notes\nWe agreed on teh plan.\n")
    agent = Agent(model=ScriptedModel.from_file(EXAMPLES / "tour.json"), cwd=tmp_path, approver=lambda req: answer)
    result = agent.run("fix the typo in notes.txt")
    fixed = (tmp_path / "notes.txt").read_text() == "Meeting notes\nWe agreed on the plan.\n"
    assert fixed == (answer == "allow")
    assert ("now reads" in result.text) == fixed and ("still reads" in result.text) == (not fixed)


README = Path(__file__).resolve().parents[2] / "README.md"


def readme_python_blocks() -> list[tuple[str, str]]:
    """(the prose line before it, code) for each ```python block of the README."""
    lines = README.read_text(encoding="utf-8").splitlines()
    blocks, i = [], 0
    while i < len(lines):
        if lines[i].strip() == "```python":
            before = next((ln for ln in reversed(lines[:i]) if ln.strip()), "")
            j = lines.index("```", i + 1)
            blocks.append((before, "\n".join(lines[i + 1 : j]) + "\n"))
            i = j
        i += 1
    return blocks


@pytest.mark.kernel
def test_the_readme_examples_run_as_written(tmp_path):
    """Each README python block, pasted as written into a kernel started in a fresh copy of the
    repository's examples; blocks the README says need an API key are checked for being there,
    not run (tests never use the network), and fragments with `...` placeholders are skipped. The person clicks Allow when the prompt appears."""
    from tests.support.kernel import Kernel

    shutil.copytree(EXAMPLES.parent, tmp_path / "examples")
    blocks = readme_python_blocks()
    # A block with a `...` placeholder (e.g. `Agent(model=..., mcp_servers=...)`) is a fragment
    # to fill in, not an example to paste; every other block must run as written.
    offline = [code for before, code in blocks if "ANTHROPIC_API_KEY" not in before and "=..." not in code]
    assert any("--script" in code for code in offline) and any("from ipy_agent import" in code for code in offline)
    assert any("ANTHROPIC_API_KEY" in before for before, _ in blocks)
    for _, code in blocks:
        for line in code.splitlines():
            if line.startswith("%agent"):
                assert "#" not in line, f"a comment in a magic line becomes part of the request: {line!r}"
    with Kernel(tmp_path) as k:
        for code in offline:
            cell = k.execute(code)
            if "--script" in code:
                allow = k.wait_for("the Allow button", lambda: k.find_button("Allow"))
                k.click(allow)
            ex = k.wait(cell)
            assert ex.status == "ok", f"README block failed:\n{code}\n{ex.text}"
        assert (tmp_path / "notes.txt").read_text() == "Meeting notes: the plan is ready.\n"
        assert "error" not in k.check("print(result.stop_reason)")
