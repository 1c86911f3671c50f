"""Every teaching notebook run in JupyterLab with Run > Run All Cells and saved, in a copy of the repository.

A person who works through the course runs each notebook in the browser and saves it; their
working copy then holds notebooks with outputs. That must not make `python -m pytest` fail:
the committed-notebook checks read `git show HEAD:...`, not the working copy. This test does
what the person does, in a clone of this checkout (the real one is left alone): one JupyterLab
at the clone's root, each notebook opened by URL, Run All from the Run menu, waited for until
the kernel is idle, saved with Ctrl+S. Then every saved notebook must have outputs and no error,
and the clone's own `tests/examples` fast checks must pass there.

Each notebook is executed once in CI. When IPY_AGENT_COURSE_SITE names the course site `.ci/run`
has built (examples/course/build.py keeps each notebook it executed), the notebooks are saved into
the clone from there, as the learner's working copy, and JupyterLab runs only the chapters where
the open page takes part (IN_THE_PAGE: run headless, they talk to a stand-in for the page; here
JupyterLab's own page answers). Without a site, JupyterLab runs every notebook.

Slow (all notebooks one after another, a few minutes): marked `slow` as well as `browser`.
It tests the committed notebooks (a clone has what HEAD has).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

from examples.course import build as course
from tests.support.browser import PROJECT_ROOT, TIMEOUT, JupyterServer, NotebookPage

from .conftest import _need_browser

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(1800)]

NOTEBOOKS = sorted(p.name for p in (PROJECT_ROOT / "examples").glob("[0-9][0-9]_*.ipynb"))
FAST = "not kernel and not browser and not hub and not slow"  # the checks that read the files
# Cells the agent edits in a notebook's own run (a replaced cell loses its count until rerun).
EDITED_BY_THE_AGENT = {"13_review_and_rewind.ipynb": ["13-report"]}
# The chapters whose cells talk to the open notebook's page (the live notebook, review, running
# cells): always run here, in JupyterLab, whatever the course build already ran headless.
IN_THE_PAGE = {"09_live_notebook.ipynb", "13_review_and_rewind.ipynb", "14_running_cells.ipynb"}
RUN_ALL_WAIT = 420.0  # seconds for one notebook's Run All (the long-session one makes 40 requests)


@pytest.fixture(scope="module")
def clone(tmp_path_factory: Any) -> Path:
    root = tmp_path_factory.mktemp("course") / "ipy_agent"
    subprocess.run(["git", "clone", "-q", "--shared", str(PROJECT_ROOT), str(root)], check=True, timeout=120)
    return root


@pytest.fixture(scope="module")
def lab(clone: Path) -> Iterator[JupyterServer]:
    _need_browser(extension=True)
    # Run All with nobody at the prompts: answered as each scene says, and said in the cells.
    server = JupyterServer("lab", clone, env={"IPY_AGENT_COURSE_AUTOANSWER": "1"}).start()
    try:
        yield server
    finally:
        server.stop()


def run_all(nb: NotebookPage) -> None:
    """Run > Run All Cells, clicked in the menu bar as a person does."""
    nb.page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    nb.page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()


def wait_all_ran(nb: NotebookPage) -> None:
    """Until every code cell has its execution count (or one showed an error: Run All stops
    there), no cell is queued or running, and the kernel is idle."""
    done = (
        "const p = P(); const k = p.sessionContext.session && p.sessionContext.session.kernel;"
        "if (!k || k.status !== 'idle') return false;"
        "const code = p.content.model.sharedModel.cells.filter(c => c.cell_type === 'code');"
        "if (code.some(c => c.execution_state === 'running')) return false;"
        "return code.every(c => c.execution_count !== null || arg.includes(c.id))"
        " || code.some(c => (c.outputs || []).some(o => o.output_type === 'error'));"
    )
    edited = EDITED_BY_THE_AGENT.get(nb.name.rsplit("/", 1)[-1], [])
    nb.wait_js(f"{nb.name}: every cell run and the kernel idle", done, edited, timeout=RUN_ALL_WAIT)


def open_next(nb: NotebookPage, name: str) -> None:
    """Open `name` in the same JupyterLab page (File Browser's open: no reload of the app)."""
    nb.js("void window.jupyterapp.commands.execute('docmanager:open', {path: arg}); return true;", name)
    nb.name = name
    nb.wait_js(
        f"{name} the current document", "const w = P(); return !!(w && w.context && w.context.path === arg);", name
    )
    nb.wait_ready()


def in_the_browser(clone: Path) -> list[str]:
    """The notebooks JupyterLab runs here; the others are saved into the clone as the course build
    in IPY_AGENT_COURSE_SITE executed them (a learner's working copy, with outputs)."""
    site = os.environ.get("IPY_AGENT_COURSE_SITE")
    if not site:
        return NOTEBOOKS
    for name in NOTEBOOKS:
        if name not in IN_THE_PAGE:
            try:
                nb = course.executed_notebook(Path(site), name)
            except course.BuildError as e:
                pytest.fail(str(e), pytrace=False)
            nbformat.write(nb, clone / "examples" / name)
    return [name for name in NOTEBOOKS if name in IN_THE_PAGE]


def test_running_and_saving_every_teaching_notebook_leaves_the_tests_green(
    lab: JupyterServer, clone: Path, browser: Any
):
    assert len(NOTEBOOKS) >= 12 and set(NOTEBOOKS) >= IN_THE_PAGE
    took: dict[str, float] = {}
    run_here = in_the_browser(clone)
    nb = lab.open(browser, f"examples/{run_here[0]}")
    try:
        for k, name in enumerate(run_here):
            start = time.monotonic()
            if k:
                open_next(nb, f"examples/{name}")
            run_all(nb)
            wait_all_ran(nb)
            nb.save()
            nb.js("P().dispose(); return true;")  # saved: closing asks nothing
            lab.stop_kernels()  # one kernel at a time on a shared machine
            took[name] = round(time.monotonic() - start, 1)
            print(f"{name}: {took[name]} s", flush=True)
    finally:
        nb.close()
    print("seconds per notebook:", json.dumps(took))

    for name in NOTEBOOKS:
        saved = json.loads((clone / "examples" / name).read_text(encoding="utf-8"))
        code = [c for c in saved["cells"] if c["cell_type"] == "code"]
        edited = EDITED_BY_THE_AGENT.get(name, [])
        unrun = [i for i, c in enumerate(code) if c.get("execution_count") is None and c.get("id") not in edited]
        errors = [
            f"code cell {i}: {o.get('ename')}: {o.get('evalue')}"
            for i, c in enumerate(code)
            for o in c.get("outputs", [])
            if o.get("output_type") == "error"
        ]
        assert not errors, f"{name}: cells errored in the browser: {errors}"
        assert not unrun, f"{name}: code cells {unrun} did not run"
        assert any(c.get("outputs") for c in code), f"{name} was saved without outputs"

    changed = subprocess.run(
        ["git", "status", "--porcelain", "examples"], cwd=clone, capture_output=True, text=True, timeout=60
    ).stdout
    assert all(f"examples/{name}" in changed for name in NOTEBOOKS), f"not every notebook was saved:\n{changed}"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    env["PYTHONPATH"] = str(clone)
    checks = subprocess.run(
        [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "tests/examples", "-m", FAST],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT * 6,
    )
    assert checks.returncode == 0, f"the tests fail after the notebooks were run and saved:\n{checks.stdout[-4000:]}"
    for name in NOTEBOOKS:
        assert f"test_committed_notebook_has_no_outputs[{name[:-6]}] PASSED" in checks.stdout, name
