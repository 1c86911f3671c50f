"""`python -m ipy_agent.magics.rerecord NOTEBOOK` records a notebook's transcript with a real model.

The notebook runs in a fresh kernel whose model is the real Anthropic client, pointed at a local
Messages API; its `lesson_model(...)` records into the transcript, which then names its provenance.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from tests.support.sse_server import ReplayServer, message_events

pytestmark = pytest.mark.kernel
ROOT = Path(__file__).resolve().parents[2]

CELL = """
from pathlib import Path
from ipy_agent import Agent, lesson_model
TRANSCRIPTS = Path.cwd() / "transcripts"
(Path.cwd() / "work").mkdir(exist_ok=True)
agent = Agent(model=lesson_model(TRANSCRIPTS / "hello.json"), cwd=Path.cwd() / "work", tools=[])
print(agent.run("say hello").text)
"""


def test_rerecord_writes_the_notebooks_transcript_with_its_provenance(tmp_path):
    (tmp_path / "transcripts").mkdir()
    hand = {"provenance": {"kind": "hand-written"}, "turns": ["Hello (written by hand)."]}
    (tmp_path / "transcripts" / "hello.json").write_text(json.dumps(hand))
    notebook = tmp_path / "lesson.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(CELL)]), notebook)
    with ReplayServer() as server:
        server.add(message_events([{"type": "text", "text": "Hello from the real model."}]))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "IPY_AGENT_"))}
        env.update(ANTHROPIC_API_KEY="sk-test", ANTHROPIC_BASE_URL=server.url, IPY_AGENT_MODEL="claude-test-model")
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
        out = subprocess.run(
            [sys.executable, "-m", "ipy_agent.magics.rerecord", str(notebook)],
            capture_output=True,
            text=True,
            env=env,
            timeout=240,
        )
    assert out.returncode == 0, out.stderr
    assert "re-recorded hello.json" in out.stdout
    data = json.loads((tmp_path / "transcripts" / "hello.json").read_text())
    assert data["provenance"]["kind"] == "recorded" and data["provenance"]["model"] == "anthropic:claude-test-model"
    assert "ipy_agent.magics.rerecord" in data["provenance"]["how"]
    assert data["turns"][0]["reply"] == [{"type": "text", "text": "Hello from the real model."}]


def test_rerecord_without_a_model_says_what_to_set(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "IPY_AGENT_"))}
    env["PYTHONPATH"] = str(ROOT)
    out = subprocess.run(
        [sys.executable, "-m", "ipy_agent.magics.rerecord", "x.ipynb"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert out.returncode == 2 and "needs a real model" in out.stderr
