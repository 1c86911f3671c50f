"""A `[cell N]` in the agent's answer, in a real JupyterLab: the answer shows a link, a click on it
makes cell N the active cell (the page scrolls there), and the saved notebook keeps the link in
the run's record. Without a browser this skips locally and fails in CI (CI=true)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.browser import TIMEOUT

pytestmark = pytest.mark.browser


def test_a_cited_cell_is_a_link_that_goes_to_the_cell_and_the_record_keeps_it(lab_server, browser: Any):
    (lab_server.root / "cite.json").write_text(json.dumps({"turns": ["The total comes from [cell 5]."]}))
    name = "cite.ipynb"
    lab_server.notebook_file(
        name,
        ["%load_ext ipy_agent", "%agent --script cite.json where is the total?", "a = 1", "b = 2", "total = a + b"],
        ids=["load", "agent", "a", "b", "total"],
    )
    page = lab_server.open(browser, name)
    try:
        page.run(0)
        page.wait_done(0)
        page.run(1)
        page.wait_done(1)
        page.wait_text(1, "The total comes from")
        link = page.cell(1).locator("a.ipy-agent-cite")
        link.wait_for(state="visible", timeout=TIMEOUT * 1000)
        assert link.inner_text() == "cell 5"
        page.cell(0).click()  # the person is elsewhere
        page.wait_js("cell 1 active", "return P().content.activeCellIndex === 0;")
        link.click()
        page.wait_js("the cited cell active", "return P().content.activeCellIndex === 4;")
        assert page.js("return location.hash;") == ""  # the browser did not follow the href
        page.save()
        saved = json.dumps(lab_server.saved(name)["cells"][1]["outputs"])
        assert 'data-ipy-agent-cell=\\"5\\"' in saved
        assert "The total comes from [cell 5]." in saved  # the record's text/plain keeps the words
    finally:
        page.close()
