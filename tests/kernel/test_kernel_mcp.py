"""MCP in a real kernel: %load_ext starts nothing, the first %agent asks about the project's
server with a widget in the cell, its tools run on the MCP thread while the kernel's loop keeps
serving clicks, and the server stays up across cells until %agent_reset."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kernel.kernel_harness import Kernel

pytestmark = pytest.mark.kernel

TOOLBOX = str(Path(__file__).resolve().parents[1] / "mcp" / "servers" / "toolbox.py")
AGENT = "from ipy_agent.magics import current_session\nm = current_session()\n"
CHILDREN = "import psutil\nprint(len([p for p in psutil.Process().children(recursive=True) if 'toolbox.py' in ' '.join(p.cmdline())]))"


def use(name: str, tid: str, **inp) -> dict:
    return {"type": "tool_use", "id": tid, "name": name, "input": inp}


@pytest.fixture
def kernel(tmp_path: Path) -> Iterator[Kernel]:
    (tmp_path / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"tb": {"command": sys.executable, "args": [TOOLBOX]}}})
    )
    (tmp_path / "first.json").write_text(
        json.dumps(
            {"turns": [[use("mcp__tb__lookup", "l1", key="k"), use("mcp__tb__add", "a1", a=40, b=2)], "Looked it up."]}
        )
    )
    (tmp_path / "second.json").write_text(json.dumps({"turns": [[use("mcp__tb__lookup", "l2", key="j")], "Again."]}))
    k = Kernel(tmp_path, env={"IPY_AGENT_CONFIG_DIR": str(tmp_path / "user-config")})
    try:
        yield k
    finally:
        k.shutdown()


def test_trust_prompt_and_tool_prompt_in_the_cell(kernel: Kernel):
    kernel.check("%load_ext ipy_agent")
    assert kernel.check(CHILDREN).strip() == "0"  # loading starts no server

    cell = kernel.execute("%agent --script first.json use the toolbox")
    trust = kernel.wait_for("the trust prompt", lambda: kernel.find_button("Always allow MCP server 'tb'"))
    kernel.wait_for(
        "what the person approves", lambda: kernel.shows("Start the MCP server &#x27;tb&#x27; from .mcp.json?")
    )
    assert kernel.shows(TOOLBOX)  # the command line it will run
    trust_buttons = set(kernel.siblings(trust))
    kernel.click(trust)

    def tool_prompt() -> str | None:
        return next(
            (
                cid
                for cid, st in kernel.widgets("ButtonModel").items()
                if st.get("description") == "Allow" and cid not in trust_buttons and not st.get("disabled")
            ),
            None,
        )

    allow = kernel.wait_for("the approval of the unannotated tool", tool_prompt)
    kernel.click(allow)
    assert kernel.wait(cell).status == "ok"
    out = kernel.check(
        AGENT + "r = {b['tool_use_id']: b for msg in m.agent.messages if msg['role'] == 'user' "
        "for b in msg['content'] if b.get('type') == 'tool_result'}\n"
        "print(r['l1']['content'][0]['text'], '|', r['a1']['content'][0]['text'])"
    )
    assert out.strip() == "value of k | 42"
    assert kernel.check(CHILDREN).strip() == "1"

    # The next cell reuses the running server: no prompt, no new process.
    cell = kernel.execute("%agent --script second.json again")
    assert kernel.wait(cell).status == "ok"
    assert kernel.check(AGENT + "print(m.last_result.stop_reason)").strip() == "end_turn"
    assert kernel.check(AGENT + "print(m.agent.mcp.connection('tb').starts)").strip() == "1"
    assert "up" in kernel.check("%agent_mcp")

    kernel.check("%agent_reset")
    assert kernel.check(CHILDREN).strip() == "0"
