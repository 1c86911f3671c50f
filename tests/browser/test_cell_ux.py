"""The agent's cell as a person meets it, in JupyterLab and Notebook 7 driven through Chromium.

A person types a Deny reason key by key and clicks Deny with the mouse; the model must receive
the whole reason, whether the cell awaits the run (the default) or the run is in the background.
A saved notebook reopened without its kernel must still show the run's record (no "model not
found"), and its .ipynb must carry readable text, not a widget repr. A prompt must be in view.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.browser.harness import JupyterServer, NotebookPage

pytestmark = pytest.mark.browser

ORIGINAL = "teh plan\nline two\n"
EDIT_TURNS = [
    [{"type": "text", "text": "Let me read the file."},
     {"type": "tool_use", "id": "r1", "name": "Read", "input": {"file_path": "notes.txt"}}],
    [{"type": "tool_use", "id": "e1", "name": "Edit",
      "input": {"file_path": "notes.txt", "old_string": "teh", "new_string": "the"}}],
    "All right, I left notes.txt as it was.",
]
REASON = "keep the spelling, it is a quote"
IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"


def _project_files(project: Path) -> None:
    (project / "notes.txt").write_text(ORIGINAL)
    (project / "edit.json").write_text(json.dumps({"turns": EDIT_TURNS}))


def _open(server: JupyterServer, browser: Any, project: Path) -> tuple[NotebookPage, str]:
    name = f"{project.name}/t.ipynb"
    nb = server.open(browser, name)
    nb.run_and_wait(f"import os; os.chdir({str(project)!r})\n%load_ext ipy_agent")
    return nb, name


def _last_tool_result(nb: NotebookPage) -> str:
    """What the model received for the last tool call, read through a cell as a person would."""
    i = nb.run_and_wait(
        "from ipy_agent.magics import current_magics\n"
        "_m = current_magics().current.messages\n"
        "_r = [b for m in _m if m['role'] == 'user' and isinstance(m['content'], list) for b in m['content']"
        " if b.get('type') == 'tool_result']\n"
        "print('RESULT>>' + str(_r[-1]['content']) + '<<')")
    text = nb.text(i)
    return text[text.index("RESULT>>") + 8: text.index("<<")]


@pytest.mark.parametrize("mode", ["awaiting", "background"])
def test_a_reason_typed_key_by_key_reaches_the_model_whole(server: JupyterServer, browser: Any, project: Path, mode: str):
    _project_files(project)
    nb, _ = _open(server, browser, project)
    flag = " --background" if mode == "background" else ""
    i = nb.add_cell(f"%agent{flag} --script edit.json fix the typo in notes.txt")
    nb.run(i)
    nb.prompt(i)
    nb.type_reason(i, REASON, delay_ms=60)
    nb.button(i, "Deny").click()
    nb.wait_text(i, "Finished")
    nb.wait_done(i)
    assert f"Denied: {REASON}" in nb.text(i)
    assert REASON in _last_tool_result(nb)
    assert (project / "notes.txt").read_text() == ORIGINAL
    nb.close()
