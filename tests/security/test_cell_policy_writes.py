"""Cell policies hold on the notebook, whichever tool writes it (notebook/cell_guard.py).

A prompt-injected model that may not change an `agent:read-only` cell through NotebookEdit tries
the other doors: Write of the whole `.ipynb`, Edit of its JSON (through a hard link, since Edit
refuses the `.ipynb` name), deleting or moving the cell, a policy kept only in the notebook's
metadata, the open page, the metadata op. Each attack runs through the agent's lifecycle in the
permissive modes (acceptEdits, bypassPermissions) and must leave the notebook as it was, or reach
the person as a question naming the cell and the policy. Each has its control: with the guard
turned off, the same write lands on disk (or in the page).
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbformat import v4

from ipy_agent import Agent, ScriptedModel
from ipy_agent.contract.decision import CallDecision
from ipy_agent.contract.tool import ToolError
from ipy_agent.notebook.bridge import BridgeError
from ipy_agent.notebook.cell_guard import Verdict
from ipy_agent.tools.files.write import WriteTool
from ipy_agent.tools.notebook import live as live_module
from ipy_agent.tools.shared import cell_policies, edit_plan
from tests.support.frontend import Panel, cell, connected_bridge
from tests.support.tools import read, tool_ctx
from tests.support.transcript import all_results, result_text, use

PERMISSIVE = ["acceptEdits", "bypassPermissions"]


def write_notebook(path: Path, *, meta: dict[str, Any] | None = None, ids: bool = True) -> None:
    """load (free), keep (agent:read-only tag), train (agent:never-run tag), extra (free)."""
    nb = v4.new_notebook()
    cells = [
        v4.new_code_cell("import pandas as pd"),
        v4.new_code_cell("kept = 1", metadata={"tags": ["agent:read-only"]}),
        v4.new_code_cell("model = fit_slowly()", metadata={"tags": ["agent:never-run"]}),
        v4.new_code_cell("extra = 0"),
    ]
    for c, cell_id in zip(cells, ["load", "keep", "train", "extra"]):
        c.id = cell_id
    nb.cells = cells
    if meta:
        nb.metadata["ipy_agent"] = meta
    nbformat.write(nb, str(path))
    if not ids:
        data = json.loads(path.read_text())
        data["nbformat_minor"] = 4
        for c in data["cells"]:
            del c["id"]
        path.write_text(json.dumps(data, indent=1))


def rewritten(path: Path, change: Callable[[dict[str, Any]], None]) -> str:
    """The notebook's JSON as the model would Write it, after `change`."""
    data = json.loads(path.read_text())
    change(data)
    return json.dumps(data, indent=1)


class Person:
    """The approver: records what each prompt says, and answers `answer`."""

    def __init__(self, answer: str = "deny") -> None:
        self.answer = answer
        self.asked: list[str] = []

    def __call__(self, request: Any) -> str:
        self.asked.append(request.reason)
        return self.answer


def run_agent(tmp_path: Path, turns: list[Any], mode: str, person: Person | None = None) -> dict[str, Any]:
    agent = Agent(
        model=ScriptedModel([*turns, "Done."]), cwd=tmp_path, permission_mode=mode, approver=person or Person()
    )
    agent.run("go")
    return all_results(agent.messages)


def guard_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """The control: no cell policy is seen on any file write."""
    monkeypatch.setattr(cell_policies, "file_breaches", lambda old, new: Verdict())


def cell_of(path: Path, cell_id: str) -> Any:
    return next(c for c in nbformat.read(str(path), as_version=4).cells if c.id == cell_id)


# --- Write of the whole notebook -------------------------------------------------------------


