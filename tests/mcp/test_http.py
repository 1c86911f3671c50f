"""A streamable HTTP server on 127.0.0.1: the same tools, headers sent, a dead server reported."""

from __future__ import annotations

from ipy_agent import ScriptedModel
from ipy_agent.history.messages import history_problems
from tests.support.mcp import as_json
from tests.support.transcript import all_results, result_text, use


def test_tools_over_streamable_http(make_agent, http_url):
    asked = []
    model = ScriptedModel(
        [
            [
                use("mcp__web__together", "1", tag="a"),
                use("mcp__web__together", "2", tag="b"),
                use("mcp__web__header", "3", name="x-team"),
            ],
            [use("mcp__web__add", "4", a=20, b=22), use("mcp__web__picture", "5")],
            "done",
        ]
    )
    agent = make_agent(
        model=model,
        approver=lambda r: asked.append(r.tool_name) or "allow",
        mcp_servers={"web": {"type": "http", "url": http_url, "headers": {"X-Team": "notebooks"}}},
    )
    agent.run("go")
    r = all_results(agent.messages)
    a, b = as_json(r["1"]), as_json(r["2"])
    assert not a["alone"] and not b["alone"] and a["start"] < b["end"] and b["start"] < a["end"]
    assert result_text(r["3"]) == "notebooks"
    assert asked == ["mcp__web__add"] and result_text(r["4"]) == "42"
    assert r["5"]["content"][0]["type"] == "image"
    assert history_problems(agent.messages) == []


def test_an_unreachable_http_server_is_reported(make_agent):
    import socket

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    model = ScriptedModel(["done"])
    agent = make_agent(
        model=model, mcp_servers={"web": {"type": "http", "url": f"http://127.0.0.1:{port}/mcp", "startupTimeout": 10}}
    )
    agent.run("go")
    assert (
        f"- web: DOWN, it failed to start: could not reach http://127.0.0.1:{port}/mcp" in model.requests[0]["system"]
    )
