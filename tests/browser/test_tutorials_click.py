"""Teaching notebooks answered as a learner answers them: JupyterLab, the real widgets, the mouse.

The course build and the notebook tests answer prompts automatically (IPY_AGENT_COURSE_AUTOANSWER,
ui/course_answers.py). Here that setting is off, as it is for a learner: the tour's `%agent` cell
stops at its approval prompt until Allow is clicked, and notebook 15's question waits for an
option and Answer. The notebooks are copies of the committed ones (examples/), opened from a
JupyterLab served at the copy's root, and run cell by cell as a learner runs them.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.browser import PROJECT_ROOT, SCREENSHOTS, JupyterServer, NotebookPage

pytestmark = pytest.mark.browser

NOTICE = "answered automatically"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: Any) -> Iterator[JupyterServer]:
    from tests.browser.conftest import _need_browser

    _need_browser(extension=True)
    root = tmp_path_factory.mktemp("tutorials")
    shutil.copytree(PROJECT_ROOT / "examples", root / "examples", ignore=shutil.ignore_patterns("__pycache__"))
    server = JupyterServer("lab", root).start()  # no IPY_AGENT_COURSE_AUTOANSWER: a learner's server
    try:
        yield server
    finally:
        server.stop()


def run(nb: NotebookPage, cell_id: str) -> int:
    i = nb.index_of(cell_id)
    assert i >= 0, f"no cell {cell_id!r} in {nb.name}"
    nb.run(i)
    return i


def run_and_wait(nb: NotebookPage, *cell_ids: str) -> None:
    for cell_id in cell_ids:
        nb.wait_done(run(nb, cell_id), timeout=120)


def test_the_tour_waits_at_its_prompt_until_the_learner_clicks_allow(lab: JupyterServer, browser: Any):
    nb = lab.open(browser, "examples/01_tour.ipynb")
    try:
        run_and_wait(nb, "c01-01", "c01-02")
        i = run(nb, "c01-06")  # %agent fix the typo in notes.txt
        nb.prompt(i)
        shown = nb.text(i)
        assert "-We agreed on teh plan." in shown and "+We agreed on the plan." in shown  # the diff
        assert NOTICE not in shown  # off by default: nothing is answered for the learner
        nb.button(i, "Allow").click()
        nb.wait_text(i, "Allowed once")
        nb.wait_done(i)
        j = run(nb, "c01-07")
        nb.wait_done(j)
        after = nb.wait_text(j, "notes.txt on disk now:")
        assert "We agreed on the plan." in after and "run ended: end_turn" in after
    finally:
        nb.close()
        lab.stop_kernels()


def test_notebook_15s_question_waits_for_the_learners_option(lab: JupyterServer, browser: Any):
    nb = lab.open(browser, "examples/15_delegation.ipynb")
    try:
        run_and_wait(nb, "15-load-ext")
        i = run(nb, "1ef26e83")  # %agent --script transcripts/15_question.json ...
        nb.button(i, "Schedule").click()
        assert NOTICE not in nb.text(i)
        nb.button(i, "Answer").click()
        nb.wait_text(i, "Answered: Tuning: Schedule")
        nb.wait_done(i)
        j = run(nb, "15-question-told")
        nb.wait_done(j)
        assert '"How should I tune the learning rate?" = "Schedule"' in nb.wait_text(j, "what the model got back")
    finally:
        nb.close()
        lab.stop_kernels()


def source_of(nb: NotebookPage, cell_id: str) -> str:
    """The cell's source as the page's notebook model holds it (what Save writes)."""
    return str(next(c["source"] for c in nb.cells() if c["id"] == cell_id))


def wait_source(nb: NotebookPage, cell_id: str, ending: str) -> None:
    """Until the page's model holds cell `cell_id` with a source ending in `ending`."""
    nb.wait_js(
        f"cell {cell_id} to end with {ending!r}",
        "const c = P().content.model.sharedModel.cells.find(c => c.id === arg[0]);"
        "return !!c && c.getSource().endsWith(arg[1]);",
        [cell_id, ending],
        timeout=120,
    )


