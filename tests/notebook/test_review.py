"""Staged cell edits without a kernel: the permission wait answered by the page or the approver.

The page is the fake front end (tests/support/frontend.py) connected in-process; the approver is
a plain function, which does not follow the review, so a page answer cancels it. What is checked:
the notebook model (unchanged until accepted), the proposal's outcome in the page, what the model
was told, and the outcome kept for the record. tests/notebook/test_live_review.py does the same
through a real kernel with the widget prompt.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from ipy_agent import Agent, ScriptedModel
from ipy_agent.notebook.review import Reviews
from ipy_agent.permissions.decide import PermissionRequest
from ipy_agent.ui.approver import NonInteractiveApprover
from ipy_agent.ui.record import Reviewed, review_of
from tests.support.frontend import Panel, cell, connected_bridge
from tests.support.transcript import result_text, results_sent, use


def page() -> Panel:
    return Panel(path="n.ipynb", cells=[cell("x = 1", cell_id="c1"), cell("y = 2", cell_id="c2")])


def run(tmp_path: Path, panel: Panel, approver: Any, *edits: dict[str, Any]) -> tuple[Agent, ScriptedModel]:
    bridge = connected_bridge(panel, tmp_path)
    model = ScriptedModel([[use("NotebookRead", "r1")], list(edits), "ok"])
    agent = Agent(model=model, cwd=tmp_path, notebook=bridge, approver=approver)
    agent.run("edit")
    return agent, model


def edit(tid: str, cell_id: str, source: str) -> dict[str, Any]:
    return use("NotebookEdit", tid, notebook_path="n.ipynb", cell_id=cell_id, new_source=source)


def answering_in_page(panel: Panel, outcome: str, reason: str = "") -> Any:
    """An approver that never answers itself; the person answers in the page meanwhile."""
    cancelled: list[str] = []

    async def approver(request: PermissionRequest) -> str:
        bridge = request.preview.review.nb  # type: ignore[union-attr]
        assert panel.open_proposals(), "the change is staged before the prompt asks"
        asyncio.get_running_loop().call_soon(bridge._on_data, bridge.front_end.comm, panel.decision(outcome, reason))
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(request.tool_use_id)
            raise
        return "allow"

    approver.cancelled = cancelled  # type: ignore[attr-defined]
    return approver


def test_a_rejection_in_the_page_reaches_the_model_and_leaves_the_cell(tmp_path: Path):
    panel = page()
    approver = answering_in_page(panel, "reject", "  keep x, the tests need it ")
    agent, model = run(tmp_path, panel, approver, edit("e1", "c1", "x = 41"))
    assert panel.sources() == ["x = 1", "y = 2"]
    told = results_sent(model, 2)["e1"]
    assert told.get("is_error") and "Their reason: keep x, the tests need it" in result_text(told)
    (proposal,) = panel.proposals.values()
    assert (proposal["kind"], proposal["cell_id"], proposal["source"], proposal["old_source"]) == (
        "replace",
        "c1",
        "x = 41",
        "x = 1",
    )
    assert (proposal["outcome"], proposal["reason"]) == ("rejected", "keep x, the tests need it")
    assert approver.cancelled == ["e1"]  # the prompt nobody answered was closed
    outcome = agent.trace[1].preview.review.outcome  # type: ignore[union-attr]
    assert outcome.text() == "rejected in the cell: keep x, the tests need it"


def test_an_answer_in_the_prompt_resolves_the_proposal_in_the_page(tmp_path: Path):
    panel = page()
    run(tmp_path, panel, lambda r: "allow", edit("e1", "c2", "y = 20"))
    assert panel.sources() == ["x = 1", "y = 20"]
    assert [p["outcome"] for p in panel.proposals.values()] == ["accepted"]


def test_stale_is_a_denial_that_asks_for_a_new_read(tmp_path: Path):
    panel = page()
    agent, model = run(tmp_path, panel, answering_in_page(panel, "stale"), edit("e1", "c1", "x = 41"))
    told = result_text(results_sent(model, 2)["e1"])
    assert "changed under review" in told and "NotebookRead" in told and "declined" not in told
    assert [p["outcome"] for p in panel.proposals.values()] == ["stale"]
    assert agent.trace[1].decision.source == "approver"  # type: ignore[union-attr]
    assert review_of(agent.trace[1]) == Reviewed(outcome="stale", what="replace cell 1 · x = 1 in n.ipynb")


def test_reject_all_answers_the_later_changes_of_the_run_without_asking(tmp_path: Path):
    panel = page()
    approver = answering_in_page(panel, "reject_all", "not today")
    agent, model = run(tmp_path, panel, approver, edit("e1", "c1", "x = 41"), edit("e2", "c2", "y = 20"))
    assert panel.sources() == ["x = 1", "y = 2"]
    assert len(panel.proposals) == 1 and approver.cancelled == ["e1"]  # the second was never staged or asked
    assert "not today" in result_text(results_sent(model, 2)["e2"])
    assert [o.text() for o in agent.notebook.reviews.outcomes] == [  # type: ignore[union-attr]
        "rejected in the cell: not today",
        "rejected (all): not today",
    ]
    # The run's record lists both, the second answered by "Reject all" without a prompt.
    edits = [review_of(r) for r in agent.trace if r.tool_name == "NotebookEdit"]
    assert [(e.outcome, e.reason) for e in edits if e is not None] == [
        ("rejected in the cell", "not today"),
        ("rejected (all)", "not today"),
    ]


def test_a_run_no_one_can_answer_does_not_stage_its_changes_in_the_page(tmp_path: Path):
    # --no-widgets or a background run: the proposal would be drawn in the cell and at once taken
    # back as cancelled; it is not drawn, and the model is told how the person could allow it.
    panel = page()
    approver = NonInteractiveApprover("widgets are switched off")
    _, model = run(tmp_path, panel, approver, edit("e1", "c1", "x = 41"))
    assert panel.proposals == {} and panel.sources() == ["x = 1", "y = 2"]
    told = result_text(results_sent(model, 2)["e1"])
    assert "non-interactive run (widgets are switched off)" in told and "NotebookEdit" in told
    assert [r.tool_use_id for r in approver.denied] == ["e1"]


def test_a_page_without_the_review_ops_leaves_the_prompt_alone_to_ask(tmp_path: Path):
    panel = page()
    panel.op_stage_proposal = None  # type: ignore[assignment,method-assign]  # an older extension
    asked: list[str] = []
    run(tmp_path, panel, lambda r: asked.append(r.tool_use_id) or "allow", edit("e1", "c1", "x = 41"))
    assert asked == ["e1"] and panel.sources() == ["x = 41", "y = 2"] and panel.proposals == {}


async def test_decisions_are_taken_once_for_open_proposals_with_known_outcomes():
    reviews = Reviews()
    future = reviews.expect("p1")
    assert not reviews.decided({"proposal_id": "p1", "outcome": "maybe"})
    assert not reviews.decided({"proposal_id": "zz", "outcome": "accept"})
    assert reviews.decided({"proposal_id": "p1", "outcome": "reject", "reason": " no "})
    assert not reviews.decided({"proposal_id": "p1", "outcome": "accept"})  # a second click
    got = await asyncio.wait_for(future, 5)
    assert (got.outcome, got.reason) == ("reject", "no")


def test_the_bridge_takes_decisions_only_from_the_open_page(tmp_path: Path):
    panel = page()
    bridge = connected_bridge(panel, tmp_path)

    async def main() -> None:
        future = bridge.reviews.expect("p1")
        comm = bridge.front_end.comm  # type: ignore[union-attr]
        other = {**panel.decision("accept", proposal_id="p1"), "path": "other.ipynb"}
        bridge._on_data(comm, other)
        await asyncio.sleep(0.01)
        assert not future.done()
        bridge._on_data(comm, panel.decision("accept", proposal_id="p1"))
        assert (await asyncio.wait_for(future, 5)).outcome == "accept"

    asyncio.run(main())
