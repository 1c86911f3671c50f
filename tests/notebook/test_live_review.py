"""Staged cell edits reviewed in the cell, in a real kernel with a fake page (tests/support/frontend.py).

NotebookEdit on the open notebook asks the person; the page shows the change in the cell it
changes, and the person answers there or in the `%agent` cell's prompt: one decision. Checked
here as a person would notice it: the notebook model (unchanged until Accept), the proposal's
outcome in the page, the prompt's outcome line, and what the model was told.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.frontend import MAGICS, LiveKernel, Panel, cell, connected_kernel, tool_results
from tests.support.transcript import result_text, use

pytestmark = pytest.mark.kernel

NB = "analysis.ipynb"


def transcript_of(path: Path, *edits: dict[str, Any]) -> str:
    turns: list[Any] = [[use("NotebookRead", "r1")], list(edits), "Done."]
    (path / "review.json").write_text(json.dumps({"turns": turns}))
    return "review.json"


def replace(tid: str, cell_id: str, source: str) -> dict[str, Any]:
    return use("NotebookEdit", tid, notebook_path=NB, cell_id=cell_id, new_source=source)


def outcomes(k: LiveKernel) -> list[str]:
    """The staged changes' outcomes as the run's record gets them."""
    return json.loads(
        k.check(f"import json as _j\nprint(_j.dumps([o.text() for o in {MAGICS}.bridge.reviews.outcomes]))")
    )


@pytest.fixture
def panel() -> Panel:
    return Panel(
        path=f"work/{NB}",
        cells=[cell("# Analysis", "markdown", cell_id="md0"), cell("x = 1", cell_id="c1"), cell("y = 2", cell_id="c2")],
    )


@pytest.fixture
def kernel(tmp_path: Path, panel: Panel) -> Iterator[LiveKernel]:
    with connected_kernel(tmp_path, panel) as k:
        yield k


def test_accept_in_the_cell_applies_the_edit_and_the_prompt_shows_it(kernel: LiveKernel, panel: Panel, tmp_path: Path):
    run = kernel.execute(f"%agent --script {transcript_of(tmp_path, replace('e1', 'c1', 'x = 41'))} go\n")
    proposal = kernel.proposal(panel)
    assert (proposal["kind"], proposal["cell_id"], proposal["source"]) == ("replace", "c1", "x = 41")
    assert proposal["label"] == "cell 2 · x = 1" and proposal["scroll"] is True
    assert panel.sources() == ["# Analysis", "x = 1", "y = 2"]  # nothing changes before Accept
    kernel.wait_for("the Accept button", lambda: kernel.find_button("Accept"))

    kernel.decide(panel, "accept")
    ex = kernel.wait(run)

    assert ex.status == "ok", ex.text
    assert panel.sources() == ["# Analysis", "x = 41", "y = 2"]
    assert proposal["outcome"] == "accepted"
    assert not tool_results(kernel)["e1"].get("is_error")
    assert kernel.shows("Accepted in the cell")  # the %agent prompt shows the same decision
    assert kernel.find_button("Accept", enabled=True) is None
    assert outcomes(kernel) == ["accepted in the cell"]


def test_reject_in_the_cell_with_a_reason_leaves_the_cell_and_tells_the_model(
    kernel: LiveKernel, panel: Panel, tmp_path: Path
):
    run = kernel.execute(f"%agent --script {transcript_of(tmp_path, replace('e1', 'c1', 'x = 41'))} go\n")
    proposal = kernel.proposal(panel)
    words = "keep x at 1, the tests depend on it"

    kernel.decide(panel, "reject", words)
    ex = kernel.wait(run)

    assert ex.status == "ok", ex.text
    assert panel.sources() == ["# Analysis", "x = 1", "y = 2"]
    told = tool_results(kernel)["e1"]
    assert told.get("is_error") and f"Their reason: {words}" in result_text(told)
    assert (proposal["outcome"], proposal["reason"]) == ("rejected", words)
    assert kernel.shows(f"Rejected in the cell: {words}")
    assert outcomes(kernel) == [f"rejected in the cell: {words}"]


def test_allow_in_the_prompt_resolves_the_proposal_in_the_page(kernel: LiveKernel, panel: Panel, tmp_path: Path):
    edit = use(
        "NotebookEdit", "e1", notebook_path=NB, cell_id="c1", edit_mode="insert", cell_type="code", new_source="z = 3"
    )
    run = kernel.execute(f"%agent --script {transcript_of(tmp_path, edit)} go\n")
    proposal = kernel.proposal(panel)
    assert (proposal["kind"], proposal["cell_id"], proposal["index"]) == ("insert", "c1", 2)
    assert len(panel.cells) == 3  # the proposed cell is not in the model

    kernel.click(kernel.wait_for("the Accept button", lambda: kernel.find_button("Accept")))
    ex = kernel.wait(run)

    assert ex.status == "ok", ex.text
    assert panel.sources() == ["# Analysis", "x = 1", "z = 3", "y = 2"]
    assert proposal["outcome"] == "accepted"
    assert outcomes(kernel) == ["accepted in the prompt"]


def test_typing_in_the_cell_under_review_makes_it_stale(kernel: LiveKernel, panel: Panel, tmp_path: Path):
    run = kernel.execute(f"%agent --script {transcript_of(tmp_path, replace('e1', 'c1', 'x = 41'))} go\n")
    proposal = kernel.proposal(panel)

    kernel.type_into(panel, "c1", "x = 1  # tuned by hand")
    ex = kernel.wait(run)

    assert ex.status == "ok", ex.text
    assert panel.sources() == ["# Analysis", "x = 1  # tuned by hand", "y = 2"]
    told = result_text(tool_results(kernel)["e1"])
    assert "changed under review" in told and "NotebookRead" in told
    assert proposal["outcome"] == "stale"
    assert kernel.shows("Stale: cell 2 · x = 1 changed under review")
    assert outcomes(kernel) == ["stale"]


def test_accept_all_applies_the_pending_edit_and_those_queued_after_it(
    kernel: LiveKernel, panel: Panel, tmp_path: Path
):
    edits = (replace("e1", "md0", "# Sales"), replace("e2", "c1", "x = 10"), replace("e3", "c2", "y = 20"))
    run = kernel.execute(f"%agent --script {transcript_of(tmp_path, *edits)} go\n")
    kernel.proposal(panel)

    kernel.decide(panel, "accept_all")
    ex = kernel.wait(run)

    assert ex.status == "ok", ex.text
    assert panel.sources() == ["# Sales", "x = 10", "y = 20"]
    assert not any(r.get("is_error") for r in tool_results(kernel).values())
    assert outcomes(kernel) == ["accepted in the cell", "accepted (all)", "accepted (all)"]
    # A new run starts without the standing answer: the next edit asks again.
    again = kernel.execute(f"%agent --script {transcript_of(tmp_path, replace('e4', 'c1', 'x = 11'))} go\n")
    kernel.proposal(panel)
    kernel.decide(panel, "reject")
    assert kernel.wait(again).status == "ok"
    assert panel.sources()[1] == "x = 10"


def test_accept_all_in_the_prompt_answers_this_edit_and_the_runs_later_ones(
    kernel: LiveKernel, panel: Panel, tmp_path: Path
):
    edits = (replace("e1", "md0", "# Sales"), replace("e2", "c1", "x = 10"), replace("e3", "c2", "y = 20"))
    run = kernel.execute(f"%agent --script {transcript_of(tmp_path, *edits)} go\n")
    proposal = kernel.proposal(panel)

    kernel.click(kernel.wait_for("the prompt's Accept all", lambda: kernel.find_button("Accept all")))
    ex = kernel.wait(run)

    assert ex.status == "ok", ex.text
    assert panel.sources() == ["# Sales", "x = 10", "y = 20"]
    assert len(panel.proposals) == 1 and proposal["outcome"] == "accepted"  # the later two were not staged
    assert outcomes(kernel) == ["accepted in the prompt", "accepted (all)", "accepted (all)"]
    assert kernel.shows("Accepted (Accept all)")


def test_reject_all_in_the_prompt_with_a_reason_leaves_the_cells_and_tells_the_model(
    kernel: LiveKernel, panel: Panel, tmp_path: Path
):
    edits = (replace("e1", "c1", "x = 10"), replace("e2", "c2", "y = 20"))
    run = kernel.execute(f"%agent --script {transcript_of(tmp_path, *edits)} go\n")
    kernel.proposal(panel)

    reject_all = kernel.wait_for("the prompt's Reject all", lambda: kernel.find_button("Reject all"))
    reason = next(
        c
        for c in kernel.siblings(reject_all)
        if kernel.models[c]["_model_name"] == "TextModel" and "Reason" in kernel.models[c].get("placeholder", "")
    )
    kernel.type_text(reason, "keep them")
    kernel.click(reject_all)
    ex = kernel.wait(run)

    assert ex.status == "ok", ex.text
    assert panel.sources() == ["# Analysis", "x = 1", "y = 2"]
    results = tool_results(kernel)
    assert all("keep them" in result_text(results[t]) for t in ("e1", "e2"))
    assert outcomes(kernel) == ["rejected in the prompt: keep them", "rejected (all): keep them"]
    assert kernel.shows("Rejected (Reject all): keep them")
