"""What a person meets in the agent's cell, without a front end: the record a finished run
leaves, the state line while it works, footers, and the inspection texts.

Runs go through a real Agent, a ScriptedModel and the view's approver; prompts are answered
through their buttons. The static record is read as the notebook file would hold it.
"""

from __future__ import annotations

import asyncio
import re
from types import SimpleNamespace
from typing import Any

from ipy_agent import Agent, ScriptedModel, Usage
from ipy_agent.models.base import ModelError
from ipy_agent.runtime.trace import RunEndEvent, TurnEvent
from ipy_agent.ui.inspection import history_text, inspect_text, trace_text
from ipy_agent.ui.text import TextRenderer, make_console
from tests.support.run_view import TIMEOUT, make, next_prompt, until_prompt
from tests.support.transcript import use


class Handle:
    """Stands in for IPython's DisplayHandle: keeps what the cell's display was updated to."""

    def __init__(self) -> None:
        self.shown: list[dict[str, Any]] = []

    def update(self, obj: dict[str, Any], raw: bool = False) -> None:
        assert raw
        self.shown.append(obj)


async def test_a_finished_run_leaves_a_static_readable_record(tmp_path):
    handle = Handle()
    _agent, view, _model, task, prompt = await until_prompt(tmp_path, handle=handle)
    prompt.allow()
    await asyncio.wait_for(task, TIMEOUT)
    view.close()  # what the magics do when the run ends

    record = handle.shown[-1]
    assert set(record) == {"text/html", "text/plain"}  # no widget view left for a reopened notebook
    text, page = record["text/plain"], record["text/html"]
    assert "All **done**." in text and "All <strong>done</strong>." in page
    assert re.search(r"✓ done: Read a\.txt", text) and re.search(r"✓ done: Edit a\.txt", text)
    assert "Allowed once" in text and "Allowed once" in page
    assert "-hello world" in text and "+goodbye world" in text  # the approved edit's diff
    assert "<details open" in page  # the diff shows without a click
    assert "Finished (3 turns)" in text and "no cost (offline model)" in text and "$" not in text
    assert "VBox" not in text and "widget" not in page


async def test_the_record_escapes_what_the_model_and_tools_wrote(tmp_path):
    handle = Handle()
    evil = 'Hello <img src=x onerror="alert(1)"> <script>x()</script>'
    agent, view, _ = make(tmp_path, [evil], handle=handle)
    await asyncio.wait_for(agent.arun("go"), TIMEOUT)
    view.close()
    page = handle.shown[-1]["text/html"]
    assert "<img" not in page and "<script" not in page and "&lt;img src=x" in page


async def test_a_denial_in_the_record_says_what_the_person_answered(tmp_path):
    handle = Handle()
    _agent, view, _model, task, prompt = await until_prompt(tmp_path, handle=handle)
    prompt.deny("keep the greeting")
    await asyncio.wait_for(task, TIMEOUT)
    view.close()
    text = handle.shown[-1]["text/plain"]
    assert "⊘ denied: Edit a.txt" in text and "Denied: keep the greeting" in text
    assert "+goodbye world" not in text  # nothing changed on disk, so no diff is shown as done


async def test_the_state_line_tells_thinking_from_waiting_for_you(tmp_path):
    slow = [
        [{"type": "text", "text": "Reading.", "_delay": 0.3}, use("Read", "t1", file_path="a.txt")],
        [use("Edit", "t2", file_path="a.txt", old_string="hello world", new_string="bye")],
        "Done.",
    ]
    agent, view, _ = make(tmp_path, slow)
    task = asyncio.create_task(agent.arun("go"))
    for _ in range(200):
        if "thinking" in view.state.value:
            break
        await asyncio.sleep(0.01)
    assert re.search(r"thinking… \d+ s", view.state.value)
    prompt = await next_prompt(view, task)
    assert "waiting for you" in view.state.value and "thinking" not in view.state.value
    prompt.allow()
    await asyncio.wait_for(task, TIMEOUT)
    assert "Finished" in view.state.value and "(3 turns)" in view.state.value


async def test_one_turn_is_one_turn_and_interrupted_is_said_once(tmp_path):
    agent, view, _ = make(tmp_path, ["Hi."])
    await asyncio.wait_for(agent.arun("go"), TIMEOUT)
    assert "(1 turn)" in view.state.value and "turns" not in view.state.value

    agent2, view2, _, task, _prompt = await until_prompt(tmp_path)
    agent2.interrupt()
    await asyncio.wait_for(task, TIMEOUT)
    shown = [w.value for w in view2.body.children if hasattr(w, "value")]
    assert not any("Interrupted" in v for v in shown)  # no notice line in the body...
    assert "Interrupted" in view2.state.value  # ...the state line says it


