"""Staged cell edits reviewed in the cell, in real JupyterLab and Notebook 7 pages in Chromium.

A person runs `%agent --script ...` (a ScriptedModel transcript: offline, deterministic). The
agent reads the notebook and proposes edits; each proposal appears in the cell it changes (a
new cell as a placeholder at its place), with Accept and Reject, and the person answers there
with the mouse and the keyboard, or in the `%agent` cell's prompt. What is checked is the
notebook MODEL as the page holds it (nothing changes before Accept), what the proposal and the
prompt show, and what the model was told. Without a browser these tests skip locally and fail in
CI (CI=true).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.browser import SCREENSHOTS, TIMEOUT, JupyterServer, NotebookPage
from tests.support.review_page import shown_outcome, watch_outcomes
from tests.support.transcript import use
from tests.support.waits import timed_out, waiting_for

pytestmark = pytest.mark.browser

AGENT = 1  # the %agent cell; the notebook's cells after it are c1 `x = 1`, c2 `print(x + 1)`, c3 `y = 2`


def start(server: JupyterServer, browser: Any, opened: list[NotebookPage], name: str, edits: list[Any]) -> NotebookPage:
    script = name.replace(".ipynb", ".json")
    turns = [[use("NotebookRead", "r1")], edits, "Done reviewing."]
    (server.root / script).write_text(json.dumps({"turns": turns}))
    server.notebook_file(
        name,
        ["%load_ext ipy_agent", f"%agent --script {script} go", "x = 1", "print(x + 1)", "y = 2"],
        ids=["load", "agent", "c1", "c2", "c3"],
    )
    page = server.open(browser, name)
    opened.append(page)
    watch_outcomes(page.page)
    page.run(0)
    page.wait_done(0)
    page.run(AGENT)
    return page


def replace(name: str, tid: str, cell_id: str, source: str) -> dict[str, Any]:
    return use("NotebookEdit", tid, notebook_path=name, cell_id=cell_id, new_source=source)


def proposal(page: NotebookPage, index: int) -> Any:
    """The open proposal drawn in cell `index`'s own element, once it is there."""
    box = page.cell(index).locator(".ipy-agent-proposal:not([data-outcome])").first
    with waiting_for(f"Chromium to show a proposal in cell {index}"):
        try:
            box.wait_for(state="visible", timeout=TIMEOUT * 1000)
        except Exception:
            raise timed_out(
                f"Chromium did not show a proposal in cell {index}", TIMEOUT, f"console: {page.console[-10:]}"
            ) from None
    return by_id(page, box)


def by_id(page: NotebookPage, box: Any) -> Any:
    """The proposal `box` found, by its id: it stays the same element once it has an outcome."""
    return page.page.locator(f".ipy-agent-proposal[data-proposal-id='{box.get_attribute('data-proposal-id')}']")


def outcome(page: NotebookPage, box: Any, needle: str) -> str:
    """Until the proposal has shown its outcome containing `needle` (it shows it a moment, then its
    banner leaves the cell); returns the outcome line."""
    return shown_outcome(page.page, needle)


def sources(page: NotebookPage) -> list[str]:
    return [c["source"] for c in page.cells()[2:]]


def told(page: NotebookPage, tool_use_id: str) -> str:
    """The tool_result the model received for `tool_use_id`, read in the kernel by a new cell."""
    i = page.run_and_wait(
        "from ipy_agent.magics import current_session as _cs\n"
        "print([b for m in _cs().agent.messages if m['role'] == 'user' and isinstance(m['content'], list)"
        f" for b in m['content'] if b.get('tool_use_id') == {tool_use_id!r}])"
    )
    return page.text(i)


def test_accept_in_the_cell_applies_the_edit(front, browser, opened):
    name = f"accept_{front.kind}.ipynb"
    page = start(front, browser, opened, name, [replace(name, "e1", "c1", "x = 41")])
    box = proposal(page, 2)
    assert "- x = 1" in box.inner_text() and "+ x = 41" in box.inner_text()
    assert page.in_viewport(box)  # the notebook scrolled to it
    assert sources(page) == ["x = 1", "print(x + 1)", "y = 2"]  # nothing changes before Accept
    if front.kind == "lab":
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.cell(2).screenshot(path=str(SCREENSHOTS / "review-in-cell.png"))

    box.get_by_role("button", name="Accept", exact=True).click()

    outcome(page, box, "Accepted")
    page.wait_done(AGENT)
    page.wait_text(AGENT, "Done reviewing.")
    assert sources(page) == ["x = 41", "print(x + 1)", "y = 2"]
    page.wait_text(AGENT, "Accepted in the cell")  # the prompt shows the same decision


