"""The notebook widgets without a kernel: rows, statuses, the approval prompt and its answers.

The widgets are plain ipywidgets objects here (no front end), so the tests read their trait
values: what a person would see in the cell. Conversations run through a real Agent with a
ScriptedModel and the view's approver; a prompt is answered with its programmatic API, which
goes through the very buttons a click would.
"""

from __future__ import annotations

import asyncio
import threading
from types import SimpleNamespace

import ipywidgets as W

from ipy_agent import PermissionPreview, PermissionRequest, Usage
from ipy_agent.history.messages import history_problems
from ipy_agent.runtime.trace import TurnEvent
from ipy_agent.ui.approval_widget import ApprovalPrompt
from ipy_agent.ui.widgets import RunView
from tests.support.run_view import TIMEOUT, edit, make, until_prompt
from tests.support.transcript import use


def texts(widget: W.Widget) -> list[str]:
    """Every piece of text the widget tree shows: HTML values, descriptions, Output contents."""
    out: list[str] = []
    if isinstance(widget, W.Output):
        out += [str(v) for o in widget.outputs for v in o.get("data", {}).values()]
    for attr in ("value", "description", "placeholder"):
        v = getattr(widget, attr, None)
        if isinstance(v, str) and v:
            out.append(v)
    for child in getattr(widget, "children", ()):
        out += texts(child)
    return out


def shown_markdown(view: RunView) -> str:
    return "".join(w.value for w in view.body.children if isinstance(w, W.HTML) and "ipy-agent-text" in w.value)


def buttons_disabled(prompt: ApprovalPrompt) -> bool:
    return all(b.disabled for b in (prompt.allow_button, prompt.always_button, prompt.deny_button, prompt.reason))


async def test_allow_runs_the_edit_and_rows_show_what_happened(tmp_path):
    _agent, view, _, task, prompt = await until_prompt(tmp_path)

    assert prompt.request.tool_use_id == "t2"
    assert view.rows["t1"].status == "done"  # a read inside cwd needs no prompt
    assert view.rows["t2"].status == "waiting"
    assert "waiting for you" in view.rows["t2"].html
    assert "Details" not in view.rows["t2"].html  # the open prompt shows the diff once
    shown = "".join(texts(prompt.widget))
    assert "-hello world" in shown and "+goodbye world" in shown and "+1" in shown and "-1" in shown
    assert [prompt.allow_button.description, prompt.deny_button.description] == ["Allow", "Deny"]
    assert prompt.always_button.description == f"Always allow {prompt.request.suggested_rule}"

    prompt.allow()
    result = await asyncio.wait_for(task, TIMEOUT)

    assert result.stop_reason == "end_turn"
    assert (tmp_path / "a.txt").read_text() == "goodbye world\nsecond line\n"
    assert view.rows["t2"].status == "done"
    row = view.rows["t2"]
    assert "Edited" in row.line.value and "+1 -1" in row.line.value
    assert row.record is not None and f">{row.duration_text(row.record)}</span>" in row.line.value
    assert row.detail_html is not None  # below the answered prompt: the expandable diff
    assert "<details>" in row.detail_html.value and "goodbye world" in row.detail_html.value
    assert buttons_disabled(prompt) and "Allowed once" in prompt.outcome.value
    # Answered, the prompt shrinks to its outcome line; the diff stays under Details.
    assert prompt.widget.children == (prompt.outcome,)
    assert shown_markdown(view).endswith("<p>All <strong>done</strong>.</p>\n</div>")
    assert "Finished" in view.state.value


async def test_rows_never_show_the_raw_tool_result(tmp_path):
    agent, view, _ = make(tmp_path, [[use("Read", "t1", file_path="a.txt")], "ok"])
    await asyncio.wait_for(agent.arun("read it"), TIMEOUT)
    raw = agent.trace[0].result["content"]
    raw_text = raw if isinstance(raw, str) else "".join(b.get("text", "") for b in raw)
    assert "hello world" in raw_text  # the model got the file ...
    assert not any(raw_text.strip() in t for t in texts(view.widget))  # ... the person a summary
    assert "a.txt" in view.rows["t1"].html


async def test_deny_with_reason_reaches_the_model_and_changes_nothing(tmp_path):
    _agent, view, model, task, prompt = await until_prompt(tmp_path)
    prompt.deny("keep the greeting, change the second line")
    await asyncio.wait_for(task, TIMEOUT)

    assert (tmp_path / "a.txt").read_text() == "hello world\nsecond line\n"
    result_block = next(b for b in model.requests[2]["messages"][-1]["content"] if b.get("type") == "tool_result")
    assert result_block["tool_use_id"] == "t2" and result_block["is_error"]
    assert "keep the greeting, change the second line" in str(result_block["content"])
    assert view.rows["t2"].status == "denied"
    assert "denied" in view.rows["t2"].html
    assert buttons_disabled(prompt) and "Denied: keep the greeting" in prompt.outcome.value
    # The row does not echo the text written for the model; the outcome line says it.
    assert "declined" not in view.rows["t2"].html


