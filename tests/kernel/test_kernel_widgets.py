"""The widgets in a real kernel, driven the way a notebook front end drives them.

Each test starts an ipykernel process in a temp dir (tests/support/kernel.py), runs
scripted agent transcripts, finds the approval buttons in the widget models the kernel opened,
and sends the comm messages a front end sends for a click or for typing a reason. What is
checked is what a person notices: the file on disk, what the model was told, what the cell shows,
and that the kernel still runs cells afterwards.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.kernel import Kernel

pytestmark = pytest.mark.kernel

ORIGINAL = "hello world\nsecond line\n"
READ_THEN_EDIT = [
    [{"type": "tool_use", "id": "r1", "name": "Read", "input": {"file_path": "a.txt"}}],
    [
        {
            "type": "tool_use",
            "id": "e1",
            "name": "Edit",
            "input": {"file_path": "a.txt", "old_string": "hello world", "new_string": "goodbye world"},
        }
    ],
    "Changed the greeting.",
]


def transcript(path: Path, turns: list[Any]) -> Path:
    path.write_text(json.dumps({"turns": turns}))
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "a.txt").write_text(ORIGINAL)
    transcript(tmp_path / "edit.json", READ_THEN_EDIT)
    return tmp_path


@pytest.fixture
def kernel(project: Path) -> Iterator[Kernel]:
    k = Kernel(project)
    try:
        yield k
    finally:
        k.shutdown()


def test_background_task_view_reaches_the_cell_after_it_finished(kernel: Kernel, project: Path):
    """RunView alone (no magics): the transcript arrives as widget updates once the cell is idle."""
    kernel.check(
        "import asyncio\n"
        "from ipy_agent import Agent, ScriptedModel\n"
        "from ipy_agent.ui.widgets import RunView\n"
        "agent = Agent(model=ScriptedModel.from_file('edit.json'), cwd='.')\n"
        "view = RunView(agent, background=True, on_stop=lambda: task.cancel())\n"
        "agent.approver = view.approver\n"
        "agent.on_event(view.listener)\n"
        "display(view.widget)\n"
        "task = asyncio.get_running_loop().create_task(agent.arun('greet differently'))\n"
    )
    allow = kernel.wait_for("the Allow button", lambda: kernel.find_button("Allow"))
    assert (project / "a.txt").read_text() == ORIGINAL  # nothing before the click
    kernel.click(allow)
    kernel.wait_for("the run to finish", lambda: kernel.shows("Finished"))

    assert (project / "a.txt").read_text() == "goodbye world\nsecond line\n"
    assert "Changed the greeting." in kernel.markdown()
    assert kernel.shows("Edited") and kernel.shows("+1 -1")
    assert kernel.models[allow]["disabled"] is True
    assert kernel.check("print(task.result().stop_reason)").strip() == "end_turn"


SLEEP = [
    [{"type": "tool_use", "id": "s1", "name": "Bash", "input": {"command": "sleep 30", "description": "Wait a while"}}],
    "Waited.",
]
AGENT = "from ipy_agent.magics import current_session\nm = current_session()\n"


@pytest.fixture
def loaded(kernel: Kernel, project: Path) -> Kernel:
    transcript(project / "sleep.json", SLEEP)
    kernel.check("%load_ext ipy_agent")
    return kernel


def stop_reason(k: Kernel) -> str:
    return k.check(AGENT + "print(m.last_result.stop_reason)").strip()


def history_problems_in(k: Kernel) -> str:
    return k.check(
        AGENT + "from ipy_agent.history.messages import history_problems\nprint(history_problems(m.agent.messages))"
    ).strip()


def tool_running(k: Kernel, name: str) -> bool:
    # A row's status and title are separate HTML widgets; a front end shows them side by side.
    return k.shows("running") and k.shows(f"<b>{name}</b>")


def test_allow_click_in_the_cell_applies_the_edit(loaded: Kernel, project: Path):
    cell = loaded.execute("%agent --script edit.json greet differently")
    allow = loaded.wait_for("the Allow button", lambda: loaded.find_button("Allow"))
    assert (project / "a.txt").read_text() == ORIGINAL  # the cell waits for the person
    # the diff in the prompt (its widget may reach the front end just after the buttons)
    loaded.wait_for("the diff in the prompt", lambda: loaded.shows("-hello world") and loaded.shows("+goodbye world"))

    loaded.click(allow)
    ex = loaded.wait(cell)

    assert ex.status == "ok", ex.text
    assert any("application/vnd.jupyter.widget-view+json" in o["content"].get("data", {}) for o in ex.outputs)
    assert (project / "a.txt").read_text() == "goodbye world\nsecond line\n"
    assert "Changed the greeting." in loaded.markdown()
    assert loaded.models[allow]["disabled"] is True
    assert stop_reason(loaded) == "end_turn"


def test_a_click_works_after_another_page_of_the_kernel_closed_the_prompts_comms(loaded: Kernel, project: Path):
    """Notebook 7, "New > Notebook" from the file browser: that tab stays connected to the
    kernel and closes every comm the kernel opens. The notebook's own tab must still answer."""
    cell = loaded.execute("%agent --script edit.json greet differently")
    allow = loaded.wait_for("the Allow button", lambda: loaded.find_button("Allow"))
    for comm_id in [*loaded.siblings(allow), allow]:
        loaded.close_from_another_page(comm_id)

    loaded.click(allow)
    ex = loaded.wait(cell)

    assert ex.status == "ok", ex.text
    assert (project / "a.txt").read_text() == "goodbye world\nsecond line\n"
    assert "Changed the greeting." in loaded.markdown()