def test_reject_in_the_cell_with_a_typed_reason(front, browser, opened):
    name = f"reject_{front.kind}.ipynb"
    page = start(front, browser, opened, name, [replace(name, "e1", "c2", "print(x * 100)")])
    box = proposal(page, 3)
    reason = box.get_by_role("textbox", name="Reason for rejecting")
    reason.click()
    reason.press_sequentially("keep the plus, it is the lesson", delay=60)
    assert reason.input_value() == "keep the plus, it is the lesson"  # every key reached the box

    box.get_by_role("button", name="Reject", exact=True).click()

    outcome(page, box, "Rejected: keep the plus, it is the lesson")
    page.wait_done(AGENT)
    page.wait_text(AGENT, "Rejected in the cell: keep the plus, it is the lesson")
    assert sources(page) == ["x = 1", "print(x + 1)", "y = 2"]  # the model of the notebook: unchanged
    result = told(page, "e1")
    assert "Their reason: keep the plus, it is the lesson" in result and "'is_error': True" in result


def test_an_insert_allowed_in_the_prompt_resolves_the_proposal(front, browser, opened):
    name = f"insert_{front.kind}.ipynb"
    edit = use(
        "NotebookEdit", "e1", notebook_path=name, cell_id="c1", edit_mode="insert", cell_type="code", new_source="z = 3"
    )
    page = start(front, browser, opened, name, [edit])
    placeholder = page.page.locator(".ipy-agent-proposal.ipy-agent-proposed-cell:not([data-outcome])").first
    placeholder.wait_for(state="visible", timeout=TIMEOUT * 1000)
    placeholder = by_id(page, placeholder)
    assert "+ z = 3" in placeholder.inner_text()
    assert len(page.cells()) == 5  # the proposed cell is not in the model
    # It sits at the bottom of c1, where the new cell will go.
    assert page.cell(2).evaluate("(el, p) => el.lastElementChild === p", placeholder.element_handle())

    page.button(AGENT, "Accept").click()

    outcome(page, placeholder, "Accepted")
    page.wait_done(AGENT)
    assert sources(page) == ["x = 1", "z = 3", "print(x + 1)", "y = 2"]


def test_accept_all_applies_three_proposals(front, browser, opened):
    name = f"all_{front.kind}.ipynb"
    edits = [
        replace(name, "e1", "c1", "x = 10"),
        replace(name, "e2", "c2", "print(x + 10)"),
        replace(name, "e3", "c3", "y = 20"),
    ]
    page = start(front, browser, opened, name, edits)
    box = proposal(page, 2)

    box.get_by_role("button", name="Accept all", exact=True).click()

    page.wait_done(AGENT)
    page.wait_text(AGENT, "Done reviewing.")
    assert sources(page) == ["x = 10", "print(x + 10)", "y = 20"]
    outcome(page, box, "Accepted")
    page.page.locator(".ipy-agent-proposal").first.wait_for(state="detached", timeout=TIMEOUT * 1000)
    assert page.page.locator(".ipy-agent-proposal").count() == 0  # the answered banners left their cells


def test_typing_in_a_cell_under_review_makes_the_proposal_stale(front, browser, opened):
    name = f"stale_{front.kind}.ipynb"
    page = start(front, browser, opened, name, [replace(name, "e1", "c1", "x = 41")])
    box = proposal(page, 2)

    page.type_into(2, "  # mine")

    outcome(page, box, "Stale")
    page.wait_done(AGENT)
    page.wait_text(AGENT, "changed under review")
    assert sources(page) == ["x = 1  # mine", "print(x + 1)", "y = 2"]
    result = told(page, "e1")
    assert "changed under review" in result and "NotebookRead" in result
