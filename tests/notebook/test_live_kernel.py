"""The live-notebook tools in a real kernel, with a fake front end answering over a real comm.

Each test starts an ipykernel (tests/support/kernel.py) whose "front end" is one or more
notebook panels from tests/support/frontend.py, speaking the extension's protocol. What is
checked is what the person would notice: the cells in the notebook model, the outputs and the
execution count of a cell the agent ran, what the model was told, and that the kernel still
works afterwards.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.frontend import LOAD, MAGICS, LiveKernel, Panel, cell, connected_kernel, tool_results
from tests.support.transcript import result_text, use

pytestmark = pytest.mark.kernel


def write_script(path: Path, turns: list[Any]) -> str:
    path.write_text(json.dumps({"turns": turns}))
    return path.name


def notebook() -> list[dict[str, Any]]:
    return [
        cell("# Analysis", "markdown", cell_id="md0"),
        cell("x = 1", cell_id="c1"),
        cell(
            "print(x + 1)",
            cell_id="c2",
            outputs=[{"output_type": "stream", "name": "stdout", "text": "2\n"}],
            execution_count=3,
        ),
    ]


@pytest.fixture
def panel() -> Panel:
    return Panel(path="work/analysis.ipynb", cells=notebook())


@pytest.fixture
def kernel(tmp_path: Path, panel: Panel) -> Iterator[LiveKernel]:
    with connected_kernel(tmp_path, panel) as k:
        yield k


def test_read_replace_insert_and_run_reach_the_live_notebook(kernel: LiveKernel, panel: Panel, tmp_path: Path):
    name = write_script(
        tmp_path / "t.json",
        [
            [use("NotebookRead", "r1")],
            [use("NotebookEdit", "e1", notebook_path="analysis.ipynb", cell_id="c1", new_source="x = 41")],
            [
                use(
                    "NotebookEdit",
                    "e2",
                    notebook_path="analysis.ipynb",
                    cell_id="c2",
                    edit_mode="insert",
                    cell_type="code",
                    new_source="y = x + 1\nprint('y is', y)\ny * 2",
                )
            ],
            [use("NotebookRun", "n1", cell_id="c1")],
            [use("NotebookRun", "n2", cell_id="cell-3")],
            "Done.",
        ],
    )
    kernel.check(f"%agent --mode bypassPermissions --no-widgets --script {name} go\n")
    # The person's notebook model: replaced, inserted, and both run with their outputs and counts.
    assert panel.sources() == ["# Analysis", "x = 41", "print(x + 1)", "y = x + 1\nprint('y is', y)\ny * 2"]
    inserted = panel.cells[3]
    assert inserted["execution_count"] is not None and panel.cells[1]["execution_count"] is not None
    assert inserted["execution_count"] > panel.cells[1]["execution_count"]
    kinds = [o["output_type"] for o in inserted["outputs"]]
    assert kinds == ["stream", "execute_result"]
    assert inserted["outputs"][0]["text"] == "y is 42\n"
    assert inserted["outputs"][1]["data"]["text/plain"] == "84"
    # The model read the live cells, with ids and the existing output, and got the run's outputs.
    got = tool_results(kernel)
    read = result_text(got["r1"])
    assert 'id="c2"' in read and "print(x + 1)" in read and "2\n" in read and "unsaved changes" in read
    run = result_text(got["n2"])
    assert "y is 42" in run and "Out[" in run and "84" in run and not got["n2"].get("is_error")
    # The variable the run defined is the person's: the kernel's namespace has it.
    assert kernel.check("print(y)").strip() == "42"


def test_a_cell_the_person_changed_after_the_read_is_refused_other_edits_go_on(
    kernel: LiveKernel, panel: Panel, tmp_path: Path
):
    def person_types(p: Panel, req: dict[str, Any]) -> None:
        # The person edits c1 after the agent's read, just before the edit looks at the cell.
        if req["op"] == "read_cells" and req["args"].get("cell_ids") == ["c1"]:
            p.before = None
            p.cells[1]["source"] = "x = 1  # tuned by hand"

    panel.before = person_types
    name = write_script(
        tmp_path / "t.json",
        [
            [use("NotebookRead", "r1")],
            [use("NotebookEdit", "e1", notebook_path="analysis.ipynb", cell_id="c1", new_source="x = 2")],
            [use("NotebookEdit", "e2", notebook_path="analysis.ipynb", cell_id="c2", new_source="print(x * 10)")],
            [use("NotebookEdit", "e3", notebook_path="analysis.ipynb", cell_id="gone", new_source="z")],
            "Done.",
        ],
    )
    kernel.check(f"%agent --mode bypassPermissions --no-widgets --script {name} go\n")
    got = tool_results(kernel)
    assert got["e1"].get("is_error") and "changed since you read it" in result_text(got["e1"])
    assert "NotebookRead" in result_text(got["e1"])
    assert panel.cells[1]["source"] == "x = 1  # tuned by hand"  # the person's edit survived
    assert not got["e2"].get("is_error") and panel.cells[2]["source"] == "print(x * 10)"
    assert got["e3"].get("is_error") and "'gone' is not in the open notebook" in result_text(got["e3"])


def test_without_a_front_end_the_live_tools_are_hidden_and_the_ui_says_so_once(tmp_path: Path):
    nb = {
        "cells": [
            {"cell_type": "code", "id": "a1", "metadata": {}, "source": "x = 1", "outputs": [], "execution_count": None}
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (tmp_path / "n.ipynb").write_text(json.dumps(nb))
    name = write_script(
        tmp_path / "t.json",
        [
            [use("Read", "r1", file_path="n.ipynb")],
            [use("NotebookEdit", "e1", notebook_path="n.ipynb", cell_id="a1", new_source="x = 2")],
            "Done.",
        ],
    )
    with LiveKernel(tmp_path) as k:
        k.check(LOAD)
        first = k.run(f"%agent --mode bypassPermissions --no-widgets --script {name} go\n")
        second = k.run(f"%agent --mode bypassPermissions --no-widgets --script {name} again\n")
        offered = k.check(f"print(sorted(t.name for t in {MAGICS}.agent.exposure().offered))")
    assert "NotebookRead" not in offered and "NotebookRun" not in offered and "Variables" in offered
    assert "ipy_agent extension answered" in first.text
    assert "ipy_agent extension answered" not in second.text
    assert "".join(json.loads((tmp_path / "n.ipynb").read_text())["cells"][0]["source"]) == "x = 2"


def test_background_run_executes_a_cell_without_deadlock(kernel: LiveKernel, panel: Panel, tmp_path: Path):
    name = write_script(tmp_path / "t.json", [[use("NotebookRun", "n1", cell_id="c2")], "Done."])
    kernel.check("x = 6\n")
    kernel.check(f"%agent --background --mode bypassPermissions --no-widgets --script {name} go\n")
    kernel.wait_for(
        "the background run's outputs in c2",
        lambda: panel.cells[2]["outputs"] and panel.cells[2]["outputs"][0].get("text") == "7\n",
    )
    kernel.wait_for("the run to end", lambda: kernel.check(f"print({MAGICS}.agent.running)").strip() == "False")
    assert "7" in result_text(tool_results(kernel)["n1"])


def test_a_timeout_stops_the_cell_and_the_kernel_goes_on(kernel: LiveKernel, panel: Panel, tmp_path: Path):
    panel.cells.append(
        cell("import time\nprint('start', flush=True)\nwhile True:\n    time.sleep(0.05)", cell_id="loop")
    )
    name = write_script(tmp_path / "t.json", [[use("NotebookRun", "n1", cell_id="loop", timeout=1)], "Done."])
    kernel.check(f"%agent --mode bypassPermissions --no-widgets --script {name} go\n")
    block = tool_results(kernel)["n1"]
    assert block.get("is_error") and "timeout" in result_text(block) and "start" in result_text(block)
    assert panel.cells[3]["outputs"][0]["text"] == "start\n"
    assert kernel.check("print('still alive')").strip() == "still alive"


def test_errors_come_back_as_the_traceback_text(kernel: LiveKernel, panel: Panel, tmp_path: Path):
    panel.cells.append(cell("display('before the error')\ndef f():\n    return 1 / 0\nf()", cell_id="bad"))
    name = write_script(tmp_path / "t.json", [[use("NotebookRun", "n1", cell_id="bad")], "Done."])
    kernel.check(f"%agent --mode bypassPermissions --no-widgets --script {name} go\n")
    text = result_text(tool_results(kernel)["n1"])
    assert "ZeroDivisionError" in text and "return 1 / 0" in text
    outputs = panel.cells[3]["outputs"]
    assert [o["output_type"] for o in outputs] == ["display_data", "error"]
    assert outputs[0]["data"]["text/plain"] == "'before the error'" and "'before the error'" in text


def test_a_page_reload_reconnects_through_a_comm_the_page_opens(kernel: LiveKernel, panel: Panel, tmp_path: Path):
    panel.silent = True  # the old page is gone
    fresh = Panel(path=panel.path, cells=[cell("fresh = True", cell_id="f1")])
    kernel.panels[:] = [fresh]  # the reloaded page is the one that answers the kernel's comms now
    comm_id = kernel.open_from_page(fresh)
    kernel.wait_for(
        "the new page's hello",
        lambda: kernel.check(f"print({MAGICS}.bridge.front_end.comm.comm_id)").strip() == comm_id,
    )
    name = write_script(tmp_path / "t.json", [[use("NotebookRead", "r1")], "Done."])
    kernel.check(f"%agent --mode bypassPermissions --no-widgets --script {name} go\n")
    assert "fresh = True" in result_text(tool_results(kernel)["r1"])


def test_a_page_slow_to_answer_the_runs_probe_stays_connected(kernel: LiveKernel, panel: Panel, tmp_path: Path):
    # Measured in JupyterLab with a 500-cell notebook: the page answered a run's probe 0.3 to 3.9 s
    # late while it was rendering. A live page must not be taken for a closed one.
    panel.hello_delay = 3.0
    name = write_script(tmp_path / "t.json", [[use("NotebookRead", "r1")], "Done."])
    kernel.check(f"%agent --mode bypassPermissions --no-widgets --script {name} go\n")
    text = result_text(tool_results(kernel)["r1"])
    assert "print(x + 1)" in text and "unsaved changes" in text


def test_a_protocol_mismatch_is_reported_with_what_to_do(tmp_path: Path):
    old = Panel(path="n.ipynb", cells=[cell("a = 1", cell_id="a")], protocol=99)
    with LiveKernel(tmp_path, panels=[old]) as k:
        k.check(LOAD)
        k.pump(1.0)
        status = k.check(f"print({MAGICS}.bridge.status())")
    assert "protocol 99" in status and "install the same ipy_agent version" in status


def test_on_a_shared_kernel_only_the_notebook_of_the_session_answers(tmp_path: Path):
    mine = Panel(path="mine.ipynb", cells=[cell("m = 1", cell_id="m1")])
    other = Panel(path="other.ipynb", cells=[cell("o = 1", cell_id="o1")])
    env = {"JPY_SESSION_NAME": str(tmp_path / "mine.ipynb")}
    with LiveKernel(tmp_path, panels=[other, mine], env=env) as k:
        k.check(LOAD)
        k.wait_for("hello", lambda: k.check(f"print({MAGICS}.bridge.display_path)").strip() == "mine.ipynb")
        name = write_script(tmp_path / "t.json", [[use("NotebookRead", "r1")], "Done."])
        k.check(f"%agent --mode bypassPermissions --no-widgets --script {name} go\n")
        text = result_text(tool_results(k)["r1"])
    assert "m = 1" in text and "o = 1" not in text
    assert other.requests == [] and mine.requests


def test_variables_are_described_without_running_their_code(kernel: LiveKernel, tmp_path: Path):
    kernel.check(
        "import numpy as np, pandas as pd\n"
        "df = pd.DataFrame({'city': ['a', 'b'], 'temp': [1.5, 2.0]})\n"
        "class Loud:\n"
        "    def __repr__(self):\n"
        "        open('repr_ran', 'w').write('yes'); return 'loud'\n"
        "    def __len__(self):\n"
        "        open('len_ran', 'w').write('yes'); return 3\n"
        "class Sneaky(list):\n"
        "    def __len__(self):\n"
        "        open('len_ran', 'w').write('yes'); return 0\n"
        "arr = np.zeros((3, 4), dtype='float32')\n"
        "loud = Loud()\n"
        "items = Sneaky([1, 2])\n"
        "text = 'a' * 500\n"
        "n = 7\n"
    )
    name = write_script(tmp_path / "t.json", [[use("Variables", "v1")], "Done."])
    kernel.check(f"%agent --mode bypassPermissions --no-widgets --script {name} go\n")
    text = result_text(tool_results(kernel)["v1"])
    assert "arr: numpy.ndarray = shape (3, 4), dtype float32" in text
    assert "df: pandas.DataFrame = shape (2, 2), columns ['city': " in text and "'temp': float64]" in text
    assert "n: int = 7" in text and "(500 characters)" in text
    assert "loud: Loud" in text and "not described" in text
    assert "items: Sneaky = subclass of list, 2 items" in text
    assert not (tmp_path / "repr_ran").exists() and not (tmp_path / "len_ran").exists()


def test_a_kernel_interrupt_stops_the_running_cell_and_the_agent(kernel: LiveKernel, panel: Panel, tmp_path: Path):
    panel.cells.append(
        cell(
            "import time\nprint('looping')\nopen('started', 'w').close()\nwhile True:\n    time.sleep(0.05)",
            cell_id="loop",
        )
    )
    name = write_script(
        tmp_path / "t.json", [[use("NotebookRun", "n1", cell_id="loop", timeout=600)], "Should not get here."]
    )
    msg_id = kernel.execute(f"%agent --mode bypassPermissions --no-widgets --script {name} go\n")
    kernel.wait_for("the loop to run", lambda: (tmp_path / "started").exists())
    kernel.interrupt()  # the person presses the stop button
    ex = kernel.wait(msg_id)
    assert ex.status == "error" and ex.reply.get("ename") == "KeyboardInterrupt"
    assert [o["output_type"] for o in panel.cells[3]["outputs"]][:1] == ["stream"]
    assert "KeyboardInterrupt" in json.dumps(panel.cells[3]["outputs"])
    assert kernel.check("print('still alive')").strip() == "still alive"
