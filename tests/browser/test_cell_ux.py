"""The agent's cell as a person meets it, in JupyterLab and Notebook 7 driven through Chromium.

A person types a Deny reason key by key and clicks Deny with the mouse; the model must receive
the whole reason, whether the cell awaits the run (the default) or the run is in the background.
A saved notebook reopened without its kernel must still show the run's record (no "model not
found"), and its .ipynb must carry readable text, not a widget repr. A prompt must be in view.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.browser.harness import SCREENSHOTS, JupyterServer, NotebookPage

pytestmark = pytest.mark.browser

ORIGINAL = "teh plan\nline two\n"
EDIT_TURNS = [
    [
        {"type": "text", "text": "Let me read the file."},
        {"type": "tool_use", "id": "r1", "name": "Read", "input": {"file_path": "notes.txt"}},
    ],
    [
        {
            "type": "tool_use",
            "id": "e1",
            "name": "Edit",
            "input": {"file_path": "notes.txt", "old_string": "teh", "new_string": "the"},
        }
    ],
    "All right, I left notes.txt as it was.",
]
REASON = "keep the spelling, it is a quote"


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
        "from ipy_agent.magics import current_session\n"
        "_m = current_session().agent.messages\n"
        "_r = [b for m in _m if m['role'] == 'user' and isinstance(m['content'], list) for b in m['content']"
        " if b.get('type') == 'tool_result']\n"
        "print('RESULT>>' + str(_r[-1]['content']) + '<<')"
    )
    text = nb.text(i)
    return text[text.index("RESULT>>") + 8 : text.index("<<")]


@pytest.mark.parametrize("mode", ["awaiting", "background"])
def test_a_reason_typed_key_by_key_reaches_the_model_whole(
    server: JupyterServer, browser: Any, project: Path, mode: str
):
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


ALLOW_TURNS = [
    [
        {"type": "text", "text": "Let me read the file."},
        {"type": "tool_use", "id": "r1", "name": "Read", "input": {"file_path": "notes.txt"}},
    ],
    [
        {
            "type": "tool_use",
            "id": "e1",
            "name": "Edit",
            "input": {"file_path": "notes.txt", "old_string": "teh", "new_string": "the"},
        }
    ],
    "Fixed: notes.txt now says *the plan*.",
]


def _saved_outputs(server: JupyterServer, name: str, index: int) -> list[dict[str, Any]]:
    return list(server.saved(name)["cells"][index]["outputs"])


def test_a_saved_notebook_reopened_without_its_kernel_shows_the_record(
    server: JupyterServer, browser: Any, project: Path
):
    (project / "notes.txt").write_text(ORIGINAL)
    (project / "allow.json").write_text(json.dumps({"turns": ALLOW_TURNS}))
    nb, name = _open(server, browser, project)
    i = nb.add_cell("%agent --script allow.json fix the typo in notes.txt")
    nb.run(i)
    nb.prompt(i)
    if server.kind == "lab":
        nb.screenshot(
            nb.prompt(i).locator("xpath=ancestor::div[contains(@class,'jp-OutputArea-output')][1]"),
            SCREENSHOTS / "prompt.png",
        )
    nb.button(i, "Allow").click()
    nb.wait_text(i, "Finished")
    nb.wait_done(i)
    assert (project / "notes.txt").read_text() == "the plan\nline two\n"
    if server.kind == "lab":
        nb.screenshot(nb.output_area(i), SCREENSHOTS / "finished.png")
    nb.save()
    nb.close()

    # The file: readable text and HTML, no widget view left, no widget repr as the only text.
    outputs = _saved_outputs(server, name, i)
    texts = ["".join(o.get("data", {}).get("text/plain", "")) for o in outputs]
    htmls = ["".join(o.get("data", {}).get("text/html", "")) for o in outputs]
    assert not any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in outputs)
    assert not any("VBox(" in t or "HBox(" in t for t in texts)
    record = "\n".join(texts)
    assert "Let me read the file." in record and "Fixed: notes.txt now says" in record
    assert "Read notes.txt" in record and "Edit notes.txt" in record and "Allowed once" in record
    assert "-teh plan" in record and "+the plan" in record  # the approved edit's diff
    assert "Finished (3 turns)" in record and "no cost (offline model)" in record
    assert any("-teh plan" in h and "Finished" in h for h in htmls)

    # Reopened without the kernel that made the widgets: the record shows, no widget error.
    server.stop_kernels()
    nb2 = server.open(browser, name)
    shown = nb2.wait_text(i, "Finished (3 turns)")
    assert "Edit notes.txt" in shown and "+the plan" in shown
    assert "model not found" not in shown.lower() and "error displaying widget" not in shown.lower()
    nb2.close()


LONG = "\n\n".join(f"Paragraph {n}: looking at the notes before changing anything." for n in range(40))
SCROLL_TURNS = [
    [
        {"type": "text", "text": LONG},
        {"type": "tool_use", "id": "e1", "name": "Write", "input": {"file_path": "new.txt", "content": "x\n"}},
    ],
    "Done.",
]


def test_a_prompt_below_the_fold_is_brought_into_view(server: JupyterServer, browser: Any, project: Path):
    (project / "long.json").write_text(json.dumps({"turns": SCROLL_TURNS}))
    nb, _ = _open(server, browser, project)
    i = nb.add_cell("%agent --script long.json write new.txt")
    nb.run(i)
    nb.prompt(i)
    deny = nb.button(i, "Deny")
    nb.wait_text(i, "waiting for you")
    # The text above the prompt is far taller than the window: only scrolling shows the prompt.
    assert nb.output_area(i).evaluate("el => el.getBoundingClientRect().height") > nb.page.viewport_size["height"]
    end = time.monotonic() + 30  # focus and scrolling are asynchronous in the page
    while not nb.in_viewport(deny) and time.monotonic() < end:
        time.sleep(0.2)
    assert nb.in_viewport(deny), "the approval prompt is outside the visible part of the notebook"
    deny.click()
    nb.wait_text(i, "Finished")
    nb.close()