async def test_always_adds_the_rule_and_the_next_edit_does_not_ask(tmp_path):
    turns = [[use("Read", "t1", file_path="a.txt")], edit("t2", "hello", "goodbye"), edit("t3", "second", "2nd"), "ok"]
    agent, view, _, task, prompt = await until_prompt(tmp_path, turns)
    prompt.always()
    await asyncio.wait_for(task, TIMEOUT)

    assert (tmp_path / "a.txt").read_text() == "goodbye world\n2nd line\n"
    assert list(view.prompts) == ["t2"]
    assert prompt.rule in [r.text for r in agent.rules.allow]
    assert view.rows["t3"].status == "done"
    assert prompt.rule in prompt.outcome.value


async def test_a_click_from_another_thread_resolves_on_the_loop(tmp_path):
    _agent, _view, _, task, prompt = await until_prompt(tmp_path)
    clicker = threading.Thread(target=prompt.allow, name="subshell-like")
    clicker.start()
    clicker.join()
    await asyncio.wait_for(task, TIMEOUT)
    assert (tmp_path / "a.txt").read_text().startswith("goodbye world")


async def test_first_answer_wins_over_a_double_click(tmp_path):
    _agent, _view, _, task, prompt = await until_prompt(tmp_path)
    prompt.allow()
    prompt.deny("too late")
    await asyncio.wait_for(task, TIMEOUT)
    assert prompt.answer is not None and prompt.answer.behavior == "allow"
    assert (tmp_path / "a.txt").read_text().startswith("goodbye world")


async def test_interrupt_while_waiting_marks_the_row_cancelled(tmp_path):
    agent, view, _, task, prompt = await until_prompt(tmp_path)
    agent.interrupt()
    result = await asyncio.wait_for(task, TIMEOUT)

    assert result.stop_reason == "interrupted"
    assert view.rows["t2"].status == "cancelled"
    assert buttons_disabled(prompt) and not prompt.pending
    assert history_problems(agent.messages) == []
    assert (tmp_path / "a.txt").read_text() == "hello world\nsecond line\n"
    assert "Interrupted" in view.state.value


async def test_bash_prompt_shows_command_description_and_destructive_warning():
    loop = asyncio.get_running_loop()
    request = PermissionRequest(
        tool_name="Bash",
        input={"command": "rm -rf build"},
        summary="rm -rf build",
        suggested_rule="Bash(rm:*)",
        tool_use_id="b1",
        destructive=True,
        display_name="Bash",
        preview=PermissionPreview(command="rm -rf build", description="Remove the build directory"),
    )
    prompt = ApprovalPrompt(request, loop, loop.create_future())
    shown = "".join(texts(prompt.widget))
    assert "rm -rf build" in shown and "Remove the build directory" in shown
    assert "may destroy data" in shown
    assert prompt.always_button.description == "Always allow Bash(rm:*)"

    safe = PermissionRequest(
        tool_name="Bash",
        input={"command": "ls"},
        summary="ls",
        suggested_rule="Bash(ls:*)",
        tool_use_id="b2",
        preview=PermissionPreview(command="ls"),
    )
    assert "may destroy data" not in "".join(texts(ApprovalPrompt(safe, loop, loop.create_future()).widget))


async def test_notebook_edit_prompt_says_outputs_will_be_cleared():
    loop = asyncio.get_running_loop()
    diff = "--- nb.ipynb\n+++ nb.ipynb\n@@ -1,2 +1,3 @@\n-x = 1\n+x = 2\n+y = 3\n print(x)\n"
    request = PermissionRequest(
        tool_name="NotebookEdit",
        input={},
        summary="nb.ipynb cell 3",
        suggested_rule="Edit(nb.ipynb)",
        tool_use_id="n1",
        preview=PermissionPreview(
            title="Replace cell 3", diff=diff, added=2, removed=1, notes=("outputs will be cleared",)
        ),
    )
    shown = "".join(texts(ApprovalPrompt(request, loop, loop.create_future()).widget))
    assert "outputs will be cleared" in shown and "Replace cell 3" in shown
    assert "+2</span>" in shown and "-1</span>" in shown and "+y = 3" in shown


