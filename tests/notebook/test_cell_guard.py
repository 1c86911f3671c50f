"""The one check of a notebook write against the person's cell policies (notebook/cell_guard.py):
which protected cells a write changes, moves or deletes, which policies it removes, and what each
policy demands. Every case has its control: the same write on an unprotected cell passes."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from ipy_agent.notebook.cell_guard import breaches, file_breaches


def code(source: str, cell_id: str | None, tags: list[str] | None = None) -> dict[str, Any]:
    cell: dict[str, Any] = {
        "cell_type": "code",
        "source": source,
        "metadata": {"tags": tags} if tags else {},
        "outputs": [{"output_type": "stream", "name": "stdout", "text": ["1\n"]}],
        "execution_count": 1,
    }
    if cell_id is not None:
        cell["id"] = cell_id
    return cell


def notebook(*cells: dict[str, Any], meta: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"cells": list(cells), "metadata": {"ipy_agent": meta} if meta else {}, "nbformat": 4}


def demand(before: dict[str, Any], after: dict[str, Any]) -> str | None:
    return breaches(before, after).demand


@pytest.mark.parametrize("ids", [True, False])
def test_a_read_only_cell_changed_moved_deleted_or_untagged_is_refused(ids: bool):
    def nb(*order: str, tags: bool = True, source: str = "kept = 1") -> dict[str, Any]:
        cells = {
            "a": code("a = 1", "a" if ids else None),
            "r": code(source, "r" if ids else None, ["agent:read-only"] if tags else None),
            "b": code("b = 2", "b" if ids else None),
        }
        return notebook(*(cells[k] for k in order))

    before = nb("a", "r", "b")
    assert demand(before, nb("a", "r", "b", source="kept = 2")) == "refuse"  # source
    assert demand(before, nb("a", "r", "b", tags=False)) == "refuse"  # tag stripped
    assert demand(before, nb("a", "b")) == "refuse"  # deleted
    assert demand(before, nb("r", "a", "b")) == "refuse"  # moved up
    assert demand(before, nb("a", "b", "r")) == "refuse"  # moved down
    outputs = nb("a", "r", "b")
    outputs["cells"][1]["outputs"] = []
    assert demand(before, outputs) == "refuse"
    # Controls: the other cells are the agent's to change, delete, and insert around.
    inserted = nb("a", "r", "b")
    inserted["cells"].insert(1, code("new = 0", "n" if ids else None))
    assert demand(before, inserted) is None
    assert demand(before, nb("r", "b")) is None
    changed = nb("a", "r", "b")
    changed["cells"][2]["source"] = "b = 3"
    assert demand(before, changed) is None
    # nbformat's list-of-lines form is the same source.
    lines = copy.deepcopy(before)
    lines["cells"][1]["source"] = ["kept = 1"]
    lines["cells"][1]["outputs"][0]["text"] = "1\n"
    assert demand(before, lines) is None


def test_a_policy_held_in_the_notebook_metadata_counts_as_a_tag():
    before = notebook(code("x = 1", "c1"), meta={"cell_policies": {"c1": ["agent:read-only"]}})
    after = copy.deepcopy(before)
    after["cells"][0]["source"] = "x = 2"
    verdict = breaches(before, after)
    assert verdict.demand == "refuse"
    assert "the notebook's policy for this cell agent:read-only" in verdict.refusal("a.ipynb")
    assert "cell 1 · x = 1 (id 'c1')" in verdict.refusal("a.ipynb").lower()
    # Removing the metadata entry (the cell unchanged) is refused too; the notebook-wide list the same.
    dropped = copy.deepcopy(before)
    dropped["metadata"] = {}
    assert demand(before, dropped) == "refuse"
    wide = notebook(code("x = 1", "c1"), meta={"policy": ["agent:read-only"]})
    assert demand(wide, after) == "refuse"
    # Control: without the metadata the same change passes.
    assert demand(notebook(code("x = 1", "c1")), after) is None


def test_never_run_and_ask_let_the_cell_change_but_removing_them_asks():
    before = notebook(
        code("train()", "t", ["agent:never-run"]), code("q()", "q"), meta={"cell_policies": {"q": ["agent:ask"]}}
    )
    edited = copy.deepcopy(before)
    edited["cells"][0]["source"] = "train(epochs=1)"
    assert demand(before, edited) is None
    untagged = copy.deepcopy(before)
    untagged["cells"][0]["metadata"] = {}
    verdict = breaches(before, untagged)
    assert verdict.demand == "ask" and "agent:never-run would be removed" in verdict.question("a.ipynb")
    assert demand(before, notebook(before["cells"][1], meta=before["metadata"]["ipy_agent"])) == "ask"  # deleted
    no_meta = copy.deepcopy(before)
    no_meta["metadata"] = {}
    assert "agent:ask" in breaches(before, no_meta).question("a.ipynb")


def test_a_write_that_is_not_a_notebook_deletes_every_protected_cell():
    raw = json.dumps(notebook(code("x = 1", "c", ["agent:read-only"]))).encode()
    assert file_breaches(raw, b"not json").demand == "refuse"
    assert file_breaches(raw, raw).demand is None
    assert file_breaches(None, b"anything").demand is None  # a new file protects nothing yet
    plain = json.dumps(notebook(code("x = 1", "c"))).encode()
    assert file_breaches(plain, b"not json").demand is None


def test_a_timeout_raised_or_removed_asks_and_one_lowered_does_not():
    before = notebook(code("fit()", "f", ["agent:timeout=60"]))

    def with_tags(tags: list[str]) -> dict[str, Any]:
        after = copy.deepcopy(before)
        after["cells"][0]["metadata"] = {"tags": tags} if tags else {}
        return after

    assert demand(before, with_tags(["agent:timeout=600"])) == "ask"
    assert demand(before, with_tags([])) == "ask"
    assert demand(before, with_tags(["agent:timeout=30"])) is None