@pytest.mark.parametrize("mode", PERMISSIVE)
@pytest.mark.parametrize("guarded", [True, False])
def test_write_of_the_notebook_that_rewrites_a_read_only_cell(tmp_path, monkeypatch, mode, guarded):
    nb = tmp_path / "analysis.ipynb"
    write_notebook(nb)
    content = rewritten(nb, lambda d: d["cells"][1].update(source="kept = 2  # the agent's"))
    if not guarded:
        guard_off(monkeypatch)
    before = nb.read_bytes()
    results = run_agent(
        tmp_path,
        [
            [use("Read", "r1", file_path="analysis.ipynb")],
            [use("Write", "w1", file_path="analysis.ipynb", content=content)],
        ],
        mode,
    )
    if guarded:
        text = result_text(results["w1"])
        assert results["w1"].get("is_error") and "read-only for the agent (its tag agent:read-only)" in text
        assert "cell 2 · kept = 1 (id 'keep')" in text.lower() and "its source" in text
        assert nb.read_bytes() == before
    else:  # control: the attack works without the guard
        assert cell_of(nb, "keep").source == "kept = 2  # the agent's"


@pytest.mark.parametrize("guarded", [True, False])
def test_the_write_itself_refuses_when_the_checks_before_it_are_gone(tmp_path, monkeypatch, guarded):
    """The validation and the permission check are turned off: the check right before the write
    still refuses (control: without it too, the write lands)."""
    nb = tmp_path / "analysis.ipynb"
    write_notebook(nb)
    content = rewritten(nb, lambda d: d["cells"][1]["metadata"].update(tags=[]))
    monkeypatch.setattr(edit_plan, "refusal_for", lambda *a: None)
    monkeypatch.setattr(edit_plan, "permission_for", lambda *a: None)
    if not guarded:
        monkeypatch.setattr(edit_plan, "check_before_write", lambda *a: None)
    results = run_agent(
        tmp_path,
        [
            [use("Read", "r1", file_path="analysis.ipynb")],
            [use("Write", "w1", file_path="analysis.ipynb", content=content)],
        ],
        "bypassPermissions",
    )
    tags = cell_of(nb, "keep").metadata.get("tags")
    if guarded:
        assert results["w1"].get("is_error") and "read-only for the agent" in result_text(results["w1"])
        assert tags == ["agent:read-only"]
    else:
        assert not tags


@pytest.mark.parametrize("mode", PERMISSIVE)
@pytest.mark.parametrize("guarded", [True, False])
@pytest.mark.parametrize("how", ["delete", "move", "delete-without-ids"])
def test_deleting_or_moving_a_read_only_cell_by_write(tmp_path, monkeypatch, mode, guarded, how):
    nb = tmp_path / "analysis.ipynb"
    write_notebook(nb, ids=how != "delete-without-ids")

    def change(d: dict[str, Any]) -> None:
        kept = d["cells"].pop(1)
        if how == "move":
            d["cells"].append(kept)

    content = rewritten(nb, change)
    if not guarded:
        guard_off(monkeypatch)
    before = nb.read_bytes()
    results = run_agent(
        tmp_path,
        [
            [use("Read", "r1", file_path="analysis.ipynb")],
            [use("Write", "w1", file_path="analysis.ipynb", content=content)],
        ],
        mode,
    )
    if guarded:
        text = result_text(results["w1"])
        assert results["w1"].get("is_error") and "read-only for the agent" in text
        assert ("it would move" if how == "move" else "it would be deleted") in text
        assert nb.read_bytes() == before
    else:
        sources = [c.source for c in nbformat.read(str(nb), as_version=4).cells]
        if how == "move":
            assert sources[-1] == "kept = 1"
        else:
            assert "kept = 1" not in sources


@pytest.mark.parametrize("answer", ["deny", "allow"])
def test_deleting_a_never_run_cell_by_write_asks_the_person_even_in_bypass_mode(tmp_path, monkeypatch, answer):
    nb = tmp_path / "analysis.ipynb"
    write_notebook(nb)
    content = rewritten(nb, lambda d: d["cells"].pop(2))
    person = Person(answer)
    run_agent(
        tmp_path,
        [
            [use("Read", "r1", file_path="analysis.ipynb")],
            [use("Write", "w1", file_path="analysis.ipynb", content=content)],
        ],
        "bypassPermissions",
        person,
    )
    [question] = person.asked
    assert "Cell 3 · model = fit_slowly() (id 'train') (its tag agent:never-run): it would be deleted" in question
    assert "in every mode" in question
    assert ("model = fit_slowly()" in nb.read_text()) is (answer == "deny")  # the person decides
    # Control: without the guard, bypassPermissions writes it without asking anyone.
    write_notebook(nb)
    guard_off(monkeypatch)
    person = Person("deny")
    run_agent(
        tmp_path,
        [
            [use("Read", "r2", file_path="analysis.ipynb")],
            [use("Write", "w2", file_path="analysis.ipynb", content=content)],
        ],
        "bypassPermissions",
        person,
    )
    assert person.asked == [] and "model = fit_slowly()" not in nb.read_text()