def test_terminal_footer_shows_cost_for_real_models_and_context_share():
    console = make_console()
    renderer = TextRenderer(console, model=SimpleNamespace(name="claude-sonnet-4-5"))
    with console.capture() as cap:
        renderer(TurnEvent(turn=1, phase="end", usage=Usage(input_tokens=50_000, output_tokens=10)))
        renderer(
            RunEndEvent(
                result=SimpleNamespace(
                    stop_reason="end_turn", turns=1, usage=Usage(input_tokens=50_000, output_tokens=10)
                )
            )
        )
    out = cap.get()
    assert "Finished (1 turn)" in out and "cost ≈ $0.15" in out and "context 25% of 200k" in out

    offline = TextRenderer(console, model=ScriptedModel([]))
    with console.capture() as cap:
        offline(RunEndEvent(result=SimpleNamespace(stop_reason="end_turn", turns=2, usage=Usage(input_tokens=10))))
    assert "Finished (2 turns)" in cap.get() and "no cost (offline model)" in cap.get() and "$" not in cap.get()


async def test_replaying_a_transcript_twice_keeps_ids_unique_and_history_agrees_with_inspect(tmp_path):
    (tmp_path / "a.txt").write_text("hello\n")
    turns = [[use("Read", "toolu_read_1", file_path="a.txt")], "Read it."]
    agent = Agent(model=ScriptedModel(turns), cwd=tmp_path)
    await agent.arun("first")
    (tmp_path / "a.txt").unlink()  # the second replay's Read fails
    agent.model = ScriptedModel(turns)
    await agent.arun("second")
    ids = [b["id"] for m in agent.messages if m["role"] == "assistant" for b in m["content"] if b["type"] == "tool_use"]
    assert len(ids) == 2 and len(set(ids)) == 2 and ids[0] == "toolu_read_1"
    second = ids[1]
    assert inspect_text(agent, second).splitlines()[1].startswith("Status: error")
    line = next(ln for ln in history_text(agent).splitlines() if ln.startswith(f"[7] result for {second}:"))
    assert "✗" in line  # the failed call shows as failed, not as the earlier success


async def test_inspect_shows_what_the_person_saw_for_a_denial(tmp_path):
    agent, _view, _model, task, prompt = await until_prompt(tmp_path)
    prompt.deny("keep the greeting")
    await asyncio.wait_for(task, TIMEOUT)
    saw = inspect_text(agent, "t2").split("The person saw:")[1].split("The model received")[0]
    assert "⊘ Edit a.txt" in saw and "Denied: keep the greeting" in saw
    assert "The person declined" not in saw  # that is the text written for the model


async def test_trace_lines_break_between_stages_not_inside_words(tmp_path):
    agent, _view, _model, task, prompt = await until_prompt(tmp_path)
    prompt.allow()
    await asyncio.wait_for(task, TIMEOUT)
    text = trace_text(agent, 2)
    stage_lines = [ln for ln in text.splitlines() if ln.startswith("    ") and " ms" in ln and "|" not in ln]
    assert len(stage_lines) >= 2  # the stages of the Edit do not fit one line
    assert all(len(ln) <= 100 for ln in stage_lines)
    assert all(re.search(r"\d ms$", ln) for ln in stage_lines)  # every line ends after a whole stage


class NoKey:
    name = "claude-sonnet-4-5"

    async def stream(self, request: Any):
        raise ModelError("No Anthropic API key found", kind="missing_key")
        yield  # pragma: no cover


async def test_a_run_the_model_never_answered_leaves_no_trace(tmp_path):
    agent = Agent(model=NoKey(), cwd=tmp_path)
    result = await agent.arun("what is here?")
    assert result.stop_reason == "error" and agent.messages == []
    agent.model = ScriptedModel(["Hello."])
    await agent.arun("hello")
    sent = agent.model.requests[0]["messages"]
    assert sent == [{"role": "user", "content": [{"type": "text", "text": "hello"}]}]


class FailsSecondRequest(ScriptedModel):
    async def stream(self, request: Any):
        if self.requests:
            raise ModelError("overloaded", kind="overloaded")
        async for event in super().stream(request):
            yield event


