"""An approval prompt the page cannot draw, answered with the buttons the ipy_agent extension draws.

The page is served by a server whose widgets extension (@jupyter-widgets/jupyterlab-manager) is
disabled, as where jupyterlab_widgets is missing from the server's environment: the kernel's
widget comms are closed by the page, the prompt never appears, and before ui/fallback_prompt.py
the cell waited `[*]` with nothing to click. Now the cell says what happened within a few
seconds and the extension draws Allow / Deny under the cell; a real click answers the prompt.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.browser import SCREENSHOTS, JupyterServer, NotebookPage
from tests.support.transcript import use

from .conftest import _need_browser

pytestmark = pytest.mark.browser

REASON = "a quote: keep it as typed"
EDIT = [
    [use("Read", "r1", file_path="notes.txt")],
    [use("Edit", "e1", file_path="notes.txt", old_string="teh", new_string="the")],
    {"when": {"allowed": ['Done: notes.txt now says "the".'], "denied": ['notes.txt still says "teh".']}},
]


@pytest.fixture(scope="module", params=["lab", "notebook"])
def no_widgets_server(request: Any, tmp_path_factory: Any) -> Iterator[JupyterServer]:
    _need_browser(extension=True)
    server = JupyterServer(request.param, tmp_path_factory.mktemp(f"nowidgets_{request.param}"))
    labconfig = server.home / "config" / "labconfig"
    labconfig.mkdir(parents=True)
    (labconfig / "page_config.json").write_text(
        json.dumps({"disabledExtensions": {"@jupyter-widgets/jupyterlab-manager": True}})
    )
    server.start()
    try:
        yield server
    finally:
        server.stop()


def fallback(nb: NotebookPage, index: int, label: str) -> Any:
    """The extension's enabled button `label` under cell `index`, once it is visible."""
    loc = nb.cell(index).locator(f".ipy-agent-fallback button:not([disabled]):has-text('{label}')").first
    loc.wait_for(state="visible", timeout=90_000)
    return loc


def start(server: JupyterServer, browser: Any, name: str, turns: list[Any], request: str) -> tuple[NotebookPage, int]:
    """A notebook `name`_<kind>.ipynb with the extension loaded and a scripted `%agent` cell
    (its script `name`.json) running: the page and the cell's index."""
    script = {"provenance": {"kind": "hand-written", "note": name}, "turns": turns}
    (server.root / f"{name}.json").write_text(json.dumps(script))
    nb = server.open(browser, f"{name}_{server.kind}.ipynb")
    nb.run_and_wait("%load_ext ipy_agent")
    i = nb.add_cell(f"%agent --script {name}.json {request}")
    nb.run(i)
    return nb, i


def test_a_prompt_the_page_cannot_draw_is_answered_with_the_extensions_buttons(
    no_widgets_server: JupyterServer, browser: Any
):
    server = no_widgets_server
    root: Path = server.root
    (root / "notes.txt").write_text("teh quick fox\n")
    nb, i = start(server, browser, "fallback", EDIT, "fix the typo in notes.txt")
    try:
        allow = fallback(nb, i, "Allow")
        said = nb.wait_text(i, "not usable here")
        assert "Allow / Deny buttons the ipy_agent extension drew below this cell" in said
        assert (root / "notes.txt").read_text() == "teh quick fox\n"  # nothing before the click
        box = nb.cell(i).locator(".ipy-agent-fallback")
        assert "+the quick fox" in box.inner_text()
        nb.screenshot(nb.cell(i), SCREENSHOTS / f"fallback_prompt_{server.kind}.png")
        allow.click()

        nb.wait_done(i)
        assert (root / "notes.txt").read_text() == "the quick fox\n"
        assert "Allowed once" in box.inner_text()
        assert box.locator("button").count() == 0  # answered: the buttons are gone
        # The kernel still runs cells: the run is over, not stuck.
        j = nb.run_and_wait("print('still here')")
        assert "still here" in nb.text(j)

        # Deny, with a reason typed key by key into the extension's box (keys such as "a" and
        # "b" must be text there, not notebook shortcuts that insert cells).
        (root / "notes.txt").write_text("teh quick fox\n")
        cells = nb.cell_count()
        k = nb.add_cell("%agent --script fallback.json fix the typo in notes.txt again")
        nb.run(k)
        deny = fallback(nb, k, "Deny")
        reason = nb.cell(k).locator(".ipy-agent-fallback input")
        reason.click()
        reason.press_sequentially(REASON, delay=60)
        deny.click()
        nb.wait_done(k)
        assert (root / "notes.txt").read_text() == "teh quick fox\n"
        assert f"Denied: {REASON}" in nb.cell(k).locator(".ipy-agent-fallback").inner_text()
        assert nb.cell_count() == cells + 1  # no cell was inserted by the typed keys
    finally:
        nb.close()


