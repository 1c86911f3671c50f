"""`IPY_AGENT_COURSE_AUTOANSWER=1`: the course build's and the tests' automatic answers, said in the cell.

The run view is the one a kernel shows (`choose_ui` with widgets, no front end: the tests read
the widgets' values). With the setting, each prompt is answered through its own buttons as the
transcript's `person` says, and the first line of the cell says the answers are automatic.
Without it (the default) the same prompt waits for a person, and nothing says "automatic".
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from ipy_agent import Agent, ScriptedModel
from ipy_agent.ui.course_answers import AUTOANSWER_ENV, NOTICE
from ipy_agent.ui.run_ui import choose_ui
from tests.support.run_view import edit, next_prompt
from tests.support.transcript import use

QUESTION = {
    "questions": [
        {
            "question": "Which way?",
            "header": "Way",
            "options": [{"label": "Left", "description": "the short one"}, {"label": "Right", "description": ""}],
        }
    ]
}


def scene(tmp_path: Path, person: dict[str, str]) -> Agent:
    """a.txt, and a transcript that edits it twice and asks a question, with the person's answers."""
    (tmp_path / "a.txt").write_text("hello world\nsecond line\n")
    turns = [
        [use("Read", "t1", file_path="a.txt")],
        edit("t2", "hello world", "goodbye world"),
        edit("t3", "second line", "2nd line"),
        [use("AskUserQuestion", "q1", **QUESTION)],
        "Done.",
    ]
    path = tmp_path / "scene.json"
    path.write_text(json.dumps({"turns": turns, "person": person}))
    return Agent(model=ScriptedModel.from_file(path), cwd=tmp_path, permission_mode="default")


class Cell:
    """The cell's display handle: what it shows last."""

    def __init__(self) -> None:
        self.data: dict[str, object] = {}

    def update(self, data: dict[str, object], raw: bool = False) -> None:
        self.data = data


def results(agent: Agent) -> dict[str, str]:
    return {
        b["tool_use_id"]: json.dumps(b["content"])
        for m in agent.messages
        if m["role"] == "user" and isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    }


async def test_with_the_setting_the_scene_is_answered_through_the_buttons_and_the_cell_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv(AUTOANSWER_ENV, "1")
    agent = scene(tmp_path, {"t2": "deny: keep the greeting", "q1": "Right"})
    ui = choose_ui(agent, kernel=True, background=False, widgets=True, handle=Cell())
    agent.approver = ui.approver
    agent.on_event(ui.listener)
    assert ui.view is not None and ui.view.entries[0].text == NOTICE  # the first line of the cell

    result = await asyncio.wait_for(agent.arun("go"), 30)

    assert result.stop_reason == "end_turn"
    assert (tmp_path / "a.txt").read_text() == "hello world\n2nd line\n"  # t2 denied, t3 (not named) allowed
    told = results(agent)
    assert "keep the greeting" in told["t2"] and "Right" in told["q1"]
    outcomes = {tid: p.outcome_text for tid, p in ui.view.prompts.items()}
    assert outcomes == {"t2": "Denied: keep the greeting", "t3": "Allowed once", "q1": "Answered: Way: Right"}
    assert "answered automatically for the course build" in ui.view.record_bundle()["text/plain"]


async def test_without_the_setting_a_prompt_waits_for_the_person_and_nothing_says_automatic(tmp_path, monkeypatch):
    monkeypatch.delenv(AUTOANSWER_ENV, raising=False)
    agent = scene(tmp_path, {"t2": "allow"})
    ui = choose_ui(agent, kernel=True, background=False, widgets=True, handle=Cell())
    agent.approver = ui.approver
    agent.on_event(ui.listener)
    task = asyncio.create_task(agent.arun("go"))
    prompt = await next_prompt(ui.view, task)
    for _ in range(50):  # the loop turns many times: an automatic answer would have come by now
        await asyncio.sleep(0)
    assert prompt.pending and prompt.request.tool_use_id == "t2"
    assert (tmp_path / "a.txt").read_text() == "hello world\nsecond line\n"
    assert NOTICE not in [e.text for e in ui.view.entries]
    agent.interrupt()
    await asyncio.wait_for(task, 30)


@pytest.mark.parametrize("value", ["0", "", "no"])
def test_the_setting_is_off_unless_set_to_a_yes(monkeypatch, value):
    from ipy_agent.ui.course_answers import autoanswer_env

    monkeypatch.setenv(AUTOANSWER_ENV, value)
    assert not autoanswer_env()


def test_a_malformed_person_in_a_transcript_says_what_it_must_be(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"turns": ["hi"], "person": {"t1": True}}))
    with pytest.raises(ValueError, match='"person" must map tool_use ids to answers'):
        ScriptedModel.from_file(path)
