"""NotebookEdit: each edit mode on a real notebook file, validated by nbformat after every write."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import nbformat
import pytest
from nbformat import v4

from ipy_agent import Agent, ScriptedModel
from ipy_agent.contract.tool import ToolError
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.tools.files.read import ReadTool
from ipy_agent.tools.notebook.edit import NotebookEditTool
from tests.support.tools import assert_edit_contract, fail_os, leftovers, read, run
from tests.support.transcript import all_results


def make_notebook(path: Path, *, minor: int = 5, extra_cells: int = 0) -> list[str]:
    """code cell (with output and execution count), markdown cell, code cell; returns the ids."""
    nb = v4.new_notebook()
    code = v4.new_code_cell("x = 1\nprint(x)", execution_count=3)
    code.outputs = [v4.new_output("stream", name="stdout", text="1\n")]
    nb.cells = [code, v4.new_markdown_cell("# Title"), v4.new_code_cell("y = 2")]
    nb.cells += [v4.new_code_cell(f"z{i} = {i}") for i in range(extra_cells)]
    if minor < 5:
        nb.nbformat_minor = minor
        for c in nb.cells:
            del c["id"]
    nbformat.write(nb, str(path))
    return [c.get("id") for c in nb.cells]


def on_disk(path: Path):
    nb = nbformat.read(str(path), as_version=nbformat.NO_CONVERT)
    nbformat.validate(nb)  # every write must leave a valid notebook
    return nb


@pytest.fixture
async def nb_path(ctx, tmp_path) -> Path:
    p = tmp_path / "analysis.ipynb"
    make_notebook(p)
    await read(ctx, p)
    return p


async def nbedit(ctx: ToolContext, **fields):
    fields.setdefault("notebook_path", "analysis.ipynb")
    return await run(NotebookEditTool(), ctx, **fields)


# --- replace ----------------------------------------------------------------------------------


async def test_replace_code_cell_clears_outputs_and_says_so(ctx, nb_path):
    first = on_disk(nb_path).cells[0].id
    tool = NotebookEditTool()
    inp = tool.input_model(notebook_path="analysis.ipynb", cell_id=first, new_source="x = 2\nprint(x * 2)")
    pv = await tool.preview(inp, ctx)
    assert pv.notes == ("outputs will be cleared",)
    assert "-x = 1\n-print(x)\n+x = 2\n+print(x * 2)\n" in pv.diff and (pv.added, pv.removed) == (2, 2)
    assert on_disk(nb_path).cells[0].outputs  # the preview wrote nothing
    r = await nbedit(ctx, cell_id=first, new_source="x = 2\nprint(x * 2)")
    cell = on_disk(nb_path).cells[0]
    assert cell.source == "x = 2\nprint(x * 2)" and cell.outputs == [] and cell.execution_count is None
    assert "outputs and execution count were cleared" in r.content and f"{first!r} (cell-0)" in r.content
    assert r.summary == f"Edited analysis.ipynb: replaced cell {first} (outputs cleared)"


async def test_a_cell_tagged_read_only_in_the_file_is_refused(ctx, tmp_path):
    p = tmp_path / "analysis.ipynb"
    make_notebook(p)
    nb = on_disk(p)
    nb.cells[0].metadata["tags"] = ["agent:read-only"]
    nbformat.write(nb, str(p))
    await read(ctx, p)
    before = p.read_bytes()
    for fields in ({"new_source": "x = 2"}, {"edit_mode": "delete", "new_source": ""}):
        r = await nbedit(ctx, cell_id=nb.cells[0].id, **fields)
        assert r.error is not None and "read-only for the agent (its tag agent:read-only)" in r.error
    assert p.read_bytes() == before
    r = await nbedit(ctx, cell_id=nb.cells[2].id, new_source="y = 3")  # other cells are the agent's to edit
    assert r.error is None and on_disk(p).cells[2].source == "y = 3"


async def test_replace_markdown_cell_has_no_outputs_note(ctx, nb_path):
    tool = NotebookEditTool()
    inp = tool.input_model(notebook_path="analysis.ipynb", cell_id="cell-1", new_source="# New title")
    assert (await tool.preview(inp, ctx)).notes == ()
    r = await nbedit(ctx, cell_id="cell-1", new_source="# New title")
    nb = on_disk(nb_path)
    assert nb.cells[1].source == "# New title" and nb.cells[0].outputs  # neighbours untouched
    assert "cleared" not in r.content


async def test_replace_can_change_the_cell_type_keeping_its_id(ctx, nb_path):
    cid = on_disk(nb_path).cells[0].id
    await nbedit(ctx, cell_id=cid, new_source="Some *prose*", cell_type="markdown")
    cell = on_disk(nb_path).cells[0]
    assert cell.cell_type == "markdown" and cell.id == cid and "outputs" not in cell


async def test_source_is_written_the_way_jupyter_writes_it(ctx, nb_path):
    await nbedit(ctx, cell_id="cell-2", new_source="a = 1\nb = 2\n")
    text = nb_path.read_text()
    data = json.loads(text)
    assert data["cells"][2]["source"] == ["a = 1\n", "b = 2\n"]
    assert text.startswith('{\n "cells": [\n  {\n') and text.endswith("}\n")


# --- insert -----------------------------------------------------------------------------------


async def test_insert_goes_after_the_given_cell(ctx, nb_path):
    ids = [c.id for c in on_disk(nb_path).cells]
    r = await nbedit(ctx, edit_mode="insert", cell_id=ids[0], cell_type="markdown", new_source="Note")
    nb = on_disk(nb_path)
    assert [c.source for c in nb.cells] == ["x = 1\nprint(x)", "Note", "# Title", "y = 2"]
    new = nb.cells[1]
    assert new.cell_type == "markdown" and new.id not in ids and len(new.id) >= 8
    assert f"id {new.id!r} after cell {ids[0]!r}" in r.content and "cell-1" in r.content
    assert r.summary == f"Edited analysis.ipynb: inserted markdown cell {new.id}"


async def test_insert_without_cell_id_goes_first(ctx, nb_path):
    r = await nbedit(ctx, edit_mode="insert", cell_type="code", new_source="import os")
    nb = on_disk(nb_path)
    assert nb.cells[0].source == "import os" and nb.cells[0].cell_type == "code"
    assert nb.cells[0].outputs == [] and nb.cells[0].execution_count is None
    assert "as the first cell" in r.content and len(nb.cells) == 4


async def test_insert_after_the_last_cell_by_index(ctx, nb_path):
    await nbedit(ctx, edit_mode="insert", cell_id="cell-2", cell_type="code", new_source="end()")
    assert on_disk(nb_path).cells[-1].source == "end()"


async def test_insert_requires_a_cell_type(ctx, nb_path):
    r = await nbedit(ctx, edit_mode="insert", new_source="x")
    assert "cell_type is required" in r.error


async def test_insert_into_a_4_4_notebook_upgrades_it(ctx, tmp_path):
    p = tmp_path / "old.ipynb"
    make_notebook(p, minor=4)
    await read(ctx, p)
    tool = NotebookEditTool()
    inp = tool.input_model(
        notebook_path="old.ipynb", edit_mode="insert", cell_id="cell-0", cell_type="code", new_source="new()"
    )
    assert any("4.5" in n for n in (await tool.preview(inp, ctx)).notes)
    r = await run(tool, ctx, **inp.model_dump())
    nb = on_disk(p)
    assert nb.nbformat_minor == 5 and all(c.get("id") for c in nb.cells)
    assert nb.cells[1].source == "new()" and "upgraded to nbformat 4.5" in r.content


async def test_replace_in_a_4_4_notebook_keeps_its_version(ctx, tmp_path):
    p = tmp_path / "old.ipynb"
    make_notebook(p, minor=4)
    await read(ctx, p)
    await run(NotebookEditTool(), ctx, notebook_path="old.ipynb", cell_id="cell-2", new_source="y = 3")
    nb = on_disk(p)
    assert nb.nbformat_minor == 4 and "id" not in nb.cells[2] and nb.cells[2].source == "y = 3"


# --- delete -----------------------------------------------------------------------------------


async def test_delete_by_id_and_by_index(ctx, nb_path):
    ids = [c.id for c in on_disk(nb_path).cells]
    r = await nbedit(ctx, edit_mode="delete", cell_id=ids[1])
    assert [c.id for c in on_disk(nb_path).cells] == [ids[0], ids[2]]
    assert "2 cells remain" in r.content and r.summary == f"Edited analysis.ipynb: deleted cell {ids[1]}"
    await nbedit(ctx, edit_mode="delete", cell_id="cell-0")
    assert [c.id for c in on_disk(nb_path).cells] == [ids[2]]


async def test_replace_and_delete_need_a_cell_id(ctx, nb_path):
    for mode in ("replace", "delete"):
        r = await nbedit(ctx, edit_mode=mode, new_source="x")
        assert "cell_id is required" in r.error


# --- wrong ids, wrong files, read state ---------------------------------------------------------


async def test_unknown_cell_id_names_it_and_lists_valid_ids(ctx, nb_path):
    ids = [c.id for c in on_disk(nb_path).cells]
    r = await nbedit(ctx, cell_id="nope", new_source="x")
    assert "'nope' not found" in r.error
    for i, cid in enumerate(ids):
        assert f"{cid!r} (cell-{i})" in r.error
    assert "cell-9" not in r.error


async def test_unknown_id_in_a_long_notebook_lists_the_first_ten(ctx, tmp_path):
    p = tmp_path / "long.ipynb"
    ids = make_notebook(p, extra_cells=20)
    await read(ctx, p)
    r = await run(NotebookEditTool(), ctx, notebook_path="long.ipynb", cell_id="cell-99", new_source="x")
    assert "'cell-99' not found" in r.error and f"{ids[9]!r} (cell-9)" in r.error
    assert ids[10] not in r.error and "23 cells in all" in r.error


async def test_not_read_yet_and_changed_since_read(ctx, tmp_path):
    p = tmp_path / "analysis.ipynb"
    make_notebook(p)
    r = await nbedit(ctx, cell_id="cell-0", new_source="x")
    assert "has not been read yet" in r.error
    await read(ctx, p)
    nb = nbformat.read(str(p), as_version=4)
    nb.cells[1].source = "# Changed by the person"
    nbformat.write(nb, str(p))
    r = await nbedit(ctx, cell_id="cell-0", new_source="x")
    assert "changed since you read it" in r.error
    assert on_disk(p).cells[0].source == "x = 1\nprint(x)"


async def test_change_after_validation_is_caught_by_call(ctx, nb_path):
    tool = NotebookEditTool()
    inp = tool.input_model(notebook_path="analysis.ipynb", cell_id="cell-0", new_source="mine")
    assert await tool.validate_input(inp, ctx) is None
    nb_path.write_text(nb_path.read_text().replace("# Title", "# Theirs"))
    with pytest.raises(ToolError, match="changed since you read it"):
        await tool.call(inp, ctx)
    assert on_disk(nb_path).cells[1].source == "# Theirs"


async def test_edits_in_a_row_need_no_new_read(ctx, nb_path):
    await nbedit(ctx, cell_id="cell-0", new_source="a")
    await nbedit(ctx, edit_mode="insert", cell_id="cell-0", cell_type="code", new_source="b")
    r = await nbedit(ctx, edit_mode="delete", cell_id="cell-2")
    assert r.error is None
    assert [c.source for c in on_disk(nb_path).cells] == ["a", "b", "y = 2"]


async def test_wrong_files_are_refused(ctx, tmp_path):
    (tmp_path / "a.py").write_text("x\n")
    assert "Use Edit or Write" in (await nbedit(ctx, notebook_path="a.py", cell_id="cell-0")).error
    assert "does not exist" in (await nbedit(ctx, notebook_path="none.ipynb", cell_id="cell-0")).error
    bad = tmp_path / "bad.ipynb"
    bad.write_text("{not json")
    ctx.read_state.record(bad, content=bad.read_bytes())
    assert "not valid notebook JSON" in (await nbedit(ctx, notebook_path="bad.ipynb", cell_id="cell-0")).error


async def test_mode_bits_and_atomic_failure(ctx, nb_path, monkeypatch):
    nb_path.chmod(0o600)
    ctx.read_state.record(nb_path, content=nb_path.read_bytes())
    before = nb_path.read_bytes()
    fail_os(monkeypatch, "replace")
    tool = NotebookEditTool()
    with pytest.raises(OSError):
        await tool.call(tool.input_model(notebook_path="analysis.ipynb", cell_id="cell-0", new_source="z"), ctx)
    monkeypatch.undo()
    assert nb_path.read_bytes() == before and leftovers(nb_path.parent) == []
    await nbedit(ctx, cell_id="cell-0", new_source="z")
    assert stat.S_IMODE(nb_path.stat().st_mode) == 0o600 and on_disk(nb_path).cells[0].source == "z"


def test_flags_rules_and_prompt(ctx, tmp_path):
    tool = NotebookEditTool()
    inp = tool.input_model(notebook_path="nbs/a.ipynb", cell_id="cell-0", new_source="")
    assert_edit_contract(tool, inp, ctx, path=tmp_path / "nbs/a.ipynb", rule="Edit(./nbs/a.ipynb)")
    text = tool.description(ctx)
    assert "Read the notebook first" in text and "cell-N" in text and "Edit or Write" in text
    assert "first cell" in text and "cleared" in text


def test_agent_notebook_edit_before_read_then_after(tmp_path):
    p = tmp_path / "analysis.ipynb"
    make_notebook(p)
    use = {
        "type": "tool_use",
        "name": "NotebookEdit",
        "input": {"notebook_path": "analysis.ipynb", "cell_id": "cell-1", "new_source": "# Results"},
    }
    model = ScriptedModel(
        [
            [{**use, "id": "t1"}],
            [{"type": "tool_use", "id": "t2", "name": "Read", "input": {"file_path": "analysis.ipynb"}}],
            [{**use, "id": "t3"}],
            "done",
        ]
    )
    agent = Agent(model=model, cwd=tmp_path, permission_mode="acceptEdits", tools=[ReadTool(), NotebookEditTool()])
    agent.run("retitle")
    results = all_results(agent.messages)
    assert results["t1"].get("is_error") and "has not been read yet" in str(results["t1"]["content"])
    assert not results["t3"].get("is_error") and on_disk(p).cells[1].source == "# Results"


# --- one cell spliced: the rest of the file stays as it was -----------------------------------


@pytest.mark.parametrize(
    "fields",
    [
        {"cell_id": "cell-1", "new_source": "# New\nbody"},
        {"cell_id": "cell-0", "new_source": "x = 9"},
        {"cell_id": "cell-0", "new_source": "Prose", "cell_type": "markdown"},
        {"edit_mode": "insert", "cell_type": "code", "new_source": "first = 1"},
        {"edit_mode": "insert", "cell_id": "cell-2", "cell_type": "markdown", "new_source": "last"},
        {"edit_mode": "delete", "cell_id": "cell-0"},
        {"edit_mode": "delete", "cell_id": "cell-2"},
    ],
    ids=lambda f: "-".join(str(v) for v in f.values())[:40],
)
async def test_the_file_is_what_nbformat_would_write(ctx, nb_path, fields):
    r = await nbedit(ctx, **fields)
    assert r.error is None, r.error
    text = nb_path.read_text()
    assert text == nbformat.v4.writes(nbformat.reads(text, as_version=4)) + "\n"


async def test_only_the_edited_cell_changes_in_a_file_jupyter_did_not_write(ctx, tmp_path):
    path = tmp_path / "compact.ipynb"
    cells = [
        {
            "cell_type": "code",
            "execution_count": 1,
            "id": f"c{i}",
            "metadata": {"trusted": True},
            "outputs": [],
            "source": f"v = {i}",
        }
        for i in range(3)
    ]
    raw = json.dumps(
        {"cells": cells, "metadata": {"kernelspec": {"name": "python3"}}, "nbformat": 4, "nbformat_minor": 5}
    )
    path.write_bytes(b"\xef\xbb\xbf" + raw.replace(", ", ",\r\n").encode())  # a BOM, CRLF, compact
    await read(ctx, path)
    before = path.read_bytes()
    assert (await nbedit(ctx, notebook_path=str(path), cell_id="c1", new_source="v = 10")).error is None
    after = path.read_bytes()
    assert after.startswith(b"\xef\xbb\xbf") and after.count(b"\r\n") > 0
    data = json.loads(after.decode("utf-8-sig"))
    assert [c["source"] for c in data["cells"]] == ["v = 0", ["v = 10"], "v = 2"]
    assert data["cells"][1]["execution_count"] is None and "trusted" not in data["cells"][1]["metadata"]
    # Everything before the edited cell and after it is byte for byte what it was.
    start = before.index(b'{"cell_type": "code",\r\n"execution_count": 1,\r\n"id": "c1"')
    assert after[:start] == before[:start]
    tail = before[before.index(b'{"cell_type": "code",\r\n"execution_count": 1,\r\n"id": "c2"') :]
    assert after.endswith(tail)


async def test_edits_of_a_notebook_with_no_cells_and_of_its_only_cell(ctx, tmp_path):
    path = tmp_path / "empty.ipynb"
    nbformat.write(v4.new_notebook(), str(path))
    await read(ctx, path)
    assert (
        await nbedit(ctx, notebook_path=str(path), edit_mode="insert", cell_type="code", new_source="a")
    ).error is None
    assert [c.source for c in on_disk(path).cells] == ["a"]
    assert (await nbedit(ctx, notebook_path=str(path), edit_mode="delete", cell_id="cell-0")).error is None
    assert on_disk(path).cells == []
    text = path.read_text()
    assert text == nbformat.v4.writes(nbformat.reads(text, as_version=4)) + "\n"


async def test_a_type_change_shows_in_the_prompt_title_and_diff(ctx, nb_path):
    tool = NotebookEditTool()
    inp = tool.input_model(notebook_path="analysis.ipynb", cell_id="cell-2", new_source="y = 2", cell_type="markdown")
    pv = await tool.preview(inp, ctx)
    assert "(code → markdown)" in pv.title
    assert "-[code cell]\n+[markdown cell]\n" in pv.diff and (pv.added, pv.removed) == (1, 1)


async def test_a_type_change_shows_in_the_live_notebooks_prompt_too(ctx, tmp_path):
    from ipy_agent.tools.notebook.edit_live import preview_live
    from ipy_agent.tools.notebook.live import record_cells

    class OpenNotebook:  # the bridge's part preview_live uses
        path = tmp_path / "open.ipynb"
        display_path = "open.ipynb"

        async def read_cells(self, ids):
            return [{"id": "a1", "cell_type": "markdown", "source": "same text", "index": 0}]

    nb = OpenNotebook()
    record_cells(ctx, nb, await nb.read_cells(["a1"]))
    inp = NotebookEditTool().input_model(
        notebook_path="open.ipynb", cell_id="a1", new_source="same text", cell_type="code"
    )
    pv = await preview_live(inp, ctx, nb)
    assert "(markdown → code)" in pv.title and "-[markdown cell]\n+[code cell]\n" in pv.diff


async def test_a_live_edit_does_not_wait_for_the_pages_scroll_and_stays_connected(tmp_path):
    """JupyterLab answers scroll_to when its scroll has ended, which in a long notebook took
    seconds; an edit (already made) must not wait for it, nor take a slow page for a closed one."""
    from ipy_agent.tools.notebook.live import record_cells
    from tests.support.frontend import Panel, cell, connected_bridge
    from tests.support.tools import tool_ctx

    panel = Panel(path="open.ipynb", cells=[cell("x = 1", cell_id="a"), cell("y = 2", cell_id="b")])
    answer, scrolls = panel.answer, []

    def never_scrolls(req):  # the page is still scrolling: no reply to scroll_to
        if req.get("op") != "scroll_to":
            return answer(req)
        scrolls.append(req["args"]["cell_id"])
        return None

    panel.answer = never_scrolls  # type: ignore[method-assign]
    bridge = connected_bridge(panel, tmp_path)
    ctx = tool_ctx(tmp_path, notebook=bridge)
    record_cells(ctx, bridge, await bridge.read_cells(["b"]))
    tool = NotebookEditTool()
    out = await tool.call(tool.input_model(notebook_path="open.ipynb", cell_id="b", new_source="y = 3"), ctx)
    assert out.live and out.index == 1
    assert panel.sources() == ["x = 1", "y = 3"]
    assert scrolls == ["b"]  # the view still follows the edit
    assert bridge.connected


async def test_a_live_replace_does_not_list_the_whole_notebook_again(tmp_path):
    """A replace keeps the cells and their order: the page is asked for the edited cell and the
    edit, not for the listing of every cell (the largest answer of a long notebook)."""
    from ipy_agent.tools.notebook.live import record_cells
    from tests.support.frontend import Panel, cell, connected_bridge
    from tests.support.tools import tool_ctx

    panel = Panel(path="open.ipynb", cells=[cell(f"x{i} = {i}", cell_id=f"c{i}") for i in range(50)])
    bridge = connected_bridge(panel, tmp_path)
    ctx = tool_ctx(tmp_path, notebook=bridge)
    record_cells(ctx, bridge, await bridge.read_cells(["c7"]))
    panel.requests.clear()
    tool = NotebookEditTool()
    inp = tool.input_model(notebook_path="open.ipynb", cell_id="c7", new_source="x7 = 70")
    assert await tool.validate_input(inp, ctx) is None
    out = await tool.call(inp, ctx)
    assert panel.sources()[7] == "x7 = 70" and out.index == 7
    assert "list_cells" not in [r["op"] for r in panel.requests]
    text = tool.map_result(out, "t1")["content"]
    assert text.startswith("Replaced the source of code cell 8") and "'c7'" in text
