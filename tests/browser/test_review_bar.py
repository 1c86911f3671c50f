"""Finding a change under review, in real JupyterLab and Notebook 7 pages in Chromium.

A person scrolls to the bottom of a long notebook and runs `%agent` there (a ScriptedModel
transcript: offline, deterministic); the agent proposes an edit of a cell far above. The
notebook scrolls to it; a bar over the notebook (`.ipy-agent-review-bar`) says how many changes
wait, with Previous / Next to go from one to the next and Accept all / Reject all. A proposal's
banner leaves its cell once answered (after showing the outcome a moment) and when the run ends;
the `%agent` record keeps the outcome. `IPY_AGENT_SCREENSHOTS=1` writes the README's picture of
the bar (docs/images/review-bar.png). Without a browser these tests skip locally and fail in CI.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.browser import SCREENSHOTS, TIMEOUT, JupyterServer, NotebookPage
from tests.support.review_page import shown_outcome, watch_outcomes
from tests.support.transcript import use
from tests.support.waits import Deadline, timed_out, waiting_for

pytestmark = pytest.mark.browser

FILLER = 30  # cells between the first cell and the two at the bottom: 33 cells in all
IN_VIEW_S = 3.0  # how soon a change must come into view: what a person waits, not a benchmark
LEAVES_S = 10.0  # an answered banner shows its outcome a moment (1.5 s), then leaves: well before this


@pytest.fixture(scope="module", params=["lab", "lab-full", "notebook"])
def front(request: Any, tmp_path_factory: Any) -> Iterator[JupyterServer]:
    """JupyterLab (its default windowing, then 'full', where cells far from view are not
    rendered), then Notebook 7, each with this checkout's build of the extension."""
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
    """The notebook setting `windowingMode`, through the settings API (once the server listens)."""
    body = json.dumps({"raw": json.dumps({"windowingMode": mode})}).encode()
    deadline = Deadline(TIMEOUT)
    with waiting_for(f"the server to take windowingMode {mode!r}"):
        while True:
            req = urllib.request.Request(
                server.url("lab/api/settings/@jupyterlab/notebook-extension:tracker"),
                data=body,
                method="PUT",
                headers={"Content-Type": "application/json"},
            )
            try:
                with urllib.request.urlopen(req, timeout=30) as r:  # 127.0.0.1 only
                    r.read()
                return
            except urllib.error.URLError as e:  # not listening yet
                if deadline.passed():
                    raise timed_out(f"the server did not take windowingMode {mode!r}", TIMEOUT, str(e)) from None
                time.sleep(0.2)


def long_notebook(
    server: JupyterServer, browser: Any, opened: list[NotebookPage], name: str, turns: list[Any]
) -> NotebookPage:
    """33 cells: c1 `x = 1` at the top, 30 cells of a few lines each, `%load_ext` and `%agent` at the bottom."""
    script = name.replace(".ipynb", ".json")
    (server.root / script).write_text(json.dumps({"turns": turns}))
    filler = [f"# step {i}\nv{i} = {i}\nw{i} = v{i} * 2\nprint(w{i})" for i in range(FILLER)]
    sources = ["x = 1", *filler, "%load_ext ipy_agent", f"%agent --script {script} go"]
    ids = ["c1", *[f"f{i}" for i in range(FILLER)], "load", "agent"]
    server.notebook_file(name, sources, ids=ids)
    page = server.open(browser, name)
    opened.append(page)
    watch_outcomes(page.page)
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
        [
            [use("NotebookRead", "r1")],
            [use("NotebookEdit", "e1", notebook_path=name, cell_id="c1", new_source="x = 41")],
            "Done.",
        ],
    )
    run_at_the_bottom(page)
    box = staged(page)
    comes_into_view(page, box, "the proposal in the first cell")
    assert "+ x = 41" in box.inner_text()
    assert box.evaluate(
        "el => el.closest('.jp-Cell') === window.jupyterapp.shell.currentWidget.content.widgets[0].node"
    )


def record(page: NotebookPage, index: int, needle: str) -> str:
    """Until cell `index`'s outputs (as the notebook model holds them: what Save writes, and what
    the page shows when the person scrolls there) say `needle`; returns their text."""
    with waiting_for(f"cell {index}'s record to say {needle!r}"):
        try:
            page.page.wait_for_function(
                "([i, needle]) => { const p = window.jupyterapp.shell.currentWidget;"
                " return JSON.stringify(p.content.model.cells.get(i).outputs.toJSON()).includes(needle); }",
                arg=[index, needle],
                timeout=TIMEOUT * 1000,
            )
        except Exception:
            raise timed_out(
                f"cell {index}'s record did not say {needle!r}", TIMEOUT, str(page.outputs(index))
            ) from None
    return "\n".join(
        "".join(o.get("data", {}).get("text/plain", "")) + "".join(o.get("text", "")) for o in page.outputs(index)
    )