async def test_a_run_that_got_an_answer_keeps_it_when_a_later_turn_fails(tmp_path):
    (tmp_path / "a.txt").write_text("hello\n")
    agent = Agent(model=FailsSecondRequest([[use("Read", "t1", file_path="a.txt")]]), cwd=tmp_path)
    result = await agent.arun("go")
    assert result.stop_reason == "error"
    assert [m["role"] for m in agent.messages] == ["user", "assistant", "user"]  # the Read happened


async def test_the_record_lists_the_notebook_changes_with_their_outcome_and_the_cells_as_the_person_names_them(
    tmp_path,
):
    from ipy_agent.ui.widgets import RunView
    from tests.support.frontend import Panel, cell, connected_bridge

    panel = Panel(
        path="main.ipynb",
        cells=[cell("import pandas as pd", cell_id="c0"), cell("x = 1", cell_id="c1"), cell("y = x * 2", cell_id="c2")],
    )
    bridge = connected_bridge(panel, tmp_path)
    model = ScriptedModel(
        [
            [use("NotebookRead", "r1")],
            [use("NotebookEdit", "e1", notebook_path="main.ipynb", cell_id="c1", new_source="x = 41")],
            [use("NotebookEdit", "e2", notebook_path="main.ipynb", cell_id="c2", new_source="y = x ** 2")],
            "Changed x.",
        ]
    )
    agent = Agent(model=model, cwd=tmp_path, notebook=bridge, notebook_path="main.ipynb", permission_mode="default")
    handle = Handle()
    view = RunView(agent, handle=handle)
    agent.approver = view.approver
    agent.on_event(view.listener)
    task = asyncio.create_task(agent.arun("go"))
    first = await next_prompt(view, task)
    # The prompt and the row name the cell as the page shows it, not by its id.
    assert first.request.preview is not None
    assert first.request.preview.title == "Replace cell 2 · x = 1 in the open notebook main.ipynb"
    assert "replace cell 2 · x = 1 in main.ipynb" in view.rows["e1"].html
    first.allow()
    second = await next_prompt(view, task)
    second.deny("keep y linear")
    await asyncio.wait_for(task, TIMEOUT)
    view.close()

    assert panel.sources() == ["import pandas as pd", "x = 41", "y = x * 2"]
    told = next(
        b["content"]
        for m in agent.messages
        if m["role"] == "user" and isinstance(m["content"], list)
        for b in m["content"]
        if b.get("tool_use_id") == "e1"
    )
    assert str(told).startswith("Replaced the source of code cell 2 · x = 41 (id 'c1') in main.ipynb.")
    record = handle.shown[-1]
    text, page = record["text/plain"], record["text/html"]
    assert "Notebook changes:\n  ✓ accepted: replace cell 2 · x = 1 in main.ipynb\n" in text
    assert "  ✗ rejected: replace cell 3 · y = x * 2 in main.ipynb — keep y linear\n" in text
    assert "Edited main.ipynb (live): replaced cell 2 · x = 41" in text  # the row's result
    assert 'class="ipy-agent-reviewed"' in page and "✓ accepted</span> replace cell 2 · x = 1 in main.ipynb" in page
    assert "keep y linear" in page and "c1" not in text.split("Notebook changes:")[1]
    # %agent_inspect keeps the id the model used, beside what the person saw.
    shown = inspect_text(agent, "e1")
    assert '"cell_id": "c1"' in shown and "replace cell 2 · x = 1 in main.ipynb" in shown


async def test_the_record_of_the_prompt_after_a_rewind_says_what_was_rewound(tmp_path):
    from ipy_agent.ui.widgets import RunView

    (tmp_path / "a.txt").write_text("one\n")
    model = ScriptedModel(
        [
            [use("Read", "r1", file_path="a.txt")],
            [use("Edit", "e1", file_path="a.txt", old_string="one", new_string="two")],
            "Edited.",
            "Back at one.",
        ]
    )
    agent = Agent(model=model, cwd=tmp_path, permission_mode="acceptEdits")
    await asyncio.wait_for(agent.arun("make it two"), TIMEOUT)
    report = await agent.arewind()
    assert (tmp_path / "a.txt").read_text() == "one\n" and report.files_restored == ["a.txt"]
    handle = Handle()
    view = RunView(agent, handle=handle)
    agent.on_event(view.listener)
    await asyncio.wait_for(agent.arun("where are we?"), TIMEOUT)
    view.close()
    text, page = handle.shown[-1]["text/plain"], handle.shown[-1]["text/html"]
    headline = "↶ Rewound to before prompt 1 (make it two): 1 change undone"
    assert headline in text and headline in page and "The model is told so with this prompt." in text
