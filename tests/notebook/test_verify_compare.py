"""The comparison of NotebookVerify, without kernels: what counts as a difference and what does not."""

from __future__ import annotations

import base64

from ipy_agent.notebook.runlog import CellRun, RunLog
from ipy_agent.notebook.variables import VariableInfo
from ipy_agent.notebook.verify import FreshRun, VerifyCell, compare, output_text


def png(data: bytes) -> dict[str, object]:
    return {"output_type": "display_data", "data": {"image/png": base64.b64encode(data).decode()}, "metadata": {}}


def code(cell_id: str, index: int, source: str, outputs: list[dict[str, object]], count: int | None = 1) -> VerifyCell:
    return VerifyCell(
        cell_id=cell_id, index=index, cell_type="code", source=source, outputs=tuple(outputs), execution_count=count
    )


def test_images_differ_by_size_and_hash_and_addresses_do_not_count():
    result = {"output_type": "execute_result", "data": {"text/plain": "<Box at 0x7f3a2b1c9d10>"}, "metadata": {}}
    fresh_result = {"output_type": "execute_result", "data": {"text/plain": "<Box at 0x7f11aa22bb33>"}, "metadata": {}}
    cells = [code("a", 0, "plot()", [png(b"one image")]), code("b", 1, "box", [result])]
    fresh = FreshRun(
        outputs={"a": [png(b"another image!")], "b": [fresh_result]}, variables=[], kernel="k", seconds=0.1
    )
    report = compare(cells, fresh, live_variables=[], runs=RunLog())
    assert [p.label for p in report.outputs_differ] == ["cell 1 · plot()"]
    diff = report.outputs_differ[0].text
    assert "image/png: 9 bytes, sha256" in diff and "image/png: 14 bytes, sha256" in diff
    assert output_text([result]) == output_text([fresh_result])  # the same object, another address


def test_hidden_state_is_what_no_cell_binds_and_order_comes_from_the_run_log():
    cells = [code("a", 0, "x = 1", []), code("b", 1, "y = x + 1", []), code("c", 2, "import math\nz = math.pi", [])]
    live = [
        VariableInfo(name="x", type="int", summary="1"),
        VariableInfo(name="y", type="int", summary="5"),
        VariableInfo(name="typed", type="int", summary="3"),
        VariableInfo(name="z", type="float", summary="3.14"),
    ]
    fresh_vars = [live[0], VariableInfo(name="y", type="int", summary="2")]  # z: its cell raised
    runs = RunLog()
    for cell_id, count in (("a", 4), ("b", 2), ("c", 5)):
        runs.record(CellRun(cell_id=cell_id, source="", execution_count=count, seconds=0.0))
    fresh = FreshRun(outputs={"a": [], "b": [], "c": []}, variables=fresh_vars, kernel="k", seconds=0.1)
    report = compare(cells, fresh, live_variables=live, runs=runs)
    assert [m.name for m in report.hidden_state] == ["typed"]
    assert {(m.name, m.fresh) for m in report.variables_differ} == {("y", "int = 2"), ("z", "not defined")}
    assert report.out_of_order == ["cell 2 · y = x + 1 ran [2] before cell 1 · x = 1 above it ran [4]"]
    assert report.verdict.startswith("does not reproduce") and "hidden state: typed" in report.verdict


def test_cells_of_ipy_agents_magics_are_named_not_compared_and_not_out_of_order():
    cells = [
        code("ask", 0, "%agent --verify tidy up", [{"output_type": "stream", "name": "stdout", "text": "Done.\n"}]),
        code("a", 1, "x = 1", []),
        code("check", 2, "# again\n%agent_verify", []),
        code("plain", 3, "agent = 2  # not a magic", []),
    ]
    assert [c.agent_magic for c in cells] == [True, False, True, False]
    runs = RunLog()
    for cell_id, count in (("a", 1), ("ask", 2), ("check", 3), ("plain", 4)):
        runs.record(CellRun(cell_id=cell_id, source="", execution_count=count, seconds=0.0))
    fresh = FreshRun(outputs={"a": [], "plain": []}, variables=[], kernel="k", seconds=0.1)
    report = compare(cells, fresh, live_variables=[], runs=runs)
    assert report.reproduces, report
    assert report.agent_cells == ["cell 1 · %agent --verify tidy up", "cell 3 · # again"]
    assert report.out_of_order == []  # the %agent cell above ran after `x = 1`: not a rerun order


def test_a_name_only_cells_not_yet_run_here_bind_is_not_a_difference():
    # A verify in the middle of Run All: the cells below it have not run in this kernel yet.
    cells = [code("a", 0, "x = 1", []), code("below", 1, "later = x + 1", [], count=None)]
    live = [VariableInfo(name="x", type="int", summary="1")]
    fresh_vars = [*live, VariableInfo(name="later", type="int", summary="2")]
    fresh = FreshRun(outputs={"a": [], "below": []}, variables=fresh_vars, kernel="k", seconds=0.1)
    assert compare(cells, fresh, live_variables=live, runs=RunLog()).reproduces
    # The control: once the cell below has run here, a name it binds that this kernel lacks differs.
    ran = [cells[0], code("below", 1, "later = x + 1", [], count=2)]
    report = compare(ran, fresh, live_variables=live, runs=RunLog())
    assert [(m.name, m.live) for m in report.variables_differ] == [("later", "not defined")]