def bar(page: NotebookPage) -> Any:
    return page.page.locator(".ipy-agent-review-bar")


def bar_says(page: NotebookPage, text: str) -> Any:
    """Until the review bar is visible and says `text`; returns the bar."""
    loc = bar(page)
    with waiting_for(f"Chromium to show the review bar saying {text!r}"):
        try:
            loc.filter(has_text=text).wait_for(state="visible", timeout=TIMEOUT * 1000)
        except Exception:
            shown = loc.inner_text() if loc.count() else "(no bar)"
            raise timed_out(f"Chromium did not show the review bar saying {text!r}", TIMEOUT, shown) from None
    return loc


def gone(page: NotebookPage, selector: str, what: str, timeout: float = LEAVES_S) -> None:
    """Until no element matching `selector` is visible (a person sees it leave, not stay for good)."""
    with waiting_for(f"Chromium to remove {what}"):
        try:
            page.page.locator(selector).first.wait_for(state="hidden", timeout=timeout * 1000)
        except Exception:
            still = page.page.locator(selector).first.inner_text()
            raise timed_out(f"Chromium still shows {what}", timeout, still) from None


# A cell that stages two changes (cell 1 and cell 21) through the bridge, as NotebookEdit's review
# does (tools/notebook/edit_live.py: LiveReview), and waits for the page's answers: the agent asks one
# change at a time, so two open at once is the page's own case (another notebook's run, a page
# reloaded mid-review), driven here from the kernel side.
TWO_STAGED = """
import asyncio
from ipy_agent.magics import current_session
from ipy_agent.tools.notebook.edit_live import LiveReview
b = current_session().bridge
await b.ensure()
cells = await b.list_cells()
reviews = [
    LiveReview.of(b, kind="replace", cell=cells[i], source=f"x{i} = 'new'", old_source=cells[i]["source"],
                  cell_type="code", label=f"cell {i + 1}", tool_use_id=f"t{i}")
    for i in (0, 20)
]
for r in reviews:
    assert await r.open()
answers = await asyncio.gather(*(r.decision() for r in reviews))
for r, a in zip(reviews, answers):
    await r.close(a.behavior, a.message, automatic=a.automatic, where="cell")
print("ANSWERS", [a.note for a in answers])
"""


def test_the_bar_counts_two_changes_and_goes_from_one_to_the_next(front, browser, opened):
    name = "two.ipynb"
    page = long_notebook(front, browser, opened, name, ["Done."])
    last = page.cell_count() - 1
    page.js("P().content.model.sharedModel.cells[arg].setSource(" + repr(TWO_STAGED) + "); return true;", last)
    run_at_the_bottom(page)
    shown = bar_says(page, "2 changes to review")
    first = page.page.locator(".ipy-agent-proposal[data-proposal-id]").first
    comes_into_view(page, first, "the first change (cell 1)")
    if front.kind == "lab" and _windowing_default(page):
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        shown.screenshot(path=str(SCREENSHOTS / "review-bar.png"))  # the README's picture of the bar

    shown.get_by_role("button", name="Next", exact=True).click()
    second = page.page.locator(".ipy-agent-proposal[data-proposal-id]").filter(has_text="x20 = 'new'")
    comes_into_view(page, second, "the second change (cell 21)")
    assert second.evaluate(
        "el => el.closest('.jp-Cell') === window.jupyterapp.shell.currentWidget.content.widgets[20].node"
    )

    shown.get_by_role("button", name="Previous", exact=True).click()
    back = page.page.locator(".ipy-agent-proposal[data-proposal-id]").filter(has_text="x0 = 'new'")
    comes_into_view(page, back, "the first change again")

    shown.get_by_role("button", name="Accept all", exact=True).click()

    page.wait_done(last)  # the cell far below the view: its outputs as the model holds them
    assert "ANSWERS ['Accepted in the cell (Accept all)', 'Accepted in the cell (Accept all)']" in str(
        page.outputs(last)
    )
    gone(page, ".ipy-agent-review-bar", "the review bar")
    gone(page, ".ipy-agent-proposal", "the answered banners")


def _windowing_default(page: NotebookPage) -> bool:
    return bool(page.js("return P().content.notebookConfig.windowingMode !== 'full';"))