def open_proposal(nb: NotebookPage, cell_id: str) -> Any:
    """The open proposal drawn in the cell `cell_id`, once it is visible."""
    box = nb.cell(nb.index_of(cell_id)).locator(".ipy-agent-proposal:not([data-outcome])").first
    box.wait_for(state="visible", timeout=120_000)
    return nb.page.locator(f".ipy-agent-proposal[data-proposal-id='{box.get_attribute('data-proposal-id')}']")


def test_notebook_13s_edit_of_its_own_cells_is_accepted_rejected_and_rewound_in_the_cells(
    lab: JupyterServer, browser: Any
):
    nb = lab.open(browser, "examples/13_review_and_rewind.ipynb")
    before = {cell_id: source_of(nb, cell_id) for cell_id in ("13-prices", "13-report")}
    try:
        run_and_wait(nb, "13-prices", "13-report", "13-load-ext", "13-page")
        i = run(nb, "13-agent")

        report = open_proposal(nb, "13-report")
        shown = report.inner_text()
        assert 'print(f"{region}: {round(total)} euros")' in shown and "Accept" in shown
        assert source_of(nb, "13-report") == before["13-report"]  # nothing changes before Accept
        # The README's picture of a tutorial's live prompt (IPY_AGENT_SCREENSHOTS=1 writes it).
        nb.screenshot(nb.cell(nb.index_of("13-report")), SCREENSHOTS / "tutorial-review.png")
        report.get_by_role("button", name="Accept", exact=True).click()
        report.locator(".ipy-agent-proposal-outcome", has_text="Accepted").wait_for(timeout=120_000)
        wait_source(nb, "13-report", 'print(f"{region}: {round(total)} euros")')  # the kernel applies it

        prices = open_proposal(nb, "13-prices")
        reason = prices.get_by_role("textbox", name="Reason for rejecting")
        reason.click()
        reason.press_sequentially("keep the cents in the data", delay=40)
        prices.get_by_role("button", name="Reject", exact=True).click()
        prices.locator(".ipy-agent-proposal-outcome", has_text="keep the cents").wait_for(timeout=120_000)
        nb.wait_done(i, timeout=120)
        record = nb.text(i)
        assert NOTICE not in record and "keep the cents in the data" in record
        assert source_of(nb, "13-prices") == before["13-prices"]
        k = run(nb, "13-cells-now")
        nb.wait_done(k)
        assert 'after the review, 13-report: print(f"{region}: {round(total)} euros")' in nb.text(k)

        run_and_wait(nb, "13-rewind")
        wait_source(nb, "13-report", before["13-report"])  # the accepted edit, put back in the cell
        j = run(nb, "13-cells-rewound")
        nb.wait_done(j)
        assert 'after the rewind, 13-report: print(f"{region}: {total:.2f}")' in nb.text(j)
    finally:
        nb.close()
        lab.stop_kernels()


def test_notebook_14s_effects_prompt_is_answered_by_the_learner(lab: JupyterServer, browser: Any):
    nb = lab.open(browser, "examples/14_running_cells.ipynb")
    try:
        run_and_wait(nb, "6e2aa07c", "14-here-data", "14-here-load")
        i = run(nb, "14-here-agent")
        nb.prompt(i)
        shown = nb.text(i)
        # What the run will do to the learner's variables, before anything runs: 3 rows, 2 columns now.
        assert "overwrites orders: DataFrame 3 × 2" in shown and "may modify orders (item assignment)" in shown  # noqa: RUF001
        assert NOTICE not in shown
        nb.button(i, "Allow").click()
        nb.wait_text(i, "Allowed once")
        nb.wait_done(i, timeout=120)
        j = run(nb, "14-here-after")
        nb.wait_done(j)
        assert "orders now: 2 rows, columns ['item', 'price', 'price_eur']" in nb.text(j)
    finally:
        nb.close()
        lab.stop_kernels()