# --- Edit of the notebook's JSON ---------------------------------------------------------------


@pytest.mark.parametrize("mode", PERMISSIVE)
@pytest.mark.parametrize("guarded", [True, False])
def test_edit_of_the_json_that_strips_the_read_only_tag(tmp_path, monkeypatch, mode, guarded):
    """Edit refuses a `.ipynb` name; a hard link gives the same notebook another name."""
    nb = tmp_path / "analysis.ipynb"
    write_notebook(nb)
    os.link(nb, tmp_path / "notes.json")
    if not guarded:
        guard_off(monkeypatch)
    before = nb.read_bytes()
    results = run_agent(
        tmp_path,
        [
            [use("Read", "r1", file_path="analysis.ipynb")],
            [use("Edit", "e0", file_path="analysis.ipynb", old_string='"agent:read-only"', new_string='"ok"')],
            [use("Read", "r2", file_path="notes.json")],
            [use("Edit", "e1", file_path="notes.json", old_string='"agent:read-only"', new_string='"reviewed"')],
        ],
        mode,
    )
    assert results["e0"].get("is_error") and "Use NotebookEdit" in result_text(results["e0"])
    if guarded:
        assert results["e1"].get("is_error") and "read-only for the agent" in result_text(results["e1"])
        assert nb.read_bytes() == before
    else:
        assert cell_of(nb, "keep").metadata["tags"] == ["reviewed"]


# --- a policy held in the notebook's metadata -------------------------------------------------


@pytest.mark.parametrize("tool", ["NotebookEdit", "Write"])
@pytest.mark.parametrize("guarded", [True, False])
def test_a_policy_held_only_in_the_metadata_is_honoured_on_the_file(tmp_path, monkeypatch, tool, guarded):
    nb = tmp_path / "analysis.ipynb"
    write_notebook(nb, meta={"cell_policies": {"extra": ["agent:read-only"]}})
    if tool == "Write":
        call = use(
            "Write",
            "w1",
            file_path="analysis.ipynb",
            content=rewritten(nb, lambda d: d["cells"][3].update(source="extra = 99")),
        )
    else:
        call = use("NotebookEdit", "w1", notebook_path="analysis.ipynb", cell_id="extra", new_source="extra = 99")
    if not guarded:
        guard_off(monkeypatch)
    results = run_agent(tmp_path, [[use("Read", "r1", file_path="analysis.ipynb")], [call]], "bypassPermissions")
    if guarded:
        text = result_text(results["w1"])
        assert results["w1"].get("is_error") and "the notebook's policy for this cell agent:read-only" in text
        assert cell_of(nb, "extra").source == "extra = 0"
    else:
        assert cell_of(nb, "extra").source == "extra = 99"


# --- the open page ----------------------------------------------------------------------------


def page() -> Panel:
    return Panel(
        path="nb.ipynb",
        cells=[
            cell("import pandas as pd", cell_id="c0"),
            cell("extra = 0", cell_id="c1"),
            cell("model = fit_slowly()", cell_id="train", tags=["agent:never-run"]),
        ],
        metadata={"ipy_agent": {"cell_policies": {"c1": ["agent:read-only"]}}},
    )


def live_run(
    tmp_path: Path, panel: Panel, calls: list[Any], person: Person, standing: str | None = None
) -> dict[str, Any]:
    (tmp_path / "nb.ipynb").write_text("{}")

    async def main() -> dict[str, Any]:
        bridge = connected_bridge(panel, tmp_path)
        if standing:
            bridge.reviews.standing = standing  # an earlier "Accept all" of this run
        agent = Agent(
            model=ScriptedModel([[use("NotebookRead", "r1", notebook_path="nb.ipynb")], calls, "Done."]),
            cwd=tmp_path,
            notebook=bridge,
            permission_mode="bypassPermissions",
            approver=person,
        )
        await agent.arun("go")
        return all_results(agent.messages)

    return asyncio.run(main())


