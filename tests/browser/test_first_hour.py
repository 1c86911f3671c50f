"""A newcomer's first hour, as the README tells it, in Notebook 7 and JupyterLab through Chromium.

The README's cells are typed key by key into a notebook at the root of a fresh copy of the
repository's examples, run with Shift+Enter, answered with real clicks (Allow; Deny with a
reason typed key by key). The notebook is opened the ways a person opens one: by URL, and in
Notebook 7 from the file browser's New menu with the file browser's tab left open (that tab stays
connected to the new kernel and closes every comm the kernel opens; notebook/comm_guard.py).
Screenshots go to a temporary folder (tests/support/browser.py: SCREENSHOTS).
"""

from __future__ import annotations

import json
import re
import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.support.browser import PROJECT_ROOT, SCREENSHOTS, JupyterServer, NotebookPage

pytestmark = pytest.mark.browser

README = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8")


def readme_cells(prose: str, n: int) -> list[str]:
    """The `n` ```python blocks that follow the README's sentence starting with `prose`."""
    blocks = re.compile(r"```python\n(.*?)```", re.S).findall(README, README.index(prose))
    assert len(blocks) >= n, f"fewer than {n} python blocks after {prose!r} in the README"
    return blocks[:n]


SETUP, RUN = readme_cells("In a notebook started in the repository's directory", 2)
REASON = "it is a quote"


def fresh_clone(server: JupyterServer) -> Path:
    """A folder under the server's root holding what a clone's root holds for the README: the
    examples (teaching notebooks as committed, their transcripts and servers)."""
    root = server.root / f"clone{uuid.uuid4().hex[:6]}"
    shutil.copytree(PROJECT_ROOT / "examples", root / "examples", ignore=shutil.ignore_patterns("__pycache__"))
    return root


def type_and_run(nb: NotebookPage, source: str) -> int:
    i = nb.add_cell("")
    nb.type_into(i, source.rstrip("\n"))
    nb.run(i)
    return i


def walk_the_readme(nb: NotebookPage, clone: Path, shot: str) -> int:
    """The README's two cells, Allow; then the same request again, Deny with a typed reason."""
    i = type_and_run(nb, SETUP)
    nb.wait_done(i)
    assert "34" not in nb.text(i)  # no stray value under the setup cell
    i = type_and_run(nb, RUN)
    nb.prompt(i)
    nb.screenshot(nb.cell(i), SCREENSHOTS / f"{shot}_prompt.png")
    nb.button(i, "Allow").click()
    nb.wait_text(i, 'now says "the"')
    nb.wait_done(i)
    assert (clone / "notes.txt").read_text() == "Meeting notes: the plan is ready.\n"

    (clone / "notes.txt").write_text("Meeting notes: teh plan is ready.\n")
    i = type_and_run(nb, RUN.replace("%agent ", "%agent --new ", 1))
    nb.prompt(i)
    nb.type_reason(i, REASON)
    nb.button(i, "Deny").click()
    nb.wait_text(i, "still says")
    nb.wait_done(i)
    text = nb.text(i)
    assert f"Denied: {REASON}" in text and "now says" not in text
    assert (clone / "notes.txt").read_text() == "Meeting notes: teh plan is ready.\n"
    nb.screenshot(nb.cell(i), SCREENSHOTS / f"{shot}_denied.png")
    return i


def test_notebook7_new_from_the_file_browser_with_its_tab_left_open(notebook_server: JupyterServer, browser: Any):
    clone = fresh_clone(notebook_server)
    tree, nb = notebook_server.new_from_tree(browser, clone.name)
    try:
        walk_the_readme(nb, clone, "nb7_from_tree")
        i = type_and_run(nb, "print(__import__('ipy_agent.magics').magics.current_session().bridge.status())")
        nb.wait_done(i)
        assert "connected to" in nb.text(i)  # the live-notebook bridge survived the file browser's close
        assert not tree.is_closed()  # the file browser's tab was there all along
    finally:
        tree.context.close()


def test_jupyterlab_new_from_the_launcher(lab_server: JupyterServer, browser: Any):
    clone = fresh_clone(lab_server)
    nb = lab_server.new_from_launcher(browser, clone.name)
    walk_the_readme(nb, clone, "lab_from_launcher")
    i = type_and_run(nb, "%agent_tools")
    nb.wait_done(i)
    tools = nb.text(i)
    assert re.search(r"NotebookRead\s+yes", tools) and re.search(r"NotebookRun\s+yes", tools), tools
    nb.close()


@pytest.mark.timeout(600)  # two notebooks, a reopen and the whole tour: longer than one browser test
def test_the_readme_by_url_then_the_tour_with_run_all(server: JupyterServer, browser: Any):
    """JupyterLab and Notebook 7, each notebook opened by its URL: the README's cells, saved and
    reopened without the kernel; then the tour with Run All, its approval clicked, saved."""
    clone = fresh_clone(server)
    name = f"{clone.name}/first_hour.ipynb"
    nb = server.open(browser, name)
    denied = walk_the_readme(nb, clone, f"{server.kind}_by_url")
    nb.save()
    nb.close()
    server.stop_kernels()
    again = server.open(browser, name)
    shown = again.wait_text(denied, "still says")
    assert f"Denied: {REASON}" in shown and "model not found" not in shown.lower()
    again.close()

    tour = server.open(browser, f"{clone.name}/examples/01_tour.ipynb")
    tour.js("void window.jupyterapp.commands.execute('notebook:run-all-cells'); return true;")
    # The tour's `%agent` cell waits for the learner: Run All stops there until Allow is clicked.
    agent_cell = next(i for i, c in enumerate(tour.cells()) if c["source"].startswith("%agent fix the typo"))
    tour.button(agent_cell, "Allow").click()
    tour.wait_text(agent_cell, "Allowed once")
    last = max(i for i, c in enumerate(tour.cells()) if c["cell_type"] == "code")
    tour.wait_done(last, timeout=240)
    cells = tour.cells()
    errors = [i for i, c in enumerate(cells) for o in c["outputs"] if o.get("output_type") == "error"]
    assert errors == [], f"cells {errors} of the tour failed: {[cells[i]['outputs'] for i in errors]}"
    assert any("run ended: end_turn" in json.dumps(c["outputs"]) for c in cells)
    tour.save()
    tour.close()


SLEEP = {
    "provenance": {"kind": "hand-written", "note": "a long command to interrupt"},
    "turns": [
        [{"type": "tool_use", "id": "s1", "name": "Bash", "input": {"command": "sleep 600", "description": "Wait"}}],
        "Waited.",
    ],
}


def test_the_toolbar_interrupt_stops_a_foreground_run_with_one_line(lab_server: JupyterServer, browser: Any):
    clone = fresh_clone(lab_server)
    (clone / "sleep.json").write_text(json.dumps(SLEEP))
    nb = lab_server.open(browser, f"{clone.name}/interrupt.ipynb")
    i = type_and_run(nb, "%load_ext ipy_agent")
    nb.wait_done(i)
    i = type_and_run(nb, "%agent --allow Bash(sleep:*) --script sleep.json wait a minute")
    nb.wait_text(i, "running tools")
    nb.page.locator(".jp-NotebookPanel-toolbar [data-command='notebook:interrupt-kernel']").first.click()
    nb.wait_done(i)
    text = nb.text(i)
    assert "KeyboardInterrupt: the agent run was interrupted" in text
    assert "run_agent_cell" not in text and "__import__" not in text and "Traceback" not in text
    i = type_and_run(nb, "print(6 * 7)")
    nb.wait_done(i)
    assert "42" in nb.text(i)
    nb.close()
