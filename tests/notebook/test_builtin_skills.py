"""The built-in notebook skills, each shown working: its scripted transcript (examples/transcripts/
skill_*.json) replayed by `%agent --script` in a real kernel whose notebook page is the fake front
end. The model loads the skill with the Skill tool, then does what it says; what is checked is what
the person would see in their notebook and kernel afterwards."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.frontend import LiveKernel, Panel, cell

pytestmark = pytest.mark.kernel

TRANSCRIPTS = Path(__file__).resolve().parents[2] / "examples" / "transcripts"
MAGICS = "__import__('ipy_agent.magics', fromlist=['x']).current_session()"


def error(ename: str, evalue: str) -> dict[str, Any]:
    return {"output_type": "error", "ename": ename, "evalue": evalue, "traceback": [f"{ename}: {evalue}"]}


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Any]:
    """Start a kernel whose page shows `panel`, after running `setup` in it."""
    kernels: list[LiveKernel] = []

    def start(panel: Panel, setup: str) -> LiveKernel:
        k = LiveKernel(tmp_path, panels=[panel])
        kernels.append(k)
        k.check("%load_ext ipy_agent\n" + setup)
        k.wait_for("the panel's hello", lambda: k.check(f"print({MAGICS}.bridge.connected)").strip() == "True")
        return k

    yield start
    for k in kernels:
        k.shutdown()


def replay(k: LiveKernel, tmp_path: Path, transcript: str, prompt: str) -> dict[str, Any]:
    """Run the transcript as `%agent --script`; returns the tool results the model got, by id."""
    shutil.copy(TRANSCRIPTS / transcript, tmp_path / transcript)
    k.check(f"%agent --mode bypassPermissions --no-widgets --script {transcript} {prompt}\n")
    found = k.check(
        "import json as _j\n"
        f"_m = {MAGICS}.agent.messages\n"
        "print(_j.dumps({b['tool_use_id']: b for m in _m if m['role'] == 'user' and isinstance(m['content'], list)"
        " for b in m['content'] if b.get('type') == 'tool_result'}))\n"
    )
    return json.loads(found)


def text(block: dict[str, Any]) -> str:
    content = block["content"]
    return content if isinstance(content, str) else "".join(b.get("text", "") for b in content)


def outputs_text(c: dict[str, Any]) -> str:
    parts = []
    for o in c.get("outputs") or []:
        parts.append(o.get("text") or (o.get("data") or {}).get("text/plain") or "")
    return "".join(parts)


SALES = (
    "import pandas as pd\n"
    'sales = pd.DataFrame({"region": ["north", "south", "east", "west"] * 50, "units": list(range(200)), '
    '"price": [9.5, 12.0, None, 7.25] * 50})'
)


def test_explore_a_dataframe_without_printing_it_whole(live: Any, tmp_path: Path):
    panel = Panel(
        path="work/sales.ipynb", cells=[cell("# Sales", "markdown", cell_id="md0"), cell(SALES, cell_id="load")]
    )
    k = live(panel, SALES)
    got = replay(k, tmp_path, "skill_explore_dataframe.json", "what is in sales?")
    skill = text(got["toolu_skill_explore"])
    assert skill.startswith('Skill "explore-dataframe" (built in)') and "Never end a cell with the DataFrame" in skill
    assert text(got["toolu_vars_sales"]).startswith("sales: pandas.DataFrame = shape (200, 3)")
    # The two cells the skill asks for, run in the person's notebook, each with bounded output.
    assert [c["id"] for c in panel.cells][:2] == ["md0", "load"] and len(panel.cells) == 4
    look, summary = panel.cells[2], panel.cells[3]
    assert look["execution_count"] is not None and summary["execution_count"] > look["execution_count"]
    shown = outputs_text(look)
    assert "(200, 3)" in shown and "price    50" in shown and shown.count("\n") < 25
    assert "north    50" in outputs_text(summary)
    for tid in ("toolu_run_look", "toolu_run_summary"):
        assert not got[tid].get("is_error") and len(text(got[tid])) < 3_000  # the model got summaries, not rows


def test_fix_a_failing_cell_and_rerun_only_what_depends_on_it(live: Any, tmp_path: Path):
    load = 'import pandas as pd\norders = pd.DataFrame({"price": [10.0, 12.5, 8.0], "qty": [3, 1, 4]})'
    timer = "import time\nstarted = time.time()"
    panel = Panel(
        path="work/orders.ipynb",
        cells=[
            cell(load, cell_id="load", execution_count=1),
            cell(
                'orders["total"] = orders["price"] * orders["quantity"]',
                cell_id="total",
                execution_count=2,
                outputs=[error("KeyError", "'quantity'")],
            ),
            cell(
                'revenue = orders["total"].sum()\nprint(f"revenue: {revenue}")',
                cell_id="revenue",
                execution_count=3,
                outputs=[error("KeyError", "'total'")],
            ),
            cell(timer, cell_id="timer", execution_count=4),
            cell(
                'print(f"revenue per order: {revenue / len(orders):.2f}")',
                cell_id="report",
                execution_count=5,
                outputs=[error("NameError", "name 'revenue' is not defined")],
            ),
        ],
    )
    k = live(panel, f"{load}\n{timer}\n")
    started = k.check("print(repr(started))").strip()
    got = replay(k, tmp_path, "skill_fix_failing_cell.json", "the total cell fails")
    assert text(got["toolu_skill_fix"]).startswith('Skill "fix-failing-cell" (built in)')
    assert "KeyError" in text(got["toolu_read_orders_nb"]) and "qty" in text(got["toolu_vars_orders"])
    by_id = {c["id"]: c for c in panel.cells}
    assert by_id["total"]["source"] == 'orders["total"] = orders["price"] * orders["qty"]'
    # Only the fixed cell and the two that depend on it ran again, in order; the rest did not.
    counts = [by_id[i]["execution_count"] for i in ("total", "revenue", "report")]
    assert counts[0] < counts[1] < counts[2] and counts != [2, 3, 5]
    assert not any(o["output_type"] == "error" for i in ("total", "revenue", "report") for o in by_id[i]["outputs"])
    assert (by_id["load"]["execution_count"], by_id["timer"]["execution_count"]) == (1, 4)
    assert outputs_text(by_id["revenue"]) == "revenue: 74.5\n"
    assert outputs_text(by_id["report"]) == "revenue per order: 24.83\n"
    assert k.check("print(repr(started))").strip() == started  # the timer kept its start time
    assert not any(got[t].get("is_error") for t in ("toolu_run_total", "toolu_run_revenue", "toolu_run_report"))


def test_turn_cells_into_a_function_in_a_module_and_check_the_result(live: Any, tmp_path: Path):
    raw = 'import pandas as pd\nraw = pd.DataFrame({"price": [10.0, None, 8.0, 12.5], "qty": [3, 2, -1, 1]})'
    clean = 'clean = raw.dropna()\nclean = clean[clean["qty"] > 0].copy()'
    total = 'clean["total"] = clean["price"] * clean["qty"]'
    show = 'print(clean["total"].sum())'
    panel = Panel(
        path="work/prep.ipynb",
        cells=[
            cell(raw, cell_id="raw", execution_count=1),
            cell(clean, cell_id="clean", execution_count=2),
            cell(total, cell_id="total", execution_count=3),
            cell(show, cell_id="show", execution_count=4),
        ],
    )
    k = live(panel, f"{raw}\n{clean}\n{total}\n")
    got = replay(k, tmp_path, "skill_cells_to_module.json", "move the cleaning into a module")
    assert text(got["toolu_skill_module"]).startswith('Skill "cells-to-module" (built in)')
    module = (tmp_path / "sales_prep.py").read_text()
    assert "def prepare_sales(raw: pd.DataFrame) -> pd.DataFrame:" in module
    # The notebook: the two cells became one import-and-call cell; the kept result and the check are gone.
    assert [c["id"] for c in panel.cells] == ["raw", "clean", "show"]
    assert "from sales_prep import prepare_sales" in panel.cells[1]["source"]
    assert "clean = prepare_sales(raw)" in panel.cells[1]["source"]
    # The check ran and passed before it was removed.
    assert not got["toolu_run_check"].get("is_error") and "same result: (2, 3)" in text(got["toolu_run_check"])
    # The person's kernel has the function's result, and the later cell works on it.
    assert k.check("print(clean['total'].sum())").strip() == "42.5"
    assert k.check("print(prepare_sales.__module__)").strip() == "sales_prep"
