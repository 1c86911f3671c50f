"""The notebook's own instructions in a real kernel: set with `%agent_instructions --notebook` in
the page's model (through the bridge) or, with no page, in the `.ipynb` on disk; read by the next
`%agent` request, which says once that they changed."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.frontend import LiveKernel, Panel, cell

pytestmark = pytest.mark.kernel

MAGICS = "__import__('ipy_agent.magics', fromlist=['x']).current_session()"


def systems(k: LiveKernel) -> list[str]:
    return json.loads(
        k.check(f"import json as _j; print(_j.dumps([r['system'] for r in {MAGICS}.agent.model.requests]))")
    )


def test_set_in_the_live_notebook_and_read_by_the_next_request(tmp_path: Path):
    panel = Panel(path="work/analysis.ipynb", cells=[cell("x = 1", cell_id="c1")])
    with LiveKernel(tmp_path, panels=[panel]) as k:
        k.check("%load_ext ipy_agent\n")
        k.wait_for("the panel's hello", lambda: k.check(f"print({MAGICS}.bridge.connected)").strip() == "True")
        # Every run without --script uses this one scripted model.
        k.check(
            f"from ipy_agent import ScriptedModel\n_m = ScriptedModel(['first', 'second'])\n{MAGICS}.model_factory = lambda: _m\n"
        )
        k.check("%agent --no-widgets hello\n")
        assert "<instructions" not in systems(k)[0]

        out = k.check('%agent_instructions --notebook "Use polars, not pandas."\n')
        assert out.startswith("Set the instructions of work/analysis.ipynb in the open notebook")
        assert panel.metadata == {"ipy_agent": {"instructions": "Use polars, not pandas."}}
        listing = k.check("%agent_instructions\n")
        assert "notebook  work/analysis.ipynb (metadata, live)  23 characters" in listing

        run = k.run("%agent --no-widgets again\n")
        assert '<instructions from="notebook" source="work/analysis.ipynb">\nUse polars, not pandas.\n' in systems(k)[1]
        assert "The instructions changed: the notebook's instructions (work/analysis.ipynb) (new)." in run.text
        # The person edits them in the page (unsaved): the page's text is what counts.
        panel.metadata["ipy_agent"]["instructions"] = "Use pandas."
        assert k.check("%agent_instructions --notebook\n").endswith("Use pandas.\n")
        k.check("%agent_instructions --notebook --clear\n")
        assert panel.metadata == {}


def test_without_a_page_they_are_written_to_the_file_on_disk(tmp_path: Path, script: Callable[..., str]):
    nb = tmp_path / "analysis.ipynb"
    nb.write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    with LiveKernel(tmp_path, env={"JPY_SESSION_NAME": str(nb)}) as k:
        k.check("%load_ext ipy_agent\n")
        out = k.check("%%agent_instructions --notebook\nNever rerun the training cell.\nPlot with seaborn.\n")
        assert out.startswith(f"Set the instructions in {nb} (on disk).")
        saved = json.loads(nb.read_text())["metadata"]["ipy_agent"]["instructions"]
        assert saved == "Never rerun the training cell.\nPlot with seaborn."
        name = script("ok", name="t.json")
        k.check(f"%agent --no-widgets --script {name} hello\n")
        assert "Never rerun the training cell.\nPlot with seaborn." in systems(k)[0]
