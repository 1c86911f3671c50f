"""The shipped example transcripts run offline and do what the README says."""

from __future__ import annotations

import shutil
from pathlib import Path

from ipy_agent import Agent, ScriptedModel
from ipy_agent.runtime.history import history_problems

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "transcripts"


def test_read_and_edit_transcript_fixes_the_typo(tmp_path):
    (tmp_path / "notes.txt").write_text("teh plan\nline two\n")
    shutil.copy(EXAMPLES / "read_and_edit.json", tmp_path)
    asked: list[str] = []
    agent = Agent(model=ScriptedModel.from_file(tmp_path / "read_and_edit.json"), cwd=tmp_path,
                  approver=lambda req: asked.append(req.tool_name) or "allow")
    result = agent.run("tidy up notes.txt")
    assert (tmp_path / "notes.txt").read_text() == "the plan\nline two\n"
    assert asked == ["Edit"] and result.stop_reason == "end_turn" and history_problems(agent.messages) == []
