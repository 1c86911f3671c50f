"""MCP tools pass the same lifecycle as built-in ones: flags from annotations, rules, results."""

from __future__ import annotations

import base64

from ipy_agent import ScriptedModel
from ipy_agent.history.messages import history_problems
from tests.support.mcp import as_json, offered, stdio
from tests.support.transcript import all_results, result_text, use


def test_read_only_tools_run_without_asking_and_in_parallel(make_agent):
    asked = []
    model = ScriptedModel([[use("mcp__tb__together", "1", tag="a"), use("mcp__tb__together", "2", tag="b")], "done"])
    agent = make_agent(model=model, mcp_servers={"tb": stdio()}, approver=lambda r: asked.append(r) or "deny")
    agent.run("go")
    assert asked == []
    a, b = (as_json(all_results(agent.messages)[t]) for t in ("1", "2"))
    # Each call waited (in the server) until the other was running too; their windows overlap.
    assert not a["alone"] and not b["alone"]
    assert a["start"] < b["end"] and b["start"] < a["end"]
    assert [(r.read_only, r.concurrency_safe, r.batch) for r in agent.trace] == [(True, True, 1), (True, True, 1)]
    assert history_problems(agent.messages) == []


def test_an_unannotated_tool_asks_and_runs_alone(make_agent):
    asked = []
    model = ScriptedModel([[use("mcp__tb__add", "1", a=2, b=3), use("mcp__tb__wipe", "2", target="db")], "done"])
    agent = make_agent(model=model, mcp_servers={"tb": stdio()}, approver=lambda r: asked.append(r) or "allow")
    agent.run("go")
    assert [r.tool_name for r in asked] == ["mcp__tb__add", "mcp__tb__wipe"]
    assert asked[0].input == {"a": 2, "b": 3} and not asked[0].destructive
    assert asked[1].destructive  # destructiveHint: the prompt carries the warning
    assert result_text(all_results(agent.messages)["1"]) == "5"
    assert [r.concurrency_safe for r in agent.trace] == [False, False]
    assert agent.trace[0].batch != agent.trace[1].batch


def test_a_denied_call_is_not_run(make_agent):
    model = ScriptedModel([[use("mcp__tb__wipe", "1", target="db")], "done"])
    agent = make_agent(model=model, mcp_servers={"tb": stdio()}, approver=lambda r: "deny")
    agent.run("go")
    block = all_results(agent.messages)["1"]
    assert block["is_error"] and "declined" in result_text(block)


def test_deny_rules_hide_one_tool_or_a_whole_server(make_agent):
    model = ScriptedModel(["done"])
    agent = make_agent(model=model, mcp_servers={"tb": stdio()}, deny=["mcp__tb__add"])
    agent.run("go")
    names = offered(model)
    assert "mcp__tb__add" not in names and "mcp__tb__lookup" in names
    agent.rules.add("deny", "mcp__tb")
    agent.run("again")
    assert [n for n in offered(model, 1) if n.startswith("mcp__")] == []
    assert "mcp__tb" in agent.exposure().hidden["mcp__tb__lookup"]


def test_allow_and_ask_rules_cover_a_server_or_one_tool(make_agent):
    asked = []
    model = ScriptedModel([[use("mcp__tb__add", "1", a=1, b=1), use("mcp__tb__lookup", "2", key="k")], "done"])
    agent = make_agent(
        model=model,
        mcp_servers={"tb": stdio()},
        allow=["mcp__tb"],
        ask=["mcp__tb__lookup"],
        approver=lambda r: asked.append(r.tool_name) or "allow",
    )
    agent.run("go")
    # add is allowed by the server rule; the read-only lookup asks because a rule says so.
    assert asked == ["mcp__tb__lookup"]
    assert agent.trace[0].decision.rule == "mcp__tb"


def test_an_image_result_reaches_the_model_as_an_image_block(make_agent):
    model = ScriptedModel([[use("mcp__tb__picture", "1")], "done"])
    agent = make_agent(model=model, mcp_servers={"tb": stdio()})
    agent.run("go")
    content = model.requests[1]["messages"][-1]["content"][0]["content"]
    assert [b["type"] for b in content] == ["image"]
    assert content[0]["source"]["media_type"] == "image/png"
    assert base64.b64decode(content[0]["source"]["data"]).startswith(b"\x89PNG")


def test_resources_errors_and_invalid_input(make_agent):
    model = ScriptedModel(
        [
            [
                use("mcp__tb__document", "1"),
                use("mcp__tb__refuse", "2", reason="no way"),
                use("mcp__tb__lookup", "3", key=7),
                use("mcp__tb__lookup", "4"),
            ],
            "done",
        ]
    )
    agent = make_agent(model=model, mcp_servers={"tb": stdio()})
    agent.run("go")
    r = all_results(agent.messages)
    assert result_text(r["1"]) == "Here is the file:\nResource file:///notes.txt (text/plain):\nline one\nline two"
    assert (
        r["2"]["is_error"]
        and result_text(r["2"]).startswith("The MCP tool reported an error:")
        and "no way" in result_text(r["2"])
    )
    # Checked against the server's schema before anything is sent.
    assert r["3"]["is_error"] and "`key`: 7 is not of type 'string'" in result_text(r["3"])
    assert r["4"]["is_error"] and "'key' is a required property" in result_text(r["4"])
    assert [s.name for s in agent.trace[2].stages][-1] == "validate"
    assert history_problems(agent.messages) == []


def test_a_large_result_is_spilled_like_any_other(make_agent, tmp_path):
    model = ScriptedModel([[use("mcp__tb__env", "1", name="BIG")], "done"])
    agent = make_agent(model=model, mcp_servers={"tb": stdio(env={"BIG": "x" * 60_000})}, spill_dir=tmp_path / "spill")
    agent.run("go")
    block = all_results(agent.messages)["1"]
    assert "<persisted-output>" in result_text(block)
    assert (tmp_path / "spill" / "1.txt").read_text() == "x" * 60_000


def test_a_tool_list_change_is_offered_on_the_next_request(make_agent):
    model = ScriptedModel([[use("mcp__tb__grow", "1")], [use("mcp__tb__fresh", "2")], "done"])
    agent = make_agent(model=model, mcp_servers={"tb": stdio()}, allow=["mcp__tb"])
    agent.run("go")
    assert "mcp__tb__fresh" not in offered(model, 0)
    assert "mcp__tb__fresh" in offered(model, 1)
    assert result_text(all_results(agent.messages)["2"]) == "fresh result"


def test_the_input_schema_is_passed_through(make_agent):
    model = ScriptedModel(["done"])
    agent = make_agent(model=model, mcp_servers={"tb": stdio()})
    agent.run("go")
    add = next(t for t in model.requests[0]["tools"] if t["name"] == "mcp__tb__add")
    assert add["input_schema"]["properties"]["a"]["type"] == "integer"
    assert add["input_schema"]["required"] == ["a", "b"]
    assert "Add two integers" in add["description"]
    assert "Toolbox answers lookups" in model.requests[0]["system"]  # the server's instructions
