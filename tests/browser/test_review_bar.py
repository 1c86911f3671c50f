"""Finding a change under review, in real JupyterLab and Notebook 7 pages in Chromium.

A person scrolls to the bottom of a long notebook and runs `%agent` there (a ScriptedModel
transcript: offline, deterministic); the agent proposes an edit of a cell far above. The
notebook scrolls to it; a bar over the notebook (`.ipy-agent-review-bar`) says how many changes
wait, with Previous / Next to go from one to the next and Accept all / Reject all. A proposal's
banner leaves its cell once answered (after showing the outcome a moment) and when the run ends;
the `%agent` record keeps the outcome. Without a browser these tests skip locally and fail in CI.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.browser import SCREENSHOTS, TIMEOUT, JupyterServer, NotebookPage
from tests.support.transcript import use
from tests.support.waits import timed_out, waiting_for

pytestmark = pytest.mark.browser

FILLER = 31  # cells between the first cell and the two at the bottom: 33 cells in all
IN_VIEW_S = 3.0  # how soon a change must come into view: what a person waits, not a benchmark


@pytest.fixture(scope="module", params=["lab", "lab-full", "notebook"])
def front(request: Any, tmp_path_factory: Any) -> Iterator[JupyterServer]:
    """JupyterLab (its default windowing, then 'full', where far cells are not rendered), then Notebook 7."""
    from tests.browser.conftest import _need_browser

    _need_browser(extension=True)
    kind = "notebook" if request.param == "notebook" else "lab"
    s = JupyterServer(kind, tmp_path_factory.mktemp(f"review_bar_{request.param}")).start()
    try:
        if request.param == "lab-full":
            _set_windowing(s, "full")
        yield s
    finally:
        s.stop()


def _set_windowing(server: JupyterServer, mode: str) -> None:
    body = json.dumps({"raw": json.dumps({"windowingMode": mode})}).encode()
    req = urllib.request.Request(
        server.url("lab/api/settings/@jupyterlab/notebook-extension:tracker"),
        data=body,
        method="PUT",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=30) as r:  # 127.0.0.1 only
        r.read()


@pytest.fixture
def opened(front: JupyterServer, browser: Any) -> Iterator[list[NotebookPage]]:
    pages: list[NotebookPage] = []
    yield pages
    for p in pages:
        p.close()


def long_notebook(server: JupyterServer, browser: Any, opened: list[NotebookPage], name: str, turns: list[Any]) -> NotebookPage:
    """33 cells: c1 `x = 1` at the top, 31 cells of a few lines each, `%load_ext` and `%agent` at the bottom."""
    script = name.replace(".ipynb", ".json")
    (server.root / script).write_text(json.dumps({"turns": turns}))
    filler = [f"# step {i}\nv{i} = {i}\nw{i} = v{i} * 2\nprint(w{i})" for i in range(FILLER)]
    sources = ["x = 1", *filler, "%load_ext ipy_agent", f"%agent --script {script} go"]
    ids = ["c1", *[f"f{i}" for i in range(FILLER)], "load", "agent"]
    server.notebook_file(name, sources, ids=ids)
    page = server.open(browser, name)
    opened.append(page)
    return page


def run_at_the_bottom(page: NotebookPage) -> int:
    """Scroll to the bottom with the mouse wheel, as a person does, then run the last two cells."""
    agent = page.cell_count() - 1
    page.page.mouse.move(640, 450)
    for _ in range(40):
        page.page.mouse.wheel(0, 2000)
    page.wait_js(
        "the notebook scrolled to its last cell",
        "const p = P(); const c = p.content.widgets[p.content.widgets.length - 1].node;"
        " const r = c.getBoundingClientRect(); return c.isConnected && r.top < window.innerHeight && r.bottom > 0;",
    )
    page.run(agent - 1)
    page.wait_done(agent - 1)
    page.run(agent)
    return agent


def staged(page: NotebookPage) -> Any:
    """The open proposal, once the page has drawn it (in the DOM, in view or not)."""
    box = page.page.locator(".ipy-agent-proposal:not([data-outcome])").first
    with waiting_for("Chromium to draw a proposal"):
        try:
            box.wait_for(state="attached", timeout=TIMEOUT * 1000)
        except Exception:
            raise timed_out("Chromium did not draw a proposal", TIMEOUT, f"console: {page.console[-10:]}") from None
    return page.page.locator(f".ipy-agent-proposal[data-proposal-id='{box.get_attribute('data-proposal-id')}']")


def comes_into_view(page: NotebookPage, locator: Any, what: str, timeout: float = IN_VIEW_S) -> None:
    """Until `locator`'s element is on screen (inside the window and the notebook's scroll area)."""
    handle = locator.element_handle(timeout=TIMEOUT * 1000)
    with waiting_for(f"Chromium to bring {what} into view"):
        try:
            page.page.wait_for_function(
                "el => { if (!el.isConnected) return false; const r = el.getBoundingClientRect();"
                " const s = el.closest('.jp-WindowedPanel-outer') || document.documentElement;"
                " const v = s.getBoundingClientRect(); const top = Math.max(0, v.top);"
                " const bottom = Math.min(window.innerHeight, v.bottom);"
                " return r.height > 0 && r.bottom > top && r.top < bottom; }",
                arg=handle,
                timeout=timeout * 1000,
            )
        except Exception:
            where = locator.evaluate("el => JSON.stringify(el.getBoundingClientRect())")
            raise timed_out(f"Chromium did not bring {what} into view", timeout, f"it is at {where}") from None


def test_a_staged_edit_far_above_is_scrolled_into_view(front, browser, opened):
    name = "far.ipynb"
    page = long_notebook(
        front,
        browser,
        opened,
        name,
        [[use("NotebookRead", "r1")], [use("NotebookEdit", "e1", notebook_path=name, cell_id="c1", new_source="x = 41")], "Done."],
    )
    run_at_the_bottom(page)
    box = staged(page)
    comes_into_view(page, box, "the proposal in the first cell")
    assert "+ x = 41" in box.inner_text()
    assert box.evaluate("el => el.closest('.jp-Cell') === window.jupyterapp.shell.currentWidget.content.widgets[0].node")
