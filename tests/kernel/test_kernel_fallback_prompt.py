"""An approval prompt no page shows or can answer, in a real kernel (ui/fallback_prompt.py).

The fake page (tests/support/frontend.py) has the ipy_agent extension but, with
`shows_widgets=False`, no widget manager: it never shows the prompt's widget, as a page whose
server lacks jupyterlab_widgets. The kernel must notice within a few seconds, say so in the cell,
and ask the page to draw buttons; the page's answer (`fallback_answer`, the person's click) must
answer the same prompt. What is checked is what a person notices: the line in the cell, the
file, what the model was told, and that the buttons went away when the widget answered first.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.frontend import LOAD, MAGICS, LiveKernel, Panel, cell, connected_kernel
from tests.support.kernel import Kernel
from tests.support.transcript import use

pytestmark = pytest.mark.kernel

ORIGINAL = "hello world\n"
EDIT = [
    [use("Read", "r1", file_path="a.txt")],
    [use("Edit", "e1", file_path="a.txt", old_string="hello", new_string="goodbye")],
    "Changed the greeting.",
]
RUN = "%agent --script edit.json greet differently"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "a.txt").write_text(ORIGINAL)
    (tmp_path / "edit.json").write_text(json.dumps({"turns": EDIT}))
    return tmp_path


@pytest.fixture
def panel() -> Panel:
    return Panel(path="work.ipynb", cells=[cell(RUN, cell_id="run")], shows_widgets=False)


@pytest.fixture
def kernel(project: Path, panel: Panel) -> Iterator[LiveKernel]:
    with connected_kernel(project, panel) as k:
        yield k


def edit_result(k: Kernel) -> str:
    return k.check(
        f"_m = {MAGICS}.agent.messages\n"
        "print([b for m in _m if m['role'] == 'user' and isinstance(m['content'], list)"
        " for b in m['content'] if b.get('type') == 'tool_result' and b['tool_use_id'] == 'e1'])"
    )


def streamed(k: Kernel, msg_id: str) -> str:
    return "".join(
        m["content"]["text"]
        for m in k.messages
        if m["msg_type"] == "stream" and m["parent_header"].get("msg_id") == msg_id
    )


def cell_text(panel: Panel) -> str:
    return "".join(o.get("text", "") for o in panel.cells[0]["outputs"] if o["output_type"] == "stream")


def test_a_prompt_the_page_never_shows_is_answered_with_the_extensions_buttons(
    kernel: LiveKernel, panel: Panel, project: Path
):
    kernel.run_cell(panel, "run")  # the page's Allow (fallback_answer) ends the wait

    assert (project / "a.txt").read_text() == "goodbye world\n"
    [asked] = panel.asked
    assert asked["cell_id"] == "run" and asked["title"].startswith("Edit") and asked["rule"]
    assert "-hello world" in asked["detail"] and "+goodbye world" in asked["detail"]
    said = cell_text(panel)
    assert "the approval prompt for Edit" in said and "this page did not draw it" in said
    assert "Allow / Deny buttons the ipy_agent extension drew below this cell" in said
    assert said.count("ipy_agent:") == 1, said
    assert "Changed the greeting." in kernel.markdown()
    assert "is_error': True" not in edit_result(kernel)


def test_a_deny_with_a_reason_from_the_extensions_buttons_reaches_the_model(
    kernel: LiveKernel, panel: Panel, project: Path
):
    panel.fallback_answer = {"behavior": "deny", "message": "keep hello, it is the product name"}
    kernel.run_cell(panel, "run")

    assert (project / "a.txt").read_text() == ORIGINAL
    told = edit_result(kernel)
    assert "keep hello, it is the product name" in told and "is_error': True" in told


def test_the_widget_answering_first_wins_and_the_extensions_buttons_are_withdrawn(
    kernel: LiveKernel, panel: Panel, project: Path
):
    panel.fallback_answer = None  # the person does not click the extension's buttons
    run = kernel.execute(RUN)
    kernel.wait_for("the page to be asked for buttons", lambda: panel.asked)
    kernel.click(kernel.wait_for("the Allow button", lambda: kernel.find_button("Allow")))
    ex = kernel.wait(run)

    assert ex.status == "ok", ex.text
    assert (project / "a.txt").read_text() == "goodbye world\n"
    withdrawn = kernel.wait_for(
        "the buttons to be withdrawn", lambda: [r for r in panel.requests if r["op"] == "withdraw_prompt"]
    )
    assert withdrawn[0]["args"] == {"prompt_id": panel.asked[0]["prompt_id"], "outcome": "Allowed once"}


def test_a_page_that_shows_the_prompt_gets_no_fallback(project: Path):
    shown = Panel(path="work.ipynb", cells=[cell(RUN, cell_id="run")])
    with connected_kernel(project, shown) as k:
        run = k.execute(RUN)
        allow = k.wait_for("the Allow button", lambda: k.find_button("Allow"))
        k.wait_for("the page's acknowledgement", lambda: any(r["op"] == "prompt_shown" for r in shown.requests))
        k.pump(1.0)  # the acknowledgement has been handled
        k.click(allow)
        ex = k.wait(run)
    assert ex.status == "ok", ex.text
    assert shown.asked == [] and "not usable here" not in ex.text


def test_without_the_extension_a_prompt_whose_comms_the_page_closed_says_how_to_stop(project: Path):
    """A page without a widget manager and without the extension closes the widget comms itself."""
    with Kernel(project) as k:
        k.check(LOAD)
        run = k.execute(RUN)
        allow = k.wait_for("the Allow button", lambda: k.find_button("Allow"))
        for comm_id in [*k.siblings(allow), allow]:
            k.kc.shell_channel.send(k.kc.session.msg("comm_close", {"comm_id": comm_id, "data": {}}))
        k.wait_for("the line in the cell", lambda: "Interrupt the kernel" in streamed(k, run))
        k.interrupt()
        ex = k.wait(run)
    assert (project / "a.txt").read_text() == ORIGINAL
    assert "no page with the ipy_agent extension is connected" in ex.text
    assert "connection to the kernel was closed by the page" in ex.text


QUESTION = {
    "question": "Which file holds the sales?",
    "header": "File",
    "options": [{"label": "sales.csv", "description": "this year's"}, {"label": "old.csv"}],
}


def test_a_question_the_page_never_shows_is_answered_in_the_extensions_boxes(project: Path):
    (project / "ask.json").write_text(
        json.dumps({"turns": [[use("AskUserQuestion", "q1", questions=[QUESTION])], "Using it."]})
    )
    run = "%agent --script ask.json load the sales"
    page = Panel(path="work.ipynb", cells=[cell(run, cell_id="run")], shows_widgets=False)
    page.fallback_answer = {"behavior": "allow", "message": "", "answers": {QUESTION["question"]: "sales_2026.csv"}}
    with connected_kernel(project, page) as k:
        k.run_cell(page, "run")  # the person's answer in the extension's boxes ends the wait
        told = k.check(
            f"from tests.support.transcript import all_results, result_text\n"
            f"print(result_text(all_results({MAGICS}.agent.messages)['q1']))"
        )
    [asked] = page.asked
    assert asked["questions"] == [
        {
            "question": QUESTION["question"],
            "header": "File",
            "options": [{"label": "sales.csv", "description": "this year's"}, {"label": "old.csv", "description": ""}],
            "multi_select": False,
        }
    ]
    assert '"Which file holds the sales?" = "sales_2026.csv"' in told
    said = cell_text(page)
    assert "the question" in said and "Answer it in the boxes the ipy_agent extension drew below this cell" in said


def test_a_question_skipped_in_the_extensions_boxes_tells_the_model_to_choose(project: Path):
    (project / "ask.json").write_text(
        json.dumps({"turns": [[use("AskUserQuestion", "q1", questions=[QUESTION])], "I chose."]})
    )
    run = "%agent --script ask.json load the sales"
    page = Panel(path="work.ipynb", cells=[cell(run, cell_id="run")], shows_widgets=False)
    page.fallback_answer = {"behavior": "deny", "message": ""}
    with connected_kernel(project, page) as k:
        k.run_cell(page, "run")
        told = k.check(
            f"from tests.support.transcript import all_results, result_text\n"
            f"print(result_text(all_results({MAGICS}.agent.messages)['q1']))"
        )
    assert "chose not to answer these questions" in told
