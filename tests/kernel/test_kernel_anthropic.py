"""A full `%agent` run in a real kernel with the real Anthropic client, against a local server.

The server on 127.0.0.1 replays Messages API streams: read a file, then edit it. The kernel
gets ANTHROPIC_BASE_URL pointing there, so the SDK, its SSE parsing and the magics' default
model path are all real; the person's Allow click is the comm message a front end sends.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.kernel import Kernel
from tests.support.sse_server import ReplayServer, typo_fix

pytestmark = pytest.mark.kernel


def test_agent_magic_with_the_anthropic_client_and_an_approval_click(tmp_path: Path):
    (tmp_path / "notes.txt").write_text("teh plan\n")
    with ReplayServer() as server:
        server.add(*typo_fix())
        env = {"ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "sk-test", "IPY_AGENT_MODEL": "claude-test-model"}
        with Kernel(tmp_path, env=env) as k:
            k.check("%load_ext ipy_agent")
            msg_id = k.execute("%agent fix the typo in notes.txt")
            allow = k.wait_for("the Allow button", lambda: k.find_button("Allow"))
            assert (tmp_path / "notes.txt").read_text() == "teh plan\n"
            k.click(allow)
            done = k.wait(msg_id)
            assert done.status == "ok", done.text
            assert (tmp_path / "notes.txt").read_text() == "the plan\n"
            assert "Fixed the typo." in k.markdown() and k.shows("Edited")
            out = k.check(
                "from ipy_agent.history.messages import history_problems\n"
                "from ipy_agent.magics import current_session\n"
                "a = current_session().agent\n"
                "print(type(a.model).__name__, a.model.name, history_problems(a.messages), a.trace[1].decision.source)"
            )
            assert out.split() == ["AnthropicModel", "claude-test-model", "[]", "person"]

    bodies = [r.body for r in server.requests]
    assert len(bodies) == 3 and all(b["model"] == "claude-test-model" for b in bodies)
    # the tool results went back in order, after the assistant's tool_use
    last = bodies[2]["messages"]
    assert [b["type"] for b in last[-1]["content"]][:1] == ["tool_result"]
    assert last[-1]["content"][0]["tool_use_id"] == "toolu_e"
    assert {t["name"] for t in bodies[0]["tools"]} >= {"Read", "Edit", "Bash"}