async def test_a_prompt_action_is_a_button_that_denies_with_its_label():
    from ipy_agent.contract.tool import PromptAction

    async def apply() -> None:
        pass

    loop = asyncio.get_running_loop()
    action = PromptAction(label="Never run this cell", message="marked never-run", apply=apply)
    request = PermissionRequest(
        tool_name="NotebookRun",
        input={"cell_id": "c1"},
        summary="cell c1",
        suggested_rule="NotebookRun",
        tool_use_id="r1",
        preview=PermissionPreview(title="Run cell c1", command="train()", actions=(action,)),
    )
    future = loop.create_future()
    prompt = ApprovalPrompt(request, loop, future)
    [button] = prompt.action_buttons
    assert button.description == "Never run this cell" and button in prompt.widget.children[1].children
    button.click()
    answer = await asyncio.wait_for(future, TIMEOUT)
    assert (answer.behavior, answer.action) == ("deny", "Never run this cell")
    assert prompt.outcome_text == "Denied: Never run this cell" and button.disabled


def test_footer_shows_tokens_cost_estimate_and_context_share():
    agent = SimpleNamespace(model=SimpleNamespace(name="claude-sonnet-4-5"), context_window=200_000)
    view = RunView(agent)
    view.listener(
        TurnEvent(turn=1, phase="end", usage=Usage(input_tokens=1000, output_tokens=500, cache_read_input_tokens=49000))
    )
    footer = view.footer.value
    assert "tokens in 1,000" in footer and "out 500" in footer and "cached 49,000" in footer
    assert "$0.0252" in footer and "estimate" in footer
    assert "context 25% of 200k" in footer

    view.listener(TurnEvent(turn=2, phase="end", usage=Usage(input_tokens=900)))
    assert "context &lt;1% of 200k" in view.footer.value  # not "0%" after 900 tokens


async def test_text_streams_into_markdown_segments_split_by_tool_rows(tmp_path):
    long = "First paragraph. " * 20
    turns = [[{"type": "text", "text": long}, use("Read", "t1", file_path="a.txt")], "Second *part*."]
    agent, view, _ = make(tmp_path, turns)
    await asyncio.wait_for(agent.arun("go"), TIMEOUT)
    kinds = [type(w).__name__ for w in view.body.children]
    assert kinds[:3] == ["HTML", "HTML", "HTML"]  # text, the Read row (one line), text
    first, row, second = view.body.children[:3]
    assert row is view.rows["t1"].line and "<b>Read</b>" in row.value
    assert first.value == f'<div class="ipy-agent-text"><p>{long.strip()}</p>\n</div>'
    assert second.value == '<div class="ipy-agent-text"><p>Second <em>part</em>.</p>\n</div>'


async def test_the_models_text_cannot_inject_html_or_script(tmp_path):
    evil = 'Hello <img src=x onerror="document.title=1"> [click](javascript:alert(1)) <script>x()</script> `<b>`'
    agent, view, _ = make(tmp_path, [evil])
    await asyncio.wait_for(agent.arun("go"), TIMEOUT)
    shown = shown_markdown(view)
    assert "<img" not in shown and "<script" not in shown and "javascript:" not in shown.split("href=")[-1][:20]
    assert "&lt;img src=x onerror=" in shown and "<code>&lt;b&gt;</code>" in shown


async def test_background_view_writes_no_stdout_and_stop_calls_on_stop(tmp_path, capsys):
    stopped: list[bool] = []
    agent, view, _ = make(tmp_path, ["Working on it."], background=True, on_stop=lambda: stopped.append(True))
    await asyncio.wait_for(agent.arun("go"), TIMEOUT)
    assert capsys.readouterr().out == ""
    assert "<p>Working on it.</p>" in shown_markdown(view)

    view2 = RunView(agent, background=True, on_stop=lambda: stopped.append(True))
    assert view2.stop_button is not None
    view2.stop_button.click()
    await asyncio.sleep(0.05)
    assert stopped == [True] and view2.stop_button.disabled
    view2.finish(SimpleNamespace(stop_reason="interrupted", turns=1))
    assert view2.stop_button.layout.display == "none"  # nothing left to stop


async def test_close_denies_an_open_prompt_so_the_run_does_not_hang(tmp_path):
    _agent, view, model, task, prompt = await until_prompt(tmp_path)
    assert view.stop_button is None  # foreground: the kernel's own stop button interrupts
    view.close()
    result = await asyncio.wait_for(task, TIMEOUT)

    assert result.stop_reason == "end_turn"
    assert (tmp_path / "a.txt").read_text() == "hello world\nsecond line\n"
    assert buttons_disabled(prompt) and "Closed before an answer" in prompt.outcome.value
    assert "closed before the person answered" in str(model.requests[2]["messages"][-1]["content"])
