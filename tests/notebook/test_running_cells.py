"""Running cells like a careful colleague, in a real kernel with a fake front end.

What the person approving a run reads (what it overwrites, with the current value's summary),
the person's cell policies holding in every mode, errors told so they lead to the fix (in the
cell, in the person's module, inside a library), and a list of cells stopping at the first
error. The agent is made in the kernel with an approver that records each prompt and allows it,
so what a person would see and answer is checked as data.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.frontend import MAGICS, LiveKernel, Panel, cell, connected_kernel
from tests.support.transcript import result_text, use

pytestmark = pytest.mark.kernel


@pytest.fixture
def panel() -> Panel:
    return Panel(path="work/analysis.ipynb", cells=[cell("import pandas as pd", cell_id="load")])


@pytest.fixture
def kernel(tmp_path: Path, panel: Panel) -> Iterator[LiveKernel]:
    with connected_kernel(tmp_path, panel) as k:
        yield k


def run_agent(
    k: LiveKernel, tmp_path: Path, turns: list[Any], mode: str = "default", answer: str = "'allow'"
) -> dict[str, Any]:
    """Run a scripted agent in the kernel; returns {"asked": [prompt, ...], "results": {id: tool_result}}."""
    script = tmp_path / "t.json"
    script.write_text(json.dumps({"turns": [*turns, "Done."]}))
    out = k.check(
        "import json as _j\n"
        "from ipy_agent import Agent, PermissionAnswer, ScriptedModel\n"
        "_asked = []\n"
        "def _approve(req):\n"
        "    p = req.preview\n"
        "    _asked.append({'tool': req.tool_name, 'reason': req.reason, 'title': p.title if p else '',"
        " 'notes': list(p.notes) if p else []})\n"
        f"    return {answer}\n"
        f"_a = Agent(model=ScriptedModel.from_file({str(script)!r}), approver=_approve,"
        f" notebook={MAGICS}.bridge, permission_mode={mode!r})\n"
        "await _a.arun('go')\n"
        "print(_j.dumps({'asked': _asked, 'results': {b['tool_use_id']: b for m in _a.messages"
        " if m['role'] == 'user' and isinstance(m['content'], list)"
        " for b in m['content'] if b.get('type') == 'tool_result'}}))\n"
    )
    return json.loads(out.strip().splitlines()[-1])


def test_the_prompt_shows_what_the_run_overwrites_and_the_model_gets_it_too(
    kernel: LiveKernel, panel: Panel, tmp_path: Path
):
    kernel.check("import pandas as pd\ndf = pd.DataFrame({'a': range(10_000), 'b': 0.5})\ntotal = 3\n")
    panel.cells.append(
        cell(
            "df = df[df.a > 5]\ntotal += 1\ndf.reset_index(drop=True, inplace=True)\nimport colorsys, wave\nlabels = []",
            cell_id="filter",
        )
    )
    got = run_agent(kernel, tmp_path, [[use("NotebookRun", "n1", cell_id="filter")]])
    [asked] = got["asked"]
    notes = asked["notes"]
    assert "overwrites df: DataFrame 10,000 × 2" in notes  # noqa: RUF001
    assert "overwrites total: int 3" in notes
    assert "defines colorsys, wave, labels" in notes
    assert "may modify df (reset_index with inplace=True)" in notes
    assert any(n.startswith("imports modules not loaded yet:") and "wave" in n for n in notes)
    text = result_text(got["results"]["n1"])
    assert "What it could change: overwrites df: DataFrame 10,000 × 2" in text  # noqa: RUF001
    # The run happened: the person's variables changed as the prompt said they would.
    assert kernel.check("print(len(df), total, list(df.index[:2]))").strip() == "9994 4 [0, 1]"
    # The second prompt for the same cell says how its last run went.
    got = run_agent(kernel, tmp_path, [[use("NotebookRun", "n2", cell_id="filter")]])
    assert any(n.startswith("last run: [") and "took" in n for n in got["asked"][0]["notes"])


@pytest.mark.parametrize("mode", ["default", "acceptEdits", "bypassPermissions"])
def test_cell_policies_hold_in_every_mode(kernel: LiveKernel, panel: Panel, tmp_path: Path, mode: str):
    panel.cells += [
        cell("ran_never = True", cell_id="never", tags=["agent:never-run"]),
        cell("ran_ask = True", cell_id="ask", tags=["agent:ask"]),
        cell("kept = 1", cell_id="keep", tags=["agent:read-only"]),
        cell("ran_meta = True", cell_id="meta"),
        cell("ran_free = True", cell_id="free"),
    ]
    panel.metadata = {"ipy_agent": {"cell_policies": {"meta": ["agent:never-run"]}}}
    got = run_agent(
        kernel,
        tmp_path,
        [
            [use("NotebookRun", "n1", cell_id="never")],
            [use("NotebookRun", "n2", cell_id="ask")],
            [use("NotebookRun", "n3", cell_id="meta")],
            [use("NotebookRead", "r1")],
            [use("NotebookEdit", "e1", notebook_path="analysis.ipynb", cell_id="keep", new_source="kept = 2")],
        ],
        mode=mode,
    )
    results = got["results"]
    for refused in ("n1", "n3"):
        assert results[refused].get("is_error") and "must not be run by the agent" in result_text(results[refused])
    # The model reads the cell as the person names it, with the id it addresses it by.
    assert "(Cell 2 · ran_never = True (id 'never') must not be run by the agent" in result_text(results["n1"])
    assert "agent:never-run" in result_text(results["n1"]) and "its tag" in result_text(results["n1"])
    assert "notebook's policy for this cell" in result_text(results["n3"])
    assert "read-only for the agent" in result_text(results["e1"]) and results["e1"].get("is_error")
    # agent:ask asked the person even where the mode allows everything.
    assert [a["title"] for a in got["asked"] if a["tool"] == "NotebookRun"] == [
        "Run in this kernel, from work/analysis.ipynb: cell 3 · ran_ask = True"
    ]
    assert "asks every time: its tag agent:ask" in next(a for a in got["asked"] if a["tool"] == "NotebookRun")["notes"]
    assert kernel.check("print(globals().get('ran_never'), globals().get('ran_meta'), ran_ask)").strip() == (
        "None None True"
    )
    assert panel.cells[3]["source"] == "kept = 1"


def test_errors_lead_to_the_fix_in_the_cell_in_a_module_and_in_a_library(
    kernel: LiveKernel, panel: Panel, tmp_path: Path
):
    (tmp_path / "helpers.py").write_text("def ratio(a, b):\n    scale = 1\n    return a / b * scale\n")
    kernel.check("import pandas as pd\nsales = pd.DataFrame({'region': ['n'], 'revenue': [1]})\nrevenue_total = 1\n")
    panel.cells += [
        cell("x = 1\ny = 2\nprint(revenu_total)\nz = 3", cell_id="name"),
        cell("import helpers\nfirst = 1\nhelpers.ratio(1, 0)", cell_id="module"),
        cell("sales['revenu'].sum()", cell_id="library"),
    ]
    got = run_agent(
        kernel,
        tmp_path,
        [
            [use("NotebookRun", "n1", cell_id="name")],
            [use("NotebookRun", "n2", cell_id="module")],
            [use("NotebookRun", "n3", cell_id="library")],
        ],
        mode="bypassPermissions",
    )
    name, module, library = (result_text(got["results"][k]) for k in ("n1", "n2", "n3"))
    assert "NameError: name 'revenu_total' is not defined" in name
    assert "At line 3 of the cell:" in name and "-> 3 | print(revenu_total)" in name
    assert "Names in the kernel like 'revenu_total': revenue_total" in name
    assert "interactiveshell" not in name and "ipy_agent" not in name  # IPython's frames are not the person's
    assert "ZeroDivisionError" in module and "-> 3 | helpers.ratio(1, 0)" in module
    assert "helpers.py, line 3, in ratio: return a / b * scale" in module
    assert "KeyError: 'revenu'" in library and "-> 1 | sales['revenu'].sum()" in library
    assert "Raised inside pandas" in library
    assert "DataFrame sales's columns: 'region', 'revenue' (close to 'revenu': 'revenue')" in library
    # The cell itself keeps IPython's full traceback for the person.
    assert panel.cells[-1]["outputs"][-1]["output_type"] == "error"


def test_a_list_of_cells_runs_in_order_and_stops_at_the_first_error(kernel: LiveKernel, panel: Panel, tmp_path: Path):
    panel.cells += [
        cell("step = 1", cell_id="s1"),
        cell("step = 2\nraise ValueError('bad input')", cell_id="s2"),
        cell("step = 3", cell_id="s3"),
    ]
    got = run_agent(kernel, tmp_path, [[use("NotebookRun", "n1", cell_ids=["s1", "s2", "s3"])]])
    text = result_text(got["results"]["n1"])
    assert got["results"]["n1"].get("is_error")
    assert (
        "Cell 2 · step = 1 (id 's1') ran" in text
        and "ValueError: bad input" in text
        and "Not run, after the failure above: cell 4 · step = 3 (id 's3')." in text
    )
    assert kernel.check("print(step)").strip() == "2"
    assert panel.cells[-1]["execution_count"] is None and panel.cells[-2]["execution_count"] is not None
    # One prompt for the list, with each cell's effects.
    [asked] = got["asked"]
    assert (
        asked["title"] == "Run in this kernel, from work/analysis.ipynb: cells 2 · step = 1; 3 · step = 2; 4 · step = 3"
    )
    assert "cell 4: overwrites step: int 2" in asked["notes"] or "cell 4: defines step" in asked["notes"]


def test_staleness_marks_follow_the_persons_edits_and_reruns(kernel: LiveKernel, panel: Panel, tmp_path: Path):
    panel.cells += [
        cell("rate = 0.1", cell_id="rate"),
        cell("price = 100 * (1 + rate)", cell_id="price"),
        cell("print(price)", cell_id="show"),
        cell("unused = 1", cell_id="later"),
    ]
    for cell_id in ("load", "rate", "price", "show"):
        kernel.run_cell(panel, cell_id)

    def marks() -> str:
        text = result_text(run_agent(kernel, tmp_path, [[use("NotebookRead", "r")]])["results"]["r"])
        return text.split("Run state in this kernel", 1)[1].split("<cell", 1)[0] if "Run state" in text else ""

    assert marks().strip().splitlines()[1:] == ["- cell 5 · unused = 1 (id 'later'): never run in this kernel"]
    kernel.run_cell(panel, "rate")  # rerun after the cells that use it
    got = marks()
    assert (
        "- cell 3 · price = 100 * (1 + rate) (id 'price'): may be stale: uses rate, "
        "which cell 2 · rate = 0.1 (id 'rate') redefined after it ran"
    ) in got
    assert "- cell 4 · print(price) (id 'show'): may be stale: uses price from cell 3 · price = 100" in got
    panel.cells[panel.find("price")]["source"] = "price = 200 * (1 + rate)"  # the person edits a cell
    kernel.run_cell(panel, "later")
    got = marks()
    assert "- cell 3 · price = 200 * (1 + rate) (id 'price'): edited since it last ran" in got and "later" not in got
    for cell_id in ("price", "show"):  # the smallest rerun clears the marks
        kernel.run_cell(panel, cell_id)
    assert marks() == ""


def test_outputs_reach_the_cell_while_it_runs(kernel: LiveKernel, panel: Panel, tmp_path: Path):
    # The cell blocks the kernel's event loop (time.sleep): its first line still reaches the page
    # before it ends, from the thread that watches the outputs.
    panel.cells.append(cell("import time\nprint('first', flush=True)\ntime.sleep(3)\nprint('second')", cell_id="slow"))
    got = run_agent(kernel, tmp_path, [[use("NotebookRun", "n1", cell_id="slow")]], mode="bypassPermissions")
    assert "first\nsecond" in result_text(got["results"]["n1"])
    shown = [r["args"]["outputs"] for r in panel.requests if r["op"] == "set_outputs"]
    assert shown[0] == []  # cleared when the run starts
    partial = [o for o in shown[1:-1] if o]
    assert partial and partial[0] == [{"output_type": "stream", "name": "stdout", "text": "first\n"}], shown
    assert shown[-1] == [{"output_type": "stream", "name": "stdout", "text": "first\nsecond\n"}]


def test_never_run_this_cell_from_the_prompt_sticks(kernel: LiveKernel, panel: Panel, tmp_path: Path):
    panel.cells.append(cell("costly = True", cell_id="costly"))
    turns = [[use("NotebookRun", "n1", cell_id="costly")], [use("NotebookRun", "n2", cell_id="costly")]]
    got = run_agent(kernel, tmp_path, turns, answer="PermissionAnswer(behavior='deny', action='Never run this cell')")
    assert len(got["asked"]) == 1  # the second call is refused by the policy, without a prompt
    first, second = (result_text(got["results"][k]) for k in ("n1", "n2"))
    assert "The person marked cell 2 · costly = True (id 'costly') agent:never-run" in first
    assert "must not be run by the agent (the notebook's policy for this cell agent:never-run)" in second
    assert panel.metadata["ipy_agent"] == {"cell_policies": {"costly": ["agent:never-run"]}}
    assert kernel.check("print('costly' in globals())").strip() == "False"


def test_cells_the_agent_runs_get_their_own_counts_apart_from_the_agent_cell(
    kernel: LiveKernel, panel: Panel, tmp_path: Path
):
    (tmp_path / "runs.json").write_text(
        json.dumps({"turns": [[use("NotebookRun", "n1", cell_ids=["one", "two"])], "Ran both."]})
    )
    panel.cells += [
        cell("%agent --script runs.json --allow NotebookRun run them", cell_id="agent"),
        cell("a = 40\na + 1", cell_id="one"),
        cell("print(a + 2)", cell_id="two"),
        cell("a", cell_id="after"),
    ]
    kernel.run_cell(panel, "agent")  # as JupyterLab runs it: the count comes from the kernel's reply
    counts = {c["id"]: c["execution_count"] for c in panel.cells[1:4]}
    assert None not in counts.values() and len(set(counts.values())) == 3, counts
    # The cells it ran count up in order, and the agent's cell ends after them.
    assert counts["one"] + 1 == counts["two"] and counts["two"] < counts["agent"]
    one = panel.cells[panel.find("one")]
    assert one["outputs"][0]["execution_count"] == counts["one"]  # Out[n] says the cell's own count
    kernel.run_cell(panel, "after")  # the person's next cell takes the next count
    assert panel.cells[panel.find("after")]["execution_count"] == counts["agent"] + 1
    inputs = json.loads(kernel.check("import json; print(json.dumps(In))").strip().splitlines()[-1])
    assert inputs[counts["one"]] == "a = 40\na + 1" and inputs[counts["two"]] == "print(a + 2)"
    assert "run_agent_cell" in inputs[counts["agent"]]  # In[n] and the counts stay aligned


def test_a_plot_drawn_by_a_cell_the_agent_runs_lands_in_that_cell(kernel: LiveKernel, panel: Panel, tmp_path: Path):
    # matplotlib's inline backend shows figures from IPython's post_execute event, as other
    # extensions act on post_run_cell: a cell the agent runs fires both, as one the person runs does.
    (tmp_path / "plot.json").write_text(json.dumps({"turns": [[use("NotebookRun", "n1", cell_id="plot")], "Drew."]}))
    kernel.check(
        "%matplotlib inline\n_seen = []\nget_ipython().events.register('post_run_cell', lambda r: _seen.append(r.info.raw_cell))"
    )
    panel.cells += [
        cell("%agent --script plot.json --allow NotebookRun draw it", cell_id="agent"),
        cell("import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.title('sales')", cell_id="plot"),
    ]
    kernel.run_cell(panel, "agent")
    plot = panel.cells[panel.find("plot")]
    kinds = [sorted(o.get("data", {})) for o in plot["outputs"]]
    assert ["image/png", "text/plain"] in kinds, plot["outputs"]  # the figure, in the cell that drew it
    agent_cell = panel.cells[panel.find("agent")]
    assert not [o for o in agent_cell["outputs"] if "image/png" in o.get("data", {})]  # not in the agent's
    seen = json.loads(kernel.check("import json; print(json.dumps(_seen))").strip().splitlines()[-1])
    assert plot["source"] in seen and seen.index(plot["source"]) < len(seen) - 1  # the run's, before the agent cell's
