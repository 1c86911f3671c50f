"""The live tools from the first cell: offered as soon as the page answered, and described
in words a person understands when it has not (a real kernel, a fake JupyterLab page)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.frontend import LiveKernel, Panel, cell

pytestmark = pytest.mark.kernel

MAGICS = "__import__('ipy_agent.magics', fromlist=['x']).current_session()"
LIVE = ("NotebookRead", "NotebookRun", "Variables")


def offered(table: str) -> dict[str, str]:
    """tool name -> its "offered" column in %agent_tools."""
    rows = {}
    for line in table.splitlines():
        words = line.split()
        if len(words) > 1 and words[0] in (*LIVE, "Read"):
            rows.setdefault(words[0], words[1])
    return rows


def test_agent_tools_offers_the_live_tools_before_any_run(tmp_path: Path):
    panel = Panel(path="analysis.ipynb", cells=[cell("x = 1", cell_id="c1")])
    with LiveKernel(tmp_path, panels=[panel], env={"JPY_SESSION_NAME": str(tmp_path / "analysis.ipynb")}) as k:
        k.check("%load_ext ipy_agent")
        assert "connected to" in k.check(f"print({MAGICS}.bridge.status())")
        table = k.check("%agent_tools")
        assert offered(table) == {"Read": "yes", **dict.fromkeys(LIVE, "yes")}, table


def test_agent_tools_offers_them_after_load_ext_in_a_run_all(tmp_path: Path):
    """Run All sends every cell at once: the page's hello to `%load_ext` queues behind them."""
    panel = Panel(path="analysis.ipynb", cells=[cell("x = 1", cell_id="c1")])
    with LiveKernel(tmp_path, panels=[panel], env={"JPY_SESSION_NAME": str(tmp_path / "analysis.ipynb")}) as k:
        k.execute("%load_ext ipy_agent")
        tools = k.execute("%agent_tools")
        table = k.wait(tools).text
        assert offered(table) == {"Read": "yes", **dict.fromkeys(LIVE, "yes")}, table


def test_agent_tools_says_why_the_live_tools_are_hidden_without_the_extension(tmp_path: Path):
    with LiveKernel(tmp_path, panels=[]) as k:
        k.check("%load_ext ipy_agent")
        table = k.check("%agent_tools")
        assert offered(table)["NotebookRead"] == "hidden", table
        assert "is_enabled" not in table
        assert "needs the JupyterLab extension" in table and "not connected" in table
        assert offered(table)["Variables"] == "yes", table  # the kernel is enough for Variables