def test_deny_with_a_reason_tells_the_model_and_leaves_the_file(loaded: Kernel, project: Path):
    cell = loaded.execute("%agent --script edit.json greet differently")
    allow = loaded.wait_for("the Allow button", lambda: loaded.find_button("Allow"))
    prompt = loaded.siblings(allow)
    deny = next(c for c in prompt if loaded.models[c].get("description") == "Deny")
    reason = next(c for c in prompt if loaded.models[c].get("_model_name") == "TextModel")
    words = "keep hello, it is the product name"
    loaded.set_value(reason, words)
    # The kernel echoes a front end's update back; once it has, the click reads the new value.
    loaded.wait_for("the reason to reach the kernel", lambda: loaded.models[reason].get("value") == words)
    loaded.click(deny)
    ex = loaded.wait(cell)

    assert ex.status == "ok", ex.text
    assert (project / "a.txt").read_text() == ORIGINAL
    told = loaded.check(
        AGENT + "last = m.agent.model.requests[-1]['messages'][-1]['content']\n"
        "print([b for b in last if b.get('type') == 'tool_result'])"
    )
    assert words in told and "'is_error': True" in told
    assert loaded.shows("denied") and loaded.shows(f"Denied: {words}")


def test_kernel_interrupt_during_a_long_tool_ends_the_run_cleanly(loaded: Kernel):
    cell = loaded.execute("%agent --allow Bash(sleep:*) --script sleep.json wait for it")
    loaded.wait_for("the Bash call to run", lambda: tool_running(loaded, "Bash"))
    loaded.interrupt()
    loaded.wait(cell)  # bounded by the harness timeout, far below the 30 s sleep plus startup

    assert stop_reason(loaded) == "interrupted"
    assert history_problems_in(loaded) == "[]"
    assert loaded.shows("cancelled") and loaded.shows("Interrupted")
    assert loaded.check("print(6 * 7)").strip() == "42"  # the kernel still runs cells


def test_an_interrupted_run_shows_one_line_not_the_runners_internals(loaded: Kernel):
    cell = loaded.execute("%agent --allow Bash(sleep:*) --script sleep.json wait for it")
    loaded.wait_for("the Bash call to run", lambda: tool_running(loaded, "Bash"))
    loaded.interrupt()
    ex = loaded.wait(cell)

    errors = [m["content"] for m in ex.outputs if m["msg_type"] == "error"]
    assert ex.status == "error" and len(errors) == 1, ex.text  # Run All stops at this cell
    shown = "\n".join(errors[0]["traceback"])
    assert "interrupted" in shown and "%agent" in shown
    assert "__import__" not in shown and "run_agent_cell" not in shown
    assert len([ln for ln in shown.splitlines() if ln.strip()]) == 1


def test_background_run_returns_at_once_and_agent_stop_cancels_it(loaded: Kernel):
    ex = loaded.run("%agent --background --allow Bash(sleep:*) --script sleep.json wait for it")
    assert ex.status == "ok", ex.text  # the cell is finished while the agent works
    loaded.wait_for("the Bash call to run", lambda: tool_running(loaded, "Bash"))
    assert loaded.check(AGENT + "print(m.agent.running)").strip() == "True"
    assert loaded.find_button("Stop") is not None

    loaded.check("%agent_stop")
    loaded.wait_for("the run to end as interrupted", lambda: loaded.shows("Interrupted"))

    assert stop_reason(loaded) == "interrupted"
    assert history_problems_in(loaded) == "[]"
    assert loaded.check("print(6 * 7)").strip() == "42"


def test_background_stop_button_click_cancels_the_run(loaded: Kernel):
    loaded.check("%agent --background --allow Bash(sleep:*) --script sleep.json wait for it")
    loaded.wait_for("the Bash call to run", lambda: tool_running(loaded, "Bash"))
    loaded.click(loaded.wait_for("the Stop button", lambda: loaded.find_button("Stop")))
    loaded.wait_for("the run to end as interrupted", lambda: loaded.shows("Interrupted"))

    assert stop_reason(loaded) == "interrupted"
    assert history_problems_in(loaded) == "[]"
