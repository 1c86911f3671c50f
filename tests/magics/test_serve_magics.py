"""`%agent_serve` as the person meets it in a kernel with widgets: the live view of outside calls
while the notebook is served, and, once serving stops, the static record that a notebook saved
and reopened without the kernel shows: that it stopped, and what outside calls it served.

The shell is a plain InteractiveShell with widgets on, as in a kernel; the cell's display handle
is recorded; the outside agent is the `mcp` SDK's client over streamable HTTP (tests/loop).
"""

from __future__ import annotations

import re
from types import SimpleNamespace
from typing import Any

import pytest

from tests.loop.test_mcp_serve import CLIENT, as_client

WIDGET = "application/vnd.jupyter.widget-view+json"


class Cell:
    """The serve cell's display: IPython's display(..., display_id=True) and its handle."""

    def __init__(self) -> None:
        self.shown: list[dict[str, Any]] = []

    def display(self, obj: dict[str, Any], raw: bool = False, display_id: bool = False) -> Cell:
        assert raw and display_id
        self.shown.append(obj)
        return self

    def update(self, obj: dict[str, Any], raw: bool = False) -> None:
        assert raw
        self.shown.append(obj)


def drawn(bundle: dict[str, Any]) -> str:
    """Every text of the widget a front end draws from `bundle`."""
    from ipywidgets.widgets.widget import _instances

    from tests.ui.test_widgets import texts

    return " ".join(texts(_instances[bundle[WIDGET]["model_id"]]))


@pytest.fixture
def served_cell(shell: Any, monkeypatch: pytest.MonkeyPatch) -> Cell:
    cell = Cell()
    monkeypatch.setattr(shell, "kernel", SimpleNamespace(), raising=False)  # widgets can be shown
    monkeypatch.setattr("IPython.display.display", cell.display)
    return cell


def _serve(shell: Any, capsys: pytest.CaptureFixture[str]) -> Any:
    shell.run_line_magic("agent_serve", "")
    printed = capsys.readouterr().out
    assert "claude mcp add --transport http notebook" in printed
    return shell.magics_manager.registry["AgentMagics"].session.agent.served


def test_stop_turns_the_live_view_into_a_record_of_what_was_served(shell, served_cell, tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("the data is in data.csv\n")
    handle = _serve(shell, capsys)
    assert WIDGET in served_cell.shown[-1]  # serving: the live view
    assert "serving this notebook to outside agents (notebook)" in drawn(served_cell.shown[-1])
    assert "starting" not in drawn(served_cell.shown[-1])
    as_client(handle, lambda s: s.call_tool("Read", {"file_path": str(tmp_path / "notes.txt")}))
    as_client(handle, lambda s: s.call_tool("Glob", {"pattern": "*.txt"}))

    shell.run_line_magic("agent_serve", "--stop")

    assert "Stopped serving the notebook" in capsys.readouterr().out
    record = served_cell.shown[-1]
    assert set(record) == {"text/html", "text/plain"}  # no widget a reopened notebook cannot draw
    text = record["text/plain"]
    assert re.search(r"✓ done: Read .*notes\.txt", text) and "✓ done: Glob" in text
    assert f"Stopped serving the notebook at {handle.url}: 2 outside calls, 2 from {CLIENT}." in text
    assert "run in progress" not in text and "Finished" not in text
    assert text.count("Stopped serving") == 1
    assert "tokens in" not in text  # the conversation's model did not take part


def test_a_server_nobody_called_says_so_when_it_stops(shell, served_cell, capsys):
    handle = _serve(shell, capsys)
    shell.magics_manager.registry["AgentMagics"].session.agent.close()  # %unload_ext, the kernel's end
    text = served_cell.shown[-1]["text/plain"]
    assert f"Stopped serving the notebook at {handle.url}: no outside agent called it." in text
