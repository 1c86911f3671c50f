"""Running cells in a real JupyterLab: the prompt says what a run will overwrite, and cell tags hold.

The person has built up `df` in the kernel. The agent first tries to run a cell the person tagged
`agent:never-run` (the tag travels from JupyterLab's cell metadata through the extension): it is
refused without a prompt. Then it asks to run a cell that filters `df`; the prompt shows
what the run overwrites (`df`, a DataFrame of 10,000 rows and 2 columns) before the person clicks Allow, and afterwards the kernel's
`df` is what the cell made of it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import nbformat
import pytest

from tests.support.browser import SCREENSHOTS, JupyterServer, NotebookPage
from tests.support.transcript import use

pytestmark = pytest.mark.browser


@pytest.fixture
def opened(lab_server: JupyterServer, browser: Any) -> Iterator[list[NotebookPage]]:
    pages: list[NotebookPage] = []
    yield pages
    for p in pages:
        p.close()


def test_approving_a_run_whose_prompt_shows_what_it_overwrites(lab_server, browser, opened):
    turns = [
        [use("NotebookRun", "n0", cell_id="train")],
        [use("NotebookRun", "n1", cell_id="filt")],
        "Filtered df to the even rows.",
    ]
    (lab_server.root / "effects.json").write_text(json.dumps({"turns": turns}))
    path = lab_server.notebook_file(
        "effects.ipynb",
        [
            "%load_ext ipy_agent",
            "import pandas as pd\ndf = pd.DataFrame({'a': range(10_000), 'b': 1})",
            "trained = True",
            "df = df[df.a % 2 == 0]",
            "%agent --script effects.json go",
            "print(len(df), globals().get('trained'))",
        ],
        ids=["load", "data", "train", "filt", "agent", "check"],
    )
    nb = nbformat.read(path, as_version=4)
    nb.cells[2].metadata["tags"] = ["agent:never-run"]
    nbformat.write(nb, path)
    page = lab_server.open(browser, "effects.ipynb")
    opened.append(page)
    for i in (0, 1):
        page.run(i)
        page.wait_done(i)
    page.run(4)
    prompt = page.prompt(4)
    shown = prompt.inner_text()
    assert "overwrites df: DataFrame 10,000 × 2" in shown, shown  # noqa: RUF001
    assert "cell 4 · df = df[df.a % 2 == 0]" in shown  # the cell as the page numbers it, not its id
    assert "filt" not in shown.splitlines()[0]
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.cell(4).screenshot(path=str(SCREENSHOTS / "running-cells-effects-prompt.png"))
    page.button(4, "Allow").click()
    page.wait_done(4)
    page.wait_text(4, "Filtered df to the even rows.")
    assert "must not be run" in page.text(4) or "denied" in page.text(4).lower()
    page.run(5)
    page.wait_done(5)
    assert page.text(5).strip() == "5000 None"
    cells = page.cells()
    assert cells[3]["execution_count"] is not None and cells[2]["execution_count"] is None
