"""Execution counts in a real JupyterLab: the cells NotebookRun runs and the `%agent` cell that
ran them each show a count of their own, in the notebook model and in the saved file.

ipykernel replies to the running cell with "the counter minus one"; the cells the agent runs
inside it advance the counter, so without care the `%agent` cell showed the count of the last cell
it ran (`[5]` beside `[5]`). The page takes the `%agent` cell's count from that reply, so this is
checked where the person sees it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.transcript import use

pytestmark = pytest.mark.browser


def test_the_agent_cell_and_the_cells_it_runs_never_share_a_count(lab_server, browser: Any):
    (lab_server.root / "counts.json").write_text(
        json.dumps({"turns": [[use("NotebookRun", "n1", cell_ids=["one", "two"])], "Ran both."]})
    )
    name = "counts.ipynb"
    lab_server.notebook_file(
        name,
        ["%load_ext ipy_agent", "%agent --allow NotebookRun --script counts.json go", "a = 40\na + 1", "print(a + 2)"],
        ids=["load", "agent", "one", "two"],
    )
    page = lab_server.open(browser, name)
    try:
        page.run(0)
        page.wait_done(0)
        page.run(1)
        page.wait_done(1)
        page.wait_text(1, "Ran both.")
        cells = {c["id"]: c for c in page.cells()}  # the model, before any save
        counts = {k: cells[k]["execution_count"] for k in ("agent", "one", "two")}
        assert None not in counts.values() and len(set(counts.values())) == 3, counts
        assert counts["one"] + 1 == counts["two"] and counts["agent"] > counts["two"]
        assert cells["one"]["outputs"][0]["execution_count"] == counts["one"]  # Out[n] is the cell's own
        page.save()
        saved = {c["id"]: c for c in lab_server.saved(name)["cells"]}
        assert {k: saved[k]["execution_count"] for k in counts} == counts
        assert saved["one"]["outputs"][0]["execution_count"] == counts["one"]
    finally:
        page.close()
