"""The Learning output style in a real kernel: a TODO(human) cell, and a run that waits for the person."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.frontend import MAGICS, LiveKernel, Panel, cell, connected_kernel, tool_results
from tests.support.transcript import result_text, use

pytestmark = pytest.mark.kernel

BRIEF = "Compute the mean of xs without numpy."


@pytest.fixture
def panel() -> Panel:
    return Panel(path="lesson.ipynb", cells=[cell("xs = [1, 2, 3, 6]", cell_id="c1")])


@pytest.fixture
def kernel(tmp_path: Path, panel: Panel) -> Iterator[LiveKernel]:
    with connected_kernel(tmp_path, panel) as k:
        yield k


def _script(tmp_path: Path) -> str:
    turns = [[use("TodoHuman", "t1", brief=BRIEF, scaffold="mean = ...  # TODO(human)\nprint(mean)")], "Well done."]
    (tmp_path / "t.json").write_text(json.dumps({"turns": turns}))
    return "t.json"


def _requests(kernel: LiveKernel) -> int:
    return int(kernel.check(f"print(len({MAGICS}.agent.model.requests))").strip())


def test_learning_inserts_a_todo_cell_and_the_run_waits_for_the_person(
    kernel: LiveKernel, panel: Panel, tmp_path: Path
):
    name = _script(tmp_path)
    kernel.run_cell(panel, "c1")
    kernel.check(f"%agent --background --mode bypassPermissions --no-widgets --style Learning --script {name} teach\n")
    todo = kernel.wait_for(
        "the TODO(human) cell", lambda: next((c for c in panel.cells if "# TODO(human)" in c["source"]), None)
    )
    assert BRIEF in todo["source"] and panel.cells[-1] is todo
    # The run waits: still running, and the model has not been asked again.
    assert kernel.check(f"print({MAGICS}.agent.running)").strip() == "True"
    assert _requests(kernel) == 1
    assert "TODO(human)" in kernel.check(f"print({MAGICS}.agent.model.requests[0]['system'])")
    kernel.type_into(panel, todo["id"], "mean = sum(xs) / len(xs)\nprint(mean)")
    kernel.run_cell(panel, todo["id"])
    kernel.wait_for("the run to end", lambda: kernel.check(f"print({MAGICS}.agent.running)").strip() == "False")
    assert _requests(kernel) == 2
    said = result_text(tool_results(kernel)["t1"])
    assert "The person ran the TODO(human) cell" in said and "sum(xs) / len(xs)" in said and "without error" in said


def test_a_foreground_run_ends_its_turn_and_running_the_todo_cell_goes_on(
    kernel: LiveKernel, panel: Panel, tmp_path: Path
):
    # In the foreground the kernel is busy with the %agent cell: no other cell can run, so the
    # run ends its turn saying what to write, and the person's run of the cell goes on with it.
    turns = [
        [use("TodoHuman", "t1", brief=BRIEF, scaffold="mean = ...  # TODO(human)\nprint(mean)")],
        "Write the mean in the new cell and run it.",
        "Well done: 3.0 is the mean.",
    ]
    (tmp_path / "t.json").write_text(json.dumps({"turns": turns}))
    kernel.run_cell(panel, "c1")
    out = kernel.check("%agent --mode bypassPermissions --no-widgets --style Learning --script t.json teach\n")
    assert "Write the mean in the new cell and run it." in out
    todo = next(c for c in panel.cells if "# TODO(human)" in c["source"])
    assert BRIEF in todo["source"] and panel.cells[-1] is todo
    assert "goes on by itself" in result_text(tool_results(kernel)["t1"])
    assert _requests(kernel) == 2  # the run ended; nothing goes on before the person runs the cell
    kernel.type_into(panel, todo["id"], "mean = sum(xs) / len(xs)\nprint(mean)")
    kernel.run_cell(panel, todo["id"])
    assert any("3.0" in o.get("text", "") for o in todo["outputs"])  # their own output, in their cell
    kernel.wait_for("the run to end", lambda: kernel.check(f"print({MAGICS}.agent.running)").strip() == "False")
    assert _requests(kernel) == 3
    said = kernel.check(
        f"print([b['text'] for b in {MAGICS}.agent.messages[-2]['content'] if b.get('type') == 'text'][0])"
    )
    assert "The person ran the TODO(human) cell" in said and "sum(xs) / len(xs)" in said and "without error" in said
    assert "Well done: 3.0 is the mean." in kernel.check(f"print({MAGICS}.last_result.text)")
    # control: running the cell again does not go on again (the run it left is answered)
    kernel.run_cell(panel, todo["id"])
    assert kernel.check(f"print({MAGICS}.running)").strip() == "False"  # no run was started from it
    assert _requests(kernel) == 3
