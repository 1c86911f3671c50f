"""The live notebook in a real JupyterLab in a real Chromium: the agent reads, edits and runs cells.

A person opens a notebook, loads ipy_agent and runs `%agent --script ...` (a ScriptedModel
transcript: offline, deterministic). The agent reads the live notebook, changes cells and runs
them; the person answers its prompts with the mouse. What is checked is the notebook MODEL as
JupyterLab holds it (sources, outputs, execution counts), before anything is saved, and what the
agent's cell shows. Without a browser these tests skip locally and fail in CI (CI=true).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.browser import SCREENSHOTS, JupyterServer, NotebookPage
from tests.support.transcript import use

pytestmark = pytest.mark.browser

# `browser` and `lab_server` are the shared fixtures of tests/browser/conftest.py.


def make_notebook(server: JupyterServer, name: str, agent_line: str, turns: list[Any]) -> str:
    """cell 0 loads ipy_agent, cell 1 runs the agent, then c1 `x = 1` and c2 `print(x + 1)`."""
    script = name.replace(".ipynb", ".json")
    (server.root / script).write_text(json.dumps({"turns": turns}))
    server.notebook_file(
        name,
        ["%load_ext ipy_agent", f"{agent_line} --script {script} go", "x = 1", "print(x + 1)"],
        ids=["load", "agent", "c1", "c2"],
    )
    return name


@pytest.fixture
def opened(lab_server: JupyterServer, browser: Any) -> Iterator[list[NotebookPage]]:
    pages: list[NotebookPage] = []
    yield pages
    for p in pages:
        p.close()


def start(server: JupyterServer, browser: Any, opened: list[NotebookPage], name: str) -> NotebookPage:
    page = server.open(browser, name)
    opened.append(page)
    page.run(0)
    page.wait_done(0)
    page.run(1)
    return page


def test_agent_reads_replaces_inserts_and_runs_cells_in_the_live_notebook(lab_server, browser, opened):
    name = make_notebook(
        lab_server,
        "main.ipynb",
        "%agent",
        [
            [use("NotebookRead", "r1")],
            [use("NotebookEdit", "e1", notebook_path="main.ipynb", cell_id="c1", new_source="x = 41")],
            [
                use(
                    "NotebookEdit",
                    "e2",
                    notebook_path="main.ipynb",
                    cell_id="c2",
                    edit_mode="insert",
                    cell_type="code",
                    new_source="y = x + 1\nprint('y is', y)\ny * 2",
                )
            ],
            [use("NotebookRun", "n1", cell_id="c1")],
            [use("NotebookRun", "n2", cell_id="cell-4")],
            "Replaced x, added a cell and ran both.",
        ],
    )
    page = start(lab_server, browser, opened, name)
    # Two edits, two runs: each asks; an edit under review is accepted, a run allowed.
    for k, label in enumerate(["Accept", "Accept", "Allow", "Allow"]):
        allow = page.button(1, label)
        if k == 0:
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            page.cell(1).screenshot(path=str(SCREENSHOTS / "live-notebook-prompt.png"))
        answered = allow.element_handle()
        allow.click()
        # The answered prompt gives way to its outcome line: only then is the next prompt's
        # button the first enabled one (a click right away could land on this one again).
        page.page.wait_for_function("b => !b.isConnected", arg=answered, timeout=90_000)
    page.wait_done(1)
    page.wait_text(1, "Replaced x, added a cell and ran both.")
    page.cell(1).screenshot(path=str(SCREENSHOTS / "live-notebook-rows.png"))
    cells = page.cells()
    assert [c["source"] for c in cells[2:]] == ["x = 41", "print(x + 1)", "y = x + 1\nprint('y is', y)\ny * 2"]
    ran, inserted = cells[2], cells[4]
    assert ran["execution_count"] is not None and inserted["execution_count"] == ran["execution_count"] + 1
    assert [o["output_type"] for o in inserted["outputs"]] == ["stream", "execute_result"]
    assert inserted["outputs"][0]["text"] == "y is 42\n"
    assert inserted["outputs"][1]["data"]["text/plain"] == "84"
    # Nothing was saved: the live model changed, the file did not.
    assert page.dirty()
    on_disk = json.loads((lab_server.root / name).read_text())
    assert ["".join(c["source"]) for c in on_disk["cells"]][2:] == ["x = 1", "print(x + 1)"]


def test_a_denied_edit_leaves_the_cell_alone(lab_server, browser, opened):
    name = make_notebook(
        lab_server,
        "deny.ipynb",
        "%agent",
        [
            [use("NotebookRead", "r1")],
            [use("NotebookEdit", "e1", notebook_path="deny.ipynb", cell_id="c1", new_source="x = 99")],
            "Understood.",
        ],
    )
    page = start(lab_server, browser, opened, name)
    page.button(1, "Reject").click()
    page.wait_done(1)
    page.wait_text(1, "Understood.")
    assert page.cells()[2]["source"] == "x = 1"
    assert "rejected" in page.text(1).lower()


def test_a_cell_the_person_types_into_after_the_read_is_not_overwritten(lab_server, browser, opened):
    name = make_notebook(
        lab_server,
        "stale.ipynb",
        "%agent",
        [
            [use("NotebookRead", "r1")],
            [use("NotebookEdit", "e1", notebook_path="stale.ipynb", cell_id="c1", new_source="x = 2")],
            "I will read it again.",
        ],
    )
    page = start(lab_server, browser, opened, name)
    page.button(1, "Accept")  # the agent has read c1 and asks to replace it (staged in c1 too)
    page.type_into(2, "  # mine")  # meanwhile the person types into c1, key by key
    # Typing into a cell under review makes the proposal stale: the question answers itself, no
    # click needed, and the model is told to read the cell again.
    page.wait_done(1)
    page.wait_text(1, "I will read it again.")
    assert page.cells()[2]["source"] == "x = 1  # mine"
    assert "changed under review" in page.text(1) or "Stale" in page.text(1), page.text(1)


def test_a_background_run_runs_cells_while_the_kernel_is_free(lab_server, browser, opened):
    name = make_notebook(
        lab_server,
        "bg.ipynb",
        "%agent --background --allow NotebookRun",
        [
            [use("NotebookRun", "n1", cell_id="c1")],
            [use("NotebookRun", "n2", cell_id="c2")],
            "Ran them.",
        ],
    )
    page = start(lab_server, browser, opened, name)
    page.wait_done(1)  # the magic returned at once; the agent goes on in the background
    page.wait_js(
        "c2's outputs in the model",
        "const c = P().content.model.cells.get(3); return c.outputs.length > 0 && c.executionCount !== null;",
    )
    page.wait_text(1, "Ran them.")
    cells = page.cells()
    assert cells[3]["outputs"] == [{"output_type": "stream", "name": "stdout", "text": "2\n"}]
    assert cells[3]["execution_count"] == cells[2]["execution_count"] + 1


def test_the_bridge_survives_a_page_reload_and_a_kernel_restart(lab_server, browser, opened):
    name = make_notebook(lab_server, "again.ipynb", "%agent --new", [[use("NotebookRead", "r1")], "Read it."])
    page = start(lab_server, browser, opened, name)
    page.wait_done(1)
    page.wait_text(1, "Read 4 cells of again.ipynb (live)")
    # A reload: the kernel keeps running its bridge; the new page must find it by itself.
    page.page.on("dialog", lambda d: d.accept())  # "leave the page with unsaved changes?"
    page.page.reload()
    page.wait_ready()
    page.run(1)
    page.wait_done(1)
    page.wait_text(1, "Read 4 cells of again.ipynb (live)")
    # A restart: the kernel starts fresh, and the panel answers the new kernel's comm.
    page.page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.restartKernel()")
    page.wait_ready()
    page.page.evaluate("() => window.jupyterapp.commands.execute('notebook:clear-all-cell-outputs')")
    page.run(0)
    page.wait_done(0)
    page.run(1)
    page.wait_done(1)
    page.wait_text(1, "Read 4 cells of again.ipynb (live)")
    assert "ipy_agent extension answered" not in page.text(1)


def test_listing_a_500_cell_notebook_round_trip(lab_server, browser, opened):
    timing = (
        "import time, statistics\n"
        "from ipy_agent.magics import current_session\n"
        "b = current_session().bridge\n"
        "await b.ensure()\n"
        "ts = []\n"
        "for _ in range(7):\n"
        "    t = time.perf_counter(); cells = await b.list_cells(); ts.append(time.perf_counter() - t)\n"
        "one = []\n"
        "for _ in range(7):\n"
        "    t = time.perf_counter(); await b.read_cells([cells[0]['id']]); one.append(time.perf_counter() - t)\n"
        "print('CELLS', len(cells), 'MS', round(statistics.median(ts) * 1000, 1),"
        " 'ONE', round(statistics.median(one) * 1000, 1))\n"
        "await b.notify('ipy_agent is waiting for your approval in cell 2', 'warning')"
    )
    cells = ["%load_ext ipy_agent", timing]
    cells += [f"v{i} = {i}  # a cell of a long notebook\nprint(v{i})" for i in range(498)]
    lab_server.notebook_file("long.ipynb", cells)
    page = lab_server.open(browser, "long.ipynb")
    opened.append(page)
    page.run(0)
    page.wait_done(0)
    page.run(1)
    page.wait_done(1)
    page.wait_text(1, "CELLS 500")
    ms = float(page.text(1).split("MS", 1)[1].split()[0])
    one = float(page.text(1).split("ONE", 1)[1].split()[0])
    # The notification op (used by the approval prompts) shows a JupyterLab toast.
    toast = page.page.get_by_text("ipy_agent is waiting for your approval in cell 2")
    toast.first.wait_for(state="visible", timeout=30_000)
    print(
        f"\nlist_cells round trip, 500-cell notebook: {ms:.1f} ms (median of 7; target < 100 ms); "
        f"a one-cell read_cells: {one:.1f} ms"
    )


def test_the_notebooks_instructions_live_in_its_metadata_on_the_page(lab_server, browser, opened):
    """`%agent_instructions --notebook` writes the page's model (unsaved, then saved with it), and
    the next request reads the page's text, a person's unsaved edit included."""
    script = "instructions.json"
    (lab_server.root / script).write_text(json.dumps({"turns": ["One.", "Two."]}))
    lab_server.notebook_file(
        "instructions.ipynb",
        [
            "%load_ext ipy_agent",
            '%agent_instructions --notebook "Use polars, not pandas."',
            f"%agent --script {script} go",
            "from ipy_agent.magics import current_session\nprint(current_session().agent.model.requests[-1]['system'])",
        ],
        ids=["load", "set", "agent", "show"],
    )
    page = lab_server.open(browser, "instructions.ipynb")
    opened.append(page)
    for i in range(2):
        page.run(i)
        page.wait_done(i)
    page.wait_text(1, "Set the instructions of instructions.ipynb in the open notebook")
    assert page.js("return P().content.model.getMetadata('ipy_agent');") == {"instructions": "Use polars, not pandas."}
    assert page.dirty()
    # The person edits them in the page, without saving; the next request reads the page.
    page.js("P().content.model.setMetadata('ipy_agent', {instructions: 'Use pandas after all.'}); return true;")
    for i in (2, 3):
        page.run(i)
        page.wait_done(i)
    page.wait_text(3, "Use pandas after all.")
    assert "Use polars" not in page.text(3)
    page.save()
    assert lab_server.saved("instructions.ipynb")["metadata"]["ipy_agent"] == {"instructions": "Use pandas after all."}