@pytest.mark.parametrize("guarded", [True, False])
def test_the_open_page_honours_a_read_only_policy_held_in_its_metadata(tmp_path, monkeypatch, guarded):
    panel = page()
    if not guarded:
        monkeypatch.setattr(live_module, "cell_edit_breaches", lambda *a, **k: Verdict())
    results = live_run(
        tmp_path,
        panel,
        [use("NotebookEdit", "e1", notebook_path="nb.ipynb", cell_id="c1", new_source="extra = 1")],
        Person("allow"),
    )
    if guarded:
        text = result_text(results["e1"])
        assert results["e1"].get("is_error") and "the notebook's policy for this cell agent:read-only" in text
        assert panel.sources()[1] == "extra = 0"
    else:
        assert panel.sources()[1] == "extra = 1"


@pytest.mark.parametrize("guarded", [True, False])
def test_deleting_a_never_run_cell_in_the_page_asks_even_after_accept_all(tmp_path, monkeypatch, guarded):
    panel = page()
    if not guarded:
        monkeypatch.setattr(live_module, "cell_edit_breaches", lambda *a, **k: Verdict())
    person = Person("deny")
    live_run(
        tmp_path,
        panel,
        [use("NotebookEdit", "e1", notebook_path="nb.ipynb", cell_id="train", edit_mode="delete")],
        person,
        standing="accept",
    )
    if guarded:
        [question] = person.asked
        assert (
            "cell 3 · model = fit_slowly() (id 'train') (its tag agent:never-run): it would be deleted"
            in question.lower()
        )
        assert "model = fit_slowly()" in panel.sources()
    else:  # bypassPermissions and nobody asked: the cell is gone
        assert person.asked == [] and "model = fit_slowly()" not in panel.sources()


def test_the_metadata_op_refuses_to_lift_a_policy(tmp_path):
    panel = page()

    async def main() -> None:
        bridge = connected_bridge(panel, tmp_path)
        with pytest.raises(BridgeError, match="agent:read-only would be removed"):
            await bridge.set_agent_metadata({"instructions": "Be quick."})
        assert panel.metadata["ipy_agent"]["cell_policies"] == {"c1": ["agent:read-only"]}
        # Adding is the person's "Never run this cell": it goes through.
        await bridge.set_agent_metadata({"cell_policies": {"c1": ["agent:read-only", "agent:never-run"]}})
        # Control: the same op sent without the guard lands.
        await bridge.request("set_agent_metadata", metadata={"instructions": "Be quick."})
        assert panel.metadata["ipy_agent"] == {"instructions": "Be quick."}

    asyncio.run(main())


@pytest.mark.parametrize("guarded", [True, False])
async def test_a_write_that_lifts_a_policy_lands_only_if_a_person_approved_it(tmp_path, monkeypatch, guarded):
    """A call that reaches the writer without the permission decision (a direct call: no one
    approved it) cannot delete a never-run cell; control: without the write-time check it can."""
    nb = tmp_path / "analysis.ipynb"
    write_notebook(nb)
    ctx = tool_ctx(tmp_path)
    await read(ctx, nb)
    content = rewritten(nb, lambda d: d["cells"].pop(2))
    tool = WriteTool()
    inp = tool.input_model(file_path=str(nb), content=content)
    assert await tool.validate_input(inp, ctx) is None  # only a read-only cell is refused this early
    if not guarded:
        monkeypatch.setattr(edit_plan, "check_before_write", lambda *a: None)
        await tool.call(inp, ctx)
        assert "fit_slowly" not in nb.read_text()
        return
    with pytest.raises(ToolError, match="no person approved this call"):
        await tool.call(inp, ctx)
    assert "fit_slowly" in nb.read_text()
    # the person answered the prompt that named the cell and the policy
    await tool.call(inp, ctx, CallDecision(source="person"))
    assert "fit_slowly" not in nb.read_text()
