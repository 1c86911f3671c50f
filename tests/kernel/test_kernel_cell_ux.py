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

from tests.kernel.kernel_harness import Kernel

pytestmark = pytest.mark.kernel

ORIGINAL = "hello world\nsecond line\n"
TURNS = [
    [{"type": "tool_use", "id": "r1", "name": "Read", "input": {"file_path": "a.txt"}}],
    [{"type": "tool_use", "id": "e1", "name": "Edit",
      "input": {"file_path": "a.txt", "old_string": "hello world", "new_string": "goodbye world"}}],
    "Changed the greeting.",
]


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


def _type(k: Kernel, comm_id: str, value: str) -> str:
    msg = k.kc.session.msg("comm_msg", {"comm_id": comm_id, "data": {"method": "update", "state": {"value": value},
                                                                       "buffer_paths": []}})
    k.kc.shell_channel.send(msg)
    return str(msg["header"]["msg_id"])


def _idle_for(k: Kernel, msg_id: str) -> bool:
    return any(m["msg_type"] == "status" and m["parent_header"].get("msg_id") == msg_id
               and m["content"]["execution_state"] == "idle" for m in k.messages)


def test_each_typed_key_is_acknowledged_while_the_cell_awaits(loaded: Kernel, tmp_path: Path):
    """Without an idle per update, a browser sends only the first key (the 'Denied: k' bug)."""
    cell = loaded.execute("%agent --script edit.json greet differently")
    allow = loaded.wait_for("the Allow button", lambda: loaded.find_button("Allow"))
    reason = next(c for c in loaded.siblings(allow) if loaded.models[c].get("_model_name") == "TextModel")
    typed = ""
    for ch in "no":
        typed += ch
        # What the browser does: the next key is sent only after the idle for the previous one.
        sent = _type(loaded, reason, typed)
        loaded.wait_for(f"the kernel's idle for the update {typed!r}", lambda sent=sent: _idle_for(loaded, sent), timeout=30)
    deny = next(c for c in loaded.siblings(allow) if loaded.models[c].get("description") == "Deny")
    assert loaded.models[reason]["value"] == "no"
    loaded.click(deny)
    ex = loaded.wait(cell)
    assert ex.status == "ok", ex.text
    assert loaded.shows("Denied: no")
    assert (tmp_path / "a.txt").read_text() == ORIGINAL
