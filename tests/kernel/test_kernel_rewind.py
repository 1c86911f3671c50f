"""`%agent_rewind` in a real kernel with a fake notebook page: the cells the agent changed come
back in the notebook model, the variables a cell it ran rebound come back (a DataFrame), one the
person rebound after the run is kept and named, the ones that cannot be kept (a lock) are named
with the cell to re-run, and `%agent_history` numbers the prompts a rewind goes back to."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.frontend import MAGICS, LiveKernel, Panel, cell, connected_kernel
from tests.support.transcript import use

pytestmark = pytest.mark.kernel


@pytest.fixture
def panel() -> Panel:
    return Panel(
        path="sales.ipynb",
        cells=[
            cell("import pandas as pd\ndf = pd.DataFrame({'a': [1, 2]})", cell_id="c0"),
            cell("total = 0", cell_id="c1"),
        ],
    )


@pytest.fixture
def kernel(tmp_path: Path, panel: Panel) -> Iterator[LiveKernel]:
    with connected_kernel(tmp_path, panel) as k:
        yield k


def test_rewind_brings_back_cells_and_variables_and_names_what_it_could_not(
    kernel: LiveKernel, panel: Panel, tmp_path: Path
):
    kernel.check(
        "import threading\nimport pandas as pd\ndf = pd.DataFrame({'a': [1, 2]})\ntotal = 0\nlock = threading.Lock()\n"
    )
    new = "df = df * 10\nlock = threading.RLock()\nfresh = 1\ntotal = 5"
    (tmp_path / "t.json").write_text(
        json.dumps(
            {
                "turns": [
                    [use("NotebookRead", "r1")],
                    [use("NotebookEdit", "e1", notebook_path="sales.ipynb", cell_id="c1", new_source=new)],
                    [use("NotebookRun", "n1", cell_id="c1")],
                    "Scaled.",
                ]
            }
        )
    )
    kernel.check("%agent --mode bypassPermissions --no-widgets --script t.json scale the sales\n")
    assert panel.cells[1]["source"] == new
    assert kernel.check("print(df['a'].tolist(), total, fresh)").strip() == "[10, 20] 5 1"
    kernel.check("total = 99\n")  # the person's own work after the run
    history = kernel.check("%agent_history\n")
    assert "you (prompt 1): scale the sales" in history

    out = kernel.check("%agent_rewind\n")
    assert "Rewound to before prompt 1 (scale the sales)" in out
    # The notebook model: the cell's source is back.
    assert panel.cells[1]["source"] == "total = 0"
    # The variables: the DataFrame is back, the name the run made is gone; the person's total stays.
    assert kernel.check("print(df['a'].tolist(), total, 'fresh' in dir())").strip() == "[1, 2] 99 False"
    assert "  - variable total (changed since the agent's run)" in out
    assert "Variables removed (the run created them):\n  - fresh" in out
    # The lock the person had could not be pickled before the run: named, with the cell to re-run.
    assert "variable lock (cannot be pickled (TypeError)): re-run cell 2 · df = df * 10" in out
    assert kernel.check("print(type(lock).__name__)").strip() == "RLock"
    # The conversation is empty again.
    assert kernel.check(f"print(len({MAGICS}.agent.messages))").strip() == "0"
