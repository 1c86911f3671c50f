"""A newcomer's first hour, as the README tells it, in Notebook 7 and JupyterLab through Chromium.

The README's cells are typed key by key into a notebook at the root of a fresh copy of the
repository's examples, run with Shift+Enter, answered with real clicks (Allow; Deny with a
reason typed key by key). The notebook is opened the ways a person opens one: by URL, and in
Notebook 7 from the file browser's New menu with the file browser's tab left open (that tab stays
connected to the new kernel and closes every comm the kernel opens; notebook/comm_guard.py).
Screenshots go to a temporary folder (tests/support/browser.py: SCREENSHOTS).
"""

from __future__ import annotations

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
    """A folder under the server's root holding what a clone's root holds for the README."""
    root = server.root / f"clone{uuid.uuid4().hex[:6]}"
    shutil.copytree(PROJECT_ROOT / "examples" / "transcripts", root / "examples" / "transcripts")
    return root


def type_and_run(nb: NotebookPage, source: str) -> int:
    i = nb.add_cell("")
    nb.type_into(i, source.rstrip("\n"))
    nb.run(i)
    return i


def walk_the_readme(nb: NotebookPage, clone: Path, shot: str) -> None:
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
