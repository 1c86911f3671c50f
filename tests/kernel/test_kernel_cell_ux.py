"""The agent's cell in a real kernel: typed reasons while the cell awaits, the saved record.

A front end sends a Text widget's value one `update` message at a time and waits for the kernel's
`status: idle` reply to each before it sends the next (ipywidgets' throttle). These tests send
what a browser sends for typing and check the kernel answers each update while `%agent` awaits.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kernel.test_kernel_widgets import ORIGINAL, READ_THEN_EDIT
from tests.support.kernel import Kernel

pytestmark = pytest.mark.kernel

TURNS = READ_THEN_EDIT  # read a.txt, then edit its first line


@pytest.fixture
def loaded(tmp_path: Path) -> Iterator[Kernel]:
    (tmp_path / "a.txt").write_text(ORIGINAL)
    (tmp_path / "edit.json").write_text(json.dumps({"turns": TURNS}))
    k = Kernel(tmp_path)
    try:
        k.check("%load_ext ipy_agent")
        yield k
    finally:
        k.shutdown()


def test_each_typed_key_is_acknowledged_while_the_cell_awaits(loaded: Kernel, tmp_path: Path):
    """Without an idle per update, a browser sends only the first key (the 'Denied: k' bug)."""
    cell = loaded.execute("%agent --script edit.json greet differently")
    allow = loaded.wait_for("the Allow button", lambda: loaded.find_button("Allow"))
    reason = next(c for c in loaded.siblings(allow) if loaded.models[c].get("_model_name") == "TextModel")
    typed = ""
    for ch in "no":
        typed += ch
        # What the browser does: the next key is sent only after the idle for the previous one.
        sent = loaded.set_value(reason, typed)
        loaded.wait_for(
            f"the kernel's idle for the update {typed!r}", lambda sent=sent: loaded.idle_after(sent), timeout=30
        )
    deny = next(c for c in loaded.siblings(allow) if loaded.models[c].get("description") == "Deny")
    assert loaded.models[reason]["value"] == "no"
    loaded.click(deny)
    ex = loaded.wait(cell)
    assert ex.status == "ok", ex.text
    assert loaded.shows("Denied: no")
    assert (tmp_path / "a.txt").read_text() == ORIGINAL


def _cell_messages(k: Kernel, msg_id: str) -> list[dict]:
    return [m for m in k.messages if m["parent_header"].get("msg_id") == msg_id]


def test_the_cell_says_what_starts_before_anything_else_and_ends_with_the_record(loaded: Kernel):
    cell = loaded.execute("%agent --script edit.json greet differently")
    allow = loaded.wait_for("the Allow button", lambda: loaded.find_button("Allow"))
    loaded.click(allow)
    ex = loaded.wait(cell)
    assert ex.status == "ok", ex.text
    msgs = [m for m in _cell_messages(loaded, cell) if m["msg_type"] not in ("status", "execute_input")]
    first = msgs[0]
    # Shown before the slow first-run imports and before any widget exists.
    assert first["msg_type"] == "display_data"
    assert first["content"]["data"]["text/plain"] == "ipy_agent: starting with the scripted model edit.json (offline)…"
    display_id = first["content"]["transient"]["display_id"]
    updates = [
        m["content"]["data"]
        for m in msgs
        if m["msg_type"] == "update_display_data" and m["content"]["transient"]["display_id"] == display_id
    ]
    assert "application/vnd.jupyter.widget-view+json" in updates[0]  # the live view replaced the start line
    final = updates[-1]  # and the record replaced the live view
    assert set(final) == {"text/html", "text/plain"}
    assert "Changed the greeting." in final["text/plain"] and "+goodbye world" in final["text/plain"]


def test_a_background_prompt_is_announced_in_the_cells_the_person_runs(loaded: Kernel, tmp_path: Path):
    first = loaded.run("%agent --background --script edit.json greet differently")
    assert first.status == "ok"
    agent_cell = first.reply["execution_count"]
    allow = loaded.wait_for("the Allow button", lambda: loaded.find_button("Allow"))
    note = loaded.check("print('working elsewhere')")
    assert f"a background run in cell [{agent_cell}] is waiting for your approval: Edit a.txt" in note
    loaded.click(allow)
    loaded.wait_for("the run to finish", lambda: loaded.shows("Finished"))
    assert "waiting for your approval" not in loaded.check("print('later')")
    assert (tmp_path / "a.txt").read_text() == "goodbye world\nsecond line\n"
