"""What a server may ask of the client: a form for the person (elicitation), the working
directories (roots), and the client's model (sampling, declined). A real stdio server
(tests/support/mcp_servers/toolbox.py) asks; a scripted model calls its tools."""

from __future__ import annotations

import json

from ipy_agent import ElicitationRequest, ScriptedModel
from ipy_agent.runtime.trace import NoticeEvent
from ipy_agent.ui.approver import NonInteractiveApprover
from tests.support.mcp import as_json, stdio
from tests.support.transcript import all_results, result_text, use


def _run(make_agent, approver, tool="signup", **kw):
    model = ScriptedModel([[use(f"mcp__tb__{tool}", "1")], "done"])
    agent = make_agent(model=model, mcp_servers={"tb": stdio()}, approver=approver, allow=["mcp__tb"], **kw)
    notices: list[str] = []
    agent.on_event(lambda e: notices.append(e.text) if isinstance(e, NoticeEvent) else None)
    agent.run("go")
    return agent, model, notices


def test_a_form_reaches_the_approver_and_the_answer_with_defaults_reaches_the_server(make_agent):
    asked: list[ElicitationRequest] = []

    def approver(request):
        asked.append(request)
        return {"action": "accept", "content": {"name": "Ada", "tags": ["a", "c"], "api_token": "tok-123456"}}

    agent, _model, notices = _run(make_agent, approver)
    (request,) = asked
    assert isinstance(request, ElicitationRequest)
    assert (request.server, request.message) == ("tb", "Who is signing up?")
    assert request.required == ("name",) and request.schema["properties"]["color"]["enum"] == ["red", "green"]
    got = as_json(all_results(agent.messages)["1"])
    # What the person left out took the schema's defaults; what has none stayed out.
    assert got == {
        "action": "accept",
        "content": {
            "name": "Ada",
            "tags": ["a", "c"],
            "api_token": "tok-123456",
            "score": 0.5,
            "subscribe": True,
            "color": "green",
        },
    }
    # The record keeps the question and the answer, the token masked.
    (line,) = [n for n in notices if "asked" in n]
    assert "Who is signing up?" in line and "Ada" in line and "tok-123456" not in line


def test_decline_cancel_and_an_answer_that_does_not_fit_the_form(make_agent):
    for answer, action in (("decline", "decline"), ("cancel", "cancel"), ("deny", "decline")):
        agent, _, _ = _run(make_agent, lambda r, a=answer: a)
        assert as_json(all_results(agent.messages)["1"]) == {"action": action, "content": None}
    # Required field missing (no default): never sent as an accept.
    agent, _, notices = _run(make_agent, lambda r: {"action": "accept", "content": {"age": 3}})
    assert as_json(all_results(agent.messages)["1"])["action"] == "decline"
    assert any("'name' is a required property" in n for n in notices)


def test_a_non_interactive_run_declines_at_once_saying_why(make_agent):
    approver = NonInteractiveApprover("widgets are switched off")
    agent, _, notices = _run(make_agent, approver)
    assert as_json(all_results(agent.messages)["1"]) == {"action": "decline", "content": None}
    assert approver.denied == []  # never asked
    assert any("non-interactive (widgets are switched off)" in n for n in notices)


def test_a_control_without_a_form_tool_asks_nothing(make_agent):
    asked = []
    _agent, _, notices = _run(make_agent, lambda r: asked.append(r) or "allow", tool="lookup")
    assert asked == [] and not any("asked" in n for n in notices)


def test_the_working_directories_are_the_roots(make_agent, tmp_path):
    extra = tmp_path / "data"
    extra.mkdir()
    agent, _, _ = _run(make_agent, lambda r: "allow", tool="roots", working_dirs=[extra])
    uris = [u for u, _ in as_json(all_results(agent.messages)["1"])]
    assert uris == [agent.cwd.resolve().as_uri(), extra.resolve().as_uri()]


def test_sampling_is_declined_with_a_clear_error(make_agent):
    agent, _, _ = _run(make_agent, lambda r: "allow", tool="sample")
    text = result_text(all_results(agent.messages)["1"])
    assert text.startswith("sampling failed") and "not an MCP server's to spend" in text


def test_the_request_is_exported():
    r = ElicitationRequest(server="s", message="m", schema={"properties": {"a": {}}, "required": ["a"]})
    assert list(r.fields) == ["a"] and json.dumps(r.schema)
