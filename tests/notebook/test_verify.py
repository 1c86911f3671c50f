"""NotebookVerify and the verify gate, with a real kernel, a fake page and real fresh kernels.

The person's kernel runs cells the way JupyterLab runs them (`run_cell`: an execute_request with
the cell's id), so the run log knows the order; the page's model is then changed as a person
would change it (a cell deleted after it ran, a cell rerun after an edit). NotebookVerify runs the
page's cells in a new kernel, and what is checked is what the model reads and what the person's
notebook and kernel hold afterwards.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.frontend import MAGICS, LiveKernel, Panel, cell, connected_kernel, tool_results
from tests.support.transcript import result_text, use

pytestmark = [pytest.mark.kernel]


def write_script(path: Path, turns: list[Any]) -> str:
    path.write_text(json.dumps({"turns": turns}))
    return path.name


def verify_once(kernel: LiveKernel, tmp_path: Path, mode: str = "bypassPermissions") -> str:
    name = write_script(tmp_path / "v.json", [[use("NotebookVerify", "v1")], "Done."])
    kernel.check(f"%agent --new --mode {mode} --no-widgets --script {name} verify\n")
    return result_text(tool_results(kernel)["v1"])


@pytest.fixture
def panel() -> Panel:
    return Panel(
        path="analysis.ipynb",
        cells=[
            cell("# Analysis", "markdown", cell_id="md0"),
            cell("x = 10\nprint('x is', x)", cell_id="c1"),
            cell("y = x * 2\ny", cell_id="c2"),
        ],
    )


@pytest.fixture
def kernel(tmp_path: Path, panel: Panel) -> Iterator[LiveKernel]:
    with connected_kernel(tmp_path, panel) as k:
        yield k


def test_a_clean_notebook_reproduces_with_no_false_differences(kernel: LiveKernel, panel: Panel, tmp_path: Path):
    panel.cells.append(cell("class Box:\n    pass\nbox = Box()\nbox", cell_id="c3"))  # a repr with an address
    for cell_id in ("c1", "c2", "c3"):
        kernel.run_cell(panel, cell_id)
    text = verify_once(kernel, tmp_path)
    assert "Verdict: reproduces." in text, text
    for word in ("raise", "differ", "Hidden state", "out of order"):
        assert word not in text, text
    # The person's kernel and cells are as they were.
    assert kernel.check("print(x, y)").strip() == "10 20"
    assert panel.cells[1]["outputs"][0]["text"] == "x is 10\n"


def test_hidden_state_from_a_deleted_cell_is_found(kernel: LiveKernel, panel: Panel, tmp_path: Path):
    panel.cells.insert(2, cell("rate = 0.25", cell_id="gone"))
    panel.cells[3]["source"] = "y = x * rate\ny"
    for cell_id in ("c1", "gone", "c2"):
        kernel.run_cell(panel, cell_id)
    del panel.cells[2]  # the person deletes the cell; `rate` stays in the kernel
    text = verify_once(kernel, tmp_path)
    assert "Verdict: does not reproduce" in text, text
    hidden = text.split("Hidden state", 1)[1]
    assert "- rate: float = 0.25" in hidden, text
    assert "cell 3 · y = x * rate: NameError: name 'rate' is not defined" in text, text
    assert "- y: float = 2.5 → not defined" in text, text
    # The person's own %agent_verify shows the same findings as a compact table.
    table = kernel.check("%agent_verify\n")
    assert table.startswith("verdict") and "does not reproduce" in table.splitlines()[0], table
    assert any(r.startswith("hidden state") and r.endswith("rate: float = 0.25") for r in table.splitlines()), table


def test_out_of_order_runs_and_differing_outputs_and_variables_are_reported(
    kernel: LiveKernel, panel: Panel, tmp_path: Path
):
    kernel.run_cell(panel, "c1")
    kernel.run_cell(panel, "c2")
    panel.cells[1]["source"] = "x = 7\nprint('x is', x)"  # edited and rerun after the cell below it
    kernel.run_cell(panel, "c1")
    text = verify_once(kernel, tmp_path)
    below, above = panel.cells[2]["execution_count"], panel.cells[1]["execution_count"]
    assert f"cell 3 · y = x * 2 ran [{below}] before cell 2 · x = 7 above it ran [{above}]" in text, text
    # y was 20 in the notebook; top to bottom it is 14.
    assert "- y: int = 20 → int = 14" in text, text
    assert "Cells whose outputs differ" in text and "-20" in text and "+14" in text, text
    # The same cell's output as the notebook shows it (rerun) is not a difference.
    assert "cell 2 · x = 7:" not in text.split("Cells whose outputs differ", 1)[1], text


def test_never_run_cells_are_skipped_and_named(kernel: LiveKernel, panel: Panel, tmp_path: Path):
    panel.cells.append(cell("open('touched.txt', 'w').write('ran')", cell_id="c3", tags=["agent:never-run"]))
    for cell_id in ("c1", "c2"):
        kernel.run_cell(panel, cell_id)
    text = verify_once(kernel, tmp_path)
    assert "Not run (agent:never-run, set by the person): cell 4 · open('touched.txt'" in text, text
    assert not (tmp_path / "touched.txt").exists()


def test_the_cells_of_ipy_agents_magics_are_not_rerun_and_are_named(kernel: LiveKernel, panel: Panel, tmp_path: Path):
    # The person's notebook holds an earlier %agent_verify (its table shown) and an %agent prompt:
    # rerun in the fresh kernel they would ask the model again or verify inside the verify, and
    # their outputs could never match.
    stale = [{"output_type": "stream", "name": "stdout", "text": "verdict  does not reproduce\n"}]
    panel.cells.append(cell("%agent_verify", cell_id="v0", outputs=stale, execution_count=3))
    panel.cells.append(cell("%agent --script v.json verify", cell_id="a0", outputs=stale, execution_count=4))
    for cell_id in ("c1", "c2"):
        kernel.run_cell(panel, cell_id)
    text = verify_once(kernel, tmp_path)
    assert "Verdict: reproduces." in text, text
    assert "differ" not in text, text
    assert (
        "Not rerun (ipy_agent's own magics: prompts to the agent, verifies): cell 4 · %agent_verify; "
        "cell 5 · %agent --script v.json verify"
    ) in text, text
    table = kernel.check("%agent_verify\n")
    assert table.splitlines()[0].endswith("reproduces"), table
    assert "not rerun" in table and "cell 4 · %agent_verify; cell 5 · %agent --script v.json verify" in table


PROCESS_SPY = (
    "import subprocess as _sp\n"
    "_started = []\n"
    "_orig_init = _sp.Popen.__init__\n"
    "def _spy(self, *a, **k):\n"
    "    _started.append(a[0] if a else k.get('args'))\n"
    "    _orig_init(self, *a, **k)\n"
    "_sp.Popen.__init__ = _spy\n"
)


def test_a_denied_verify_starts_no_kernel(kernel: LiveKernel, panel: Panel, tmp_path: Path):
    kernel.run_cell(panel, "c1")
    kernel.check(PROCESS_SPY)
    # Denied: --no-widgets in default mode has nobody to ask, so the call is refused.
    text = verify_once(kernel, tmp_path, mode="default")
    assert "NotebookVerify ran" not in text, text
    assert "ipykernel_launcher" not in kernel.check("print(_started)"), text  # (the sandbox probe may start)
    # The control: allowed, the same call starts a kernel process (and the spy sees it).
    text = verify_once(kernel, tmp_path)
    assert "NotebookVerify ran" in text, text
    assert "ipykernel_launcher" in kernel.check("print(_started)")


def test_the_gate_hands_the_report_to_the_model_before_the_run_ends(kernel: LiveKernel, panel: Panel, tmp_path: Path):
    for cell_id in ("c1", "c2"):
        kernel.run_cell(panel, cell_id)
    kernel.check("hand_typed = 3\n")  # a value no cell defines
    name = write_script(
        tmp_path / "g.json",
        [
            [use("NotebookRun", "r1", cell_id="c1")],
            "All done.",  # the gate stops this end: the model gets the report first
            "The notebook does not reproduce: hand_typed was typed by hand; I left it.",
        ],
    )
    out = kernel.check(f"%agent --verify --mode bypassPermissions --no-widgets --script {name} go\n")
    messages: list[dict[str, Any]] = json.loads(
        kernel.check(f"import json as _j\nprint(_j.dumps({MAGICS}.agent.messages))")
    )
    texts = [
        b.get("text", "")
        for m in messages
        if m["role"] == "user" and isinstance(m["content"], list)
        for b in m["content"]
        if isinstance(b, dict)
    ]
    gate = [t for t in texts if "NotebookVerify ran" in t]
    assert len(gate) == 1, texts
    assert "hidden state: hand_typed" in gate[0] and "- hand_typed: int = 3" in gate[0], gate[0]
    # The report came after the model's first "done", and the model answered it before the end.
    assert messages[-1]["role"] == "assistant" and "hand_typed" in json.dumps(messages[-1]["content"])
    assert "does not reproduce" in out, out
    assert kernel.check(f"print({MAGICS}.last_result.verified)").strip().startswith("does not reproduce")


def test_the_gate_does_not_run_when_the_run_changed_nothing(kernel: LiveKernel, panel: Panel, tmp_path: Path):
    kernel.check("%config AgentMagics.verify_before_done = True\n")
    name = write_script(tmp_path / "n.json", [[use("NotebookRead", "r1")], "Nothing to change."])
    kernel.check(f"%agent --mode bypassPermissions --no-widgets --script {name} look\n")
    assert "NotebookVerify" not in kernel.check(f"import json as _j\nprint(_j.dumps({MAGICS}.agent.messages))")
    assert kernel.check(f"print({MAGICS}.last_result.verified)").strip() == "None"


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads processes from /proc")
def test_an_interrupted_verify_shuts_the_new_kernel_down(kernel: LiveKernel, panel: Panel, tmp_path: Path):
    panel.cells.append(
        cell("import os, time\nopen('fresh.pid', 'w').write(str(os.getpid()))\ntime.sleep(120)", cell_id="slow")
    )
    msg_id = kernel.execute("%agent_verify\n")
    pid_file = tmp_path / "fresh.pid"
    pid = int(
        kernel.wait_for("the new kernel running the slow cell", lambda: pid_file.exists() and pid_file.read_text())
    )
    assert _alive(pid)
    kernel.interrupt()
    ex = kernel.wait(msg_id)
    assert ex.status == "error" and ex.reply.get("ename") in ("KeyboardInterrupt", "RunInterrupted"), (
        ex.reply
    )  # interrupted...
    assert not _alive(pid)  # ...after the new kernel is gone
    assert kernel.check("print(x if 'x' in dir() else 'no x')").strip() == "no x"  # the person's kernel untouched
