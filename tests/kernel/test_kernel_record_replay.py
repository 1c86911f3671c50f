"""Record a session in one kernel with `%agent --record`, replay it offline in a fresh kernel.

Kernel one talks to a local Messages API with the real Anthropic client; the person clicks
Allow on the edit. Kernel two has no key and no server: `%agent --script` replays the
transcript, the person clicks Allow again, and the tool calls, the prompts and the answer are
the same. Then a world that differs (the file changed) stops the replay with a diff.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.kernel import Kernel
from tests.support.sse_server import ReplayServer, typo_fix

pytestmark = pytest.mark.kernel

SUMMARY = (
    "import json\n"
    "from ipy_agent.magics import current_session\n"
    "a = current_session().agent\n"
    "print(json.dumps({'calls': [[r.tool_name, r.input] for r in a.trace],\n"
    "                  'asked': [r.tool_name for r in a.trace if r.decision and r.decision.source == 'person'],\n"
    "                  'answer': current_session().last_result.text,\n"
    "                  'error': current_session().last_result.error_kind}))"
)


def run_with_clicks(k: Kernel, line: str) -> dict:
    msg_id = k.execute(line)
    allow = k.wait_for("the Allow button", lambda: k.find_button("Allow"))
    k.click(allow)
    done = k.wait(msg_id)
    assert done.status == "ok", done.text
    return json.loads(k.check(SUMMARY).strip().splitlines()[-1])


def test_a_recorded_session_replays_in_a_fresh_kernel(tmp_path: Path):
    recorded_dir, replay_dir = tmp_path / "recorded", tmp_path / "replay"
    for d in (recorded_dir, replay_dir):
        d.mkdir()
        (d / "notes.txt").write_text("teh plan\n")
    transcript = tmp_path / "session.json"
    with ReplayServer() as server:
        server.add(*typo_fix())
        env = {"ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "sk-test", "IPY_AGENT_MODEL": "claude-test-model"}
        with Kernel(recorded_dir, env=env) as k:
            k.check("%load_ext ipy_agent")
            first = run_with_clicks(k, f"%agent --record {transcript} fix the typo in notes.txt")
            assert "recording into" in k.check("%agent_tools")
    assert (recorded_dir / "notes.txt").read_text() == "the plan\n"
    data = json.loads(transcript.read_text())
    assert data["provenance"]["model"] == "anthropic:claude-test-model" and len(data["turns"]) == 3

    with Kernel(replay_dir) as k:  # no key, no server: offline
        k.check("%load_ext ipy_agent")
        again = run_with_clicks(k, f"%agent --script {transcript} fix the typo in notes.txt")
        assert any("scripted:session.json" in v for v in k.html_values()), "the usage line names the model"
    assert again == first and first["asked"] == ["Edit"] and first["answer"] == "Fixed the typo."
    assert (replay_dir / "notes.txt").read_text() == "the plan\n"

    changed = tmp_path / "changed"
    changed.mkdir()
    (changed / "notes.txt").write_text("teh plan, and a budget\n")
    with Kernel(changed) as k:
        k.check("%load_ext ipy_agent")
        done = k.run(f"%agent --no-widgets --script {transcript} fix the typo in notes.txt")
        assert "The replay stopped" in done.text and "the result of Read" in done.text, done.text
        assert "+++ this run" in done.text
