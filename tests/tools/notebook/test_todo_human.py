"""TodoHuman outside a kernel (the real kernel's wait and go-on: tests/notebook/test_learning_style.py):
the cell it inserts, the Notification it fires, and the cell it leaves for the person."""

from __future__ import annotations

from pathlib import Path

from ipy_agent import Agent, ScriptedModel
from ipy_agent.notebook.runlog import PERSON_TO_RUN
from tests.support.frontend import Panel, cell, connected_bridge
from tests.support.transcript import all_results, result_text, use


def test_the_todo_cell_fires_the_notification_hooks_and_is_left_for_the_person(tmp_path: Path):
    panel = Panel(path="lesson.ipynb", cells=[cell("xs = [1, 2]", cell_id="c1")])
    bridge = connected_bridge(panel, tmp_path, shell=object())
    todo = use("TodoHuman", "t1", brief="Compute the mean of xs.", scaffold="mean = ...  # TODO(human)")
    agent = Agent(
        ScriptedModel([[todo], "Your turn."]),
        cwd=tmp_path,
        notebook=bridge,
        output_style="Learning",
        allow=["TodoHuman"],
    )
    told: list[tuple[str | None, str | None]] = []
    agent.hooks.add("Notification", lambda e: told.append((e.notification_type, e.message)), matcher="idle_prompt")
    agent.run("teach me")
    (inserted,) = [c for c in panel.cells if c["source"].startswith("# TODO(human)")]
    assert told == [
        ("idle_prompt", "ipy_agent left a TODO(human) cell for you to write and run: Compute the mean of xs.")
    ]
    assert agent.session[PERSON_TO_RUN] == inserted["id"]  # what the person's run of it goes on from
    assert "end your turn now" in result_text(all_results(agent.messages)["t1"])