QUESTIONS = [
    {
        "question": "Which file holds the sales?",
        "header": "File",
        "options": [{"label": "sales.csv", "description": "this year's"}, {"label": "old.csv"}],
    },
    {
        "question": "Which plots do you want?",
        "header": "Plots",
        "options": [{"label": "Residuals"}, {"label": "Importance"}],
        "multiSelect": True,
    },
]
OWN = "by week"


def test_a_question_the_page_cannot_draw_is_answered_in_the_extensions_boxes(
    no_widgets_server: JupyterServer, browser: Any
):
    turns = [[use("AskUserQuestion", "q1", questions=QUESTIONS)], "Understood."]
    nb, i = start(no_widgets_server, browser, "fallback_question", turns, "plan the analysis")
    try:
        answer = fallback(nb, i, "Answer")
        said = nb.wait_text(i, "not usable here")
        assert "Answer it in the boxes the ipy_agent extension drew below this cell" in said
        box = nb.cell(i).locator(".ipy-agent-fallback")
        box.get_by_label("sales.csv").click()  # a radio button, by its label
        box.get_by_label("Residuals").click()  # a checkbox
        own = box.locator("input[placeholder^='Other']").nth(1)
        own.click()
        own.press_sequentially(OWN, delay=60)  # typed key by key: text, not notebook shortcuts
        cells = nb.cell_count()
        answer.click()
        nb.wait_done(i)
        assert f"Answered: File: sales.csv; Plots: Residuals, {OWN}" in box.inner_text()
        assert box.locator("button").count() == 0
        assert nb.cell_count() == cells
        k = nb.run_and_wait(
            "from ipy_agent.magics import current_session\n"
            "from tests.support.transcript import all_results, result_text\n"
            "print(result_text(all_results(current_session().agent.messages)['q1']))"
        )
        told = nb.text(k)
        assert '"Which file holds the sales?" = "sales.csv"' in told
        assert f'"Which plots do you want?" = "Residuals, {OWN}"' in told
    finally:
        nb.close()


def test_a_cell_edit_under_review_is_answered_in_the_cells_words_with_the_extensions_buttons(
    no_widgets_server: JupyterServer, browser: Any
):
    # The page cannot draw the widget prompt, so the extension draws the fallback under the
    # `%agent` cell; for a cell edit under review it says what the cell says, and its lasting
    # choice grants the rule "Always allow" granted.
    server = no_widgets_server
    name = f"review_{server.kind}.ipynb"
    turns = [
        [use("NotebookRead", "r1")],
        [use("NotebookEdit", "e1", notebook_path=name, cell_id="c1", new_source="x = 41")],
        "Changed x.",
    ]
    (server.root / "review.json").write_text(json.dumps({"turns": turns}))
    server.notebook_file(
        name, ["%load_ext ipy_agent", "%agent --script review.json change x", "x = 1"], ids=["load", "agent", "c1"]
    )
    nb = server.open(browser, name)
    try:
        nb.run(0)
        nb.wait_done(0)
        nb.run(1)
        always = fallback(nb, 1, "Always accept")
        said = nb.wait_text(1, "not usable here")
        assert "Accept / Reject buttons the ipy_agent extension drew below this cell" in said
        box = nb.cell(1).locator(".ipy-agent-fallback")
        labels = [b.strip() for b in box.locator("button").all_inner_texts()]
        assert labels == [
            "Accept",
            "Reject",
            "Accept all",
            "Reject all",
            "Always accept edits to this notebook",
        ]
        placeholder = box.locator("input").get_attribute("placeholder")
        assert placeholder == "Reason for rejecting (optional, sent to the agent)"
        shown = box.inner_text()
        assert "nothing changes until you accept" in shown and "at once" not in shown  # it is staged in c1
        assert "Allow" not in shown and "Deny" not in shown
        always.click()
        nb.wait_done(1)
        assert nb.cells()[2]["source"] == "x = 41"
        assert f"Accepted; from now on: accept edits to this notebook (rule Edit(./{name}))" in box.inner_text()
        k = nb.run_and_wait("%agent_rules")
        assert f"Edit(./{name})" in nb.text(k)
    finally:
        nb.close()
