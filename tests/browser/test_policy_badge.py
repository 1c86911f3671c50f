"""Cell policies seen on the page, and a conversation continued from the page, in JupyterLab and
Notebook 7 (Chromium), as a person clicks and types.

- A tag `agent:never-run` added in the property inspector's Cell Tags (typed key by key) puts a
  badge on the cell; clicking the badge explains the policy; taking the tag off takes the badge
  away. "Never run this cell" in the agent's prompt (the notebook's metadata, not a tag) badges
  the cell too, at once.
- Under a finished `%agent` run, a reply typed key by key into the reply box and sent with Enter
  becomes a new `%agent` cell below, which runs and continues the same conversation (the model
  is a ScriptedModel: offline, deterministic).

Without a browser these tests skip locally and fail in CI (CI=true).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.browser import SCREENSHOTS, TIMEOUT, JupyterServer, NotebookPage
from tests.support.transcript import use

pytestmark = pytest.mark.browser

BADGE = ".ipy-agent-policy-badge"


def open_notebook(front: JupyterServer, browser: Any, opened: list[NotebookPage], name: str, cells: list[str]) -> Any:
    front.notebook_file(name, cells, ids=[f"c{i}" for i in range(len(cells))])
    page = front.open(browser, name)
    opened.append(page)
    return page


def cell_tags(page: NotebookPage, index: int) -> list[str]:
    return list(page.js("return P().content.widgets[arg].model.getMetadata('tags') || [];", index))


def open_cell_tags(page: NotebookPage, front: JupyterServer) -> Any:
    """The property inspector's Cell Tags, opened as a person does; returns the property inspector."""
    p = page.page
    if front.kind == "lab":
        p.locator(".lm-TabBar-tab[title='Property Inspector']").click()
    else:
        p.get_by_text("View", exact=True).click()
        p.locator(".lm-Menu-item", has_text="Right Sidebar").click()
        p.locator(".lm-Menu-item", has_text="Show Notebook Tools").click()
    tools = p.locator("#notebook-tools")
    header = tools.locator(".jp-Collapse-header", has_text="Common Tools")
    header.wait_for(state="visible", timeout=TIMEOUT * 1000)
    if "jp-Collapse-header-collapsed" in (header.get_attribute("class") or ""):
        header.click()
    return tools


def test_a_tag_typed_in_cell_tags_shows_a_badge_that_explains_itself(front, browser, opened):
    page = open_notebook(front, browser, opened, f"tags_{front.kind}.ipynb", ["x = 1", "train()", "y = 2"])
    assert page.page.locator(BADGE).count() == 0
    page.cell(1).click()  # the cell to tag is the active one
    tools = open_cell_tags(page, front)

    typed = tools.get_by_placeholder("Add Tag")
    typed.click()
    typed.press_sequentially("agent:never-run", delay=40)
    typed.press("Enter")

    badge = page.cell(1).locator(BADGE)
    badge.wait_for(state="visible", timeout=TIMEOUT * 1000)
    assert badge.inner_text() == "never-run"
    assert cell_tags(page, 1) == ["agent:never-run"]
    assert page.cell(0).locator(BADGE).count() == 0 and page.cell(2).locator(BADGE).count() == 0

    badge.click()
    explanation = page.cell(1).locator(".ipy-agent-policy-explain")
    explanation.wait_for(state="visible", timeout=TIMEOUT * 1000)
    words = explanation.inner_text()
    assert "may not run this cell" in words and "delete that tag" in words, words
    if front.kind == "lab":
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.cell(1).screenshot(path=str(SCREENSHOTS / "policy-badge.png"))

    # Off again, as it went on: the tag's own pill in Cell Tags.
    tools.locator(".jp-CellTags-Applied", has_text="agent:never-run").click()
    badge.wait_for(state="detached", timeout=TIMEOUT * 1000)
    assert "agent:never-run" not in cell_tags(page, 1)


def test_never_run_this_cell_in_the_prompt_badges_the_cell(front, browser, opened):
    name = f"never_{front.kind}.ipynb"
    script = name.replace(".ipynb", ".json")
    (front.root / script).write_text(
        json.dumps({"turns": [[use("NotebookRun", "r1", cell_id="c3")], "I will not run it."]})
    )
    page = open_notebook(
        front, browser, opened, name, ["%load_ext ipy_agent", f"%agent --script {script} train", "x = 1", "train()"]
    )
    page.run(0)
    page.wait_done(0)
    page.run(1)

    page.button(1, "Never run this cell").click()

    badge = page.cell(3).locator(BADGE)
    badge.wait_for(state="visible", timeout=TIMEOUT * 1000)
    assert badge.inner_text() == "never-run"
    assert cell_tags(page, 3) == []  # the notebook's metadata holds it, not a tag
    page.wait_done(1)
    badge.click()
    words = page.cell(3).locator(".ipy-agent-policy-explain").inner_text()
    assert "ipy_agent.cell_policies" in words and '"c3"' in words, words


def test_a_reply_typed_under_a_finished_run_continues_the_conversation(front, browser, opened):
    page = open_notebook(
        front,
        browser,
        opened,
        f"reply_{front.kind}.ipynb",
        [
            "%load_ext ipy_agent",
            "from ipy_agent import ScriptedModel\nfrom ipy_agent.magics import current_session\n"
            "_m = ScriptedModel(['The first answer.', 'The second answer.'])\n"
            "current_session().model_factory = lambda: _m",
            "%agent say something",
            "z = 3",
        ],
    )
    for i in (0, 1):
        page.run(i)
        page.wait_done(i)
    assert page.page.locator(".ipy-agent-followup").count() == 0  # no run yet
    page.run(2)
    page.wait_done(2)
    page.wait_text(2, "The first answer.")
    box = page.cell(2).locator(".ipy-agent-followup")
    box.wait_for(state="visible", timeout=TIMEOUT * 1000)

    reply = box.get_by_role("textbox", name="Reply to the agent")
    reply.click()
    reply.press_sequentially("ok, just make it quicker", delay=60)
    assert reply.input_value() == "ok, just make it quicker"  # every key reached the box
    assert [c["source"] for c in page.cells()][3] == "z = 3"  # no shortcut took a key (a, b, x, z...)
    reply.press("Enter")

    page.wait_js("a new cell below the %agent cell", "return P().content.widgets.length === 5;")
    assert [c["source"] for c in page.cells()][2:] == [
        "%agent say something",
        "%agent ok, just make it quicker",
        "z = 3",
    ]
    page.wait_done(3)
    page.wait_text(3, "The second answer.")
    page.cell(3).locator(".ipy-agent-followup").wait_for(state="visible", timeout=TIMEOUT * 1000)
    assert page.cell(2).locator(".ipy-agent-followup").count() == 0  # one box: under the newest run
    i = page.run_and_wait(
        "from ipy_agent.magics import current_session as _cs\n"
        "print([m['role'] for m in _cs().agent.messages], _cs().agent.messages[2]['content'])"
    )
    assert "['user', 'assistant', 'user', 'assistant']" in page.text(i)  # the same conversation
    assert "ok, just make it quicker" in page.text(i)
