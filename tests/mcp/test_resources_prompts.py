"""A server's resources (two read-only tools, and `@server:uri` in a prompt) and its prompts
(`/mcp__server__prompt args`, listed by %agent_mcp), with a real stdio server
(tests/support/mcp_servers/toolbox.py) and a scripted model."""

from __future__ import annotations

import json

from ipy_agent import ScriptedModel
from ipy_agent.mcp.report import status_text
from ipy_agent.runtime.trace import NoticeEvent
from tests.support.mcp import offered, stdio
from tests.support.transcript import all_results, result_text, use


def _agent(make_agent, script, **kw):
    model = ScriptedModel(script)
    agent = make_agent(model=model, mcp_servers={"tb": stdio()}, approver=lambda r: "deny", **kw)
    notices: list[str] = []
    agent.on_event(lambda e: notices.append(e.text) if isinstance(e, NoticeEvent) else None)
    return agent, model, notices


def test_resources_and_templates_are_listed_and_read_without_asking(make_agent):
    script = [
        [use("ListMcpResourcesTool", "1"), use("ReadMcpResourceTool", "2", server="tb", uri="memo://notes")],
        [use("ReadMcpResourceTool", "3", server="tb", uri="memo://people/ada")],
        [use("ReadMcpResourceTool", "4", server="tb", uri="memo://logo")],
        "done",
    ]
    agent, model, _ = _agent(make_agent, script)
    agent.run("go")
    assert {"ListMcpResourcesTool", "ReadMcpResourceTool"} <= set(offered(model))
    results = all_results(agent.messages)
    listing = json.loads(result_text(results["1"]))
    assert {(r["server"], r.get("uri") or r.get("uriTemplate")) for r in listing} == {
        ("tb", "memo://notes"),
        ("tb", "memo://logo"),
        ("tb", "memo://people/{who}"),
    }
    assert "notes: ship on friday" in result_text(results["2"]) and "memo://notes" in result_text(results["2"])
    assert "card of ada" in result_text(results["3"])
    # A binary resource is treated as Read treats images: checked by its bytes, sent as an image.
    image = [b for b in results["4"]["content"] if b["type"] == "image"]
    assert image and image[0]["source"]["media_type"] == "image/png"
    assert all(not r.get("is_error") for r in results.values())


def test_resource_tools_are_not_offered_without_a_server_that_has_resources(make_agent):
    model = ScriptedModel(["done"])
    agent = make_agent(model=model, approver=lambda r: "deny")
    agent.run("go")
    assert "ListMcpResourcesTool" not in offered(model)


def test_an_unknown_resource_is_an_error_the_model_reads(make_agent):
    agent, _, _ = _agent(make_agent, [[use("ReadMcpResourceTool", "1", server="tb", uri="memo://nope")], "done"])
    agent.run("go")
    block = all_results(agent.messages)["1"]
    assert block["is_error"] and "could not answer" in result_text(block)


def test_a_mention_attaches_the_resource_to_the_prompt(make_agent):
    agent, model, _ = _agent(make_agent, ["done"])
    agent.run("summarise @tb:memo://notes please, and mail ada@example.com")
    first = model.requests[0]["messages"][0]["content"]
    texts = [b["text"] for b in first if b["type"] == "text"]
    assert texts[0].startswith("summarise @tb:memo://notes")
    assert any("notes: ship on friday" in t for t in texts)
    assert not any("example.com" in t and "attached" in t for t in texts)  # an address is not a mention


def test_a_server_prompt_runs_as_a_slash_command_with_its_arguments(make_agent):
    agent, model, _ = _agent(make_agent, ["done", "done"])
    agent.run("/mcp__tb__review src/app.py security")
    assert "Review src/app.py for security." in json.dumps(model.requests[0]["messages"][0]["content"])
    agent.run('/mcp__tb__review "my file.py"')  # an optional argument left out takes its default
    assert "Review my file.py for bugs." in json.dumps(model.requests[1]["messages"][-1]["content"])


def test_a_prompt_without_its_required_argument_is_not_sent(make_agent):
    agent, model, notices = _agent(make_agent, ["done"])
    result = agent.run("/mcp__tb__review")
    assert result.stop_reason == "error" and model.requests == []
    assert any("/mcp__tb__review <path> [focus]: it needs the argument path" in n for n in notices)
    result = agent.run("/mcp__tb__nope x")
    assert result.stop_reason == "error" and "has no prompt 'nope'" in result.text


def test_agent_mcp_lists_prompts_with_their_arguments(make_agent):
    agent, _, _ = _agent(make_agent, ["done"])
    agent.run("go")
    text = status_text(agent.mcp)
    assert "/mcp__tb__review <path> [focus]" in text and "Review a file for one concern." in text
    assert "Resources: tb" in text