def test_reject_all_in_the_bar_answers_the_run_and_the_banners_leave(front, browser, opened):
    name = "reject_all.ipynb"
    edits = [
        use("NotebookEdit", "e1", notebook_path=name, cell_id="c1", new_source="x = 41"),
        use("NotebookEdit", "e2", notebook_path=name, cell_id="f3", new_source="v3 = 0"),
    ]
    page = long_notebook(front, browser, opened, name, [[use("NotebookRead", "r1")], edits, "Done."])
    agent = run_at_the_bottom(page)
    box = staged(page)
    shown = bar_says(page, "1 change to review")

    shown.get_by_role("button", name="Reject all", exact=True).click()

    shown_outcome(page.page, "Rejected")
    page.wait_done(agent)
    gone(page, ".ipy-agent-review-bar", "the review bar")
    gone(page, ".ipy-agent-proposal", "the answered banners")
    assert box.count() == 0
    sources = [c["source"] for c in page.cells()]
    assert sources[0] == "x = 1" and sources[4] == "# step 3\nv3 = 3\nw3 = v3 * 2\nprint(w3)"
    said = record(page, agent, "Notebook changes")
    assert "rejected in the cell" in said and "rejected (all)" in said  # the record keeps the outcomes


def test_a_banner_leaves_once_accepted_and_the_record_of_a_rewound_prompt_says_so(front, browser, opened):
    name = "rewind.ipynb"
    page = long_notebook(
        front,
        browser,
        opened,
        name,
        [
            [use("NotebookRead", "r1")],
            [use("NotebookEdit", "e1", notebook_path=name, cell_id="c1", new_source="x = 41")],
            "Done.",
        ],
    )
    agent = run_at_the_bottom(page)
    box = staged(page)
    comes_into_view(page, box, "the proposal")
    box.get_by_role("button", name="Accept", exact=True).click()
    shown_outcome(page.page, "Accepted")
    gone(page, ".ipy-agent-proposal", "the accepted banner")
    page.wait_done(agent)
    assert page.cells()[0]["source"] == "x = 41"
    record(page, agent, "accepted in the cell")

    i = page.add_cell("%agent_rewind")
    page.run(i)
    page.wait_done(i)
    record(page, i, "Rewound to before prompt 1")
    assert page.cells()[0]["source"] == "x = 1"  # the page put the cell back
    assert page.page.locator(".ipy-agent-proposal").count() == 0  # no banner of the rewound change
    said = record(page, agent, "Rewound (%agent_rewind 1)")
    assert "accepted in the cell" in said  # the outcome stays, with the rewind after it


def test_an_open_banner_leaves_when_the_run_is_interrupted(front, browser, opened):
    name = "interrupt.ipynb"
    page = long_notebook(
        front,
        browser,
        opened,
        name,
        [
            [use("NotebookRead", "r1")],
            [use("NotebookEdit", "e1", notebook_path=name, cell_id="c1", new_source="x = 41")],
            "Done.",
        ],
    )
    agent = run_at_the_bottom(page)
    staged(page)
    bar_says(page, "1 change to review")

    page.page.locator("[data-command='notebook:interrupt-kernel']").first.click()  # the toolbar's stop button

    shown_outcome(page.page, "Cancelled")
    gone(page, ".ipy-agent-proposal", "the banner of the unanswered change")
    gone(page, ".ipy-agent-review-bar", "the review bar")
    page.wait_done(agent)
    assert page.cells()[0]["source"] == "x = 1"
    record(page, agent, "cancelled")  # the record keeps what became of it


def test_after_the_person_scrolled_a_notice_offers_to_go_to_the_change(front, browser, opened):
    name = "offer.ipynb"
    edits = [
        use("NotebookEdit", "e1", notebook_path=name, cell_id="c1", new_source="x = 41"),
        use("NotebookEdit", "e2", notebook_path=name, cell_id="f20", new_source="v20 = 0"),
    ]
    page = long_notebook(front, browser, opened, name, [[use("NotebookRead", "r1")], edits, "Done."])
    run_at_the_bottom(page)
    first = staged(page)
    comes_into_view(page, first, "the first change")
    page.page.mouse.move(640, 450)
    page.page.mouse.wheel(0, 400)  # the person scrolls on their own while the run goes on

    first.get_by_role("button", name="Accept", exact=True).click()

    go = page.page.get_by_role("button", name="Go to it")
    with waiting_for("Chromium to offer to go to the second change"):
        try:
            go.wait_for(state="visible", timeout=TIMEOUT * 1000)
        except Exception:
            raise timed_out("Chromium did not offer to go to the second change", TIMEOUT) from None
    second = page.page.locator(".ipy-agent-proposal[data-proposal-id]").filter(has_text="v20 = 0")
    assert not page.in_viewport(second)  # the page stayed where the person was
    go.click()
    comes_into_view(page, second, "the second change (cell 21)")
