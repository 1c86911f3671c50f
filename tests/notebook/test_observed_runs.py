"""What a NotebookRun really changed, in a real kernel with a fake notebook page: the result and
the row say what the run was seen to add, rebind and delete beside the preview's prediction, name
plainly the change the preview could not see (a rebinding through `globals()`, a name made by
`exec`), never an untouched name, and a rewind removes the name the run made unseen and says
plainly that it cannot put back the one it rebound unseen (no snapshot was taken)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.frontend import MAGICS, LiveKernel, Panel, cell, connected_kernel
from tests.support.transcript import use

pytestmark = pytest.mark.kernel

SOURCE = "globals()['total'] = 'rebound'\nexec('made = 1')\ndel gone\nfresh = 2\n"


@pytest.fixture
def panel() -> Panel:
    return Panel(path="work.ipynb", cells=[cell(SOURCE, cell_id="c1")])


@pytest.fixture
def kernel(tmp_path: Path, panel: Panel) -> Iterator[LiveKernel]:
    with connected_kernel(tmp_path, panel) as k:
        yield k


def test_a_run_reports_what_it_changed_and_what_the_preview_missed_and_rewind_says_what_it_cannot(
    kernel: LiveKernel, tmp_path: Path
):
    kernel.check("import pandas as pd\ndf = pd.DataFrame({'a': range(1000)})\ntotal = 3\ngone = [1]\nuntouched = 'x'\n")
    (tmp_path / "t.json").write_text(json.dumps({"turns": [[use("NotebookRun", "n1", cell_id="c1")], "Done."]}))
    row = kernel.check("%agent --mode bypassPermissions --no-widgets --script t.json run it\n")
    # The person's row: the one-liner warns, the detail lists what was seen and what was missed.
    assert "ran in" in row and "changed a name the preview did not predict" in row
    assert "observed: added made (int), fresh (int); rebound total (int → str); deleted gone (list of 1)" in row
    assert "not predicted (the preview could not see all of its effects): made, total" in row
    got = json.loads(
        kernel.check(
            "import json as _j\n"
            f"_m = {MAGICS}.agent.messages\n"
            "_r = [b for m in _m if m['role'] == 'user' and isinstance(m['content'], list) for b in m['content']"
            " if b.get('type') == 'tool_result']\n"
            "print(_j.dumps({'text': ''.join(p.get('text', '') for p in _r[0]['content'])}))\n"
        )
        .strip()
        .splitlines()[-1]
    )
    text = got["text"]
    # The prediction, and beside it what was seen.
    assert "What it could change: effects not visible" in text
    assert (
        "What it changed, observed: added made (int), fresh (int); rebound total (int → str); deleted gone (list of 1); "
        "not predicted (the preview could not see all of its effects): made, total." in text
    )
    # No false change: the DataFrame and the untouched string are never named.
    assert "df" not in text.split("What it changed", 1)[1]
    assert "untouched" not in text
    assert kernel.check("print(total, made, fresh, 'gone' in dir())").strip() == "rebound 1 2 False"

    out = kernel.check("%agent_rewind\n")
    # The name made unseen goes, the predicted ones come back, the unseen rebinding is said plainly.
    assert kernel.check("print('made' in dir(), 'fresh' in dir(), gone, total)").strip() == "False False [1] rebound"
    assert "made" in out.split("Variables removed", 1)[1]
    assert (
        "variable total (cell 1 · globals()['total'] = 'rebound' changed it through code the preview could not see, "
        "so its value before was not kept): set it again, or re-run the cells that define it" in out
    )
