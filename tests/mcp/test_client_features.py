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


# --- the form in the cell ------------------------------------------------------------------------
async def _form_run(tmp_path, **view_kw):
    from ipy_agent import Agent
    from ipy_agent.ui.widgets import RunView

    model = ScriptedModel([[use("mcp__tb__signup", "1")], "done"])
    agent = Agent(model=model, cwd=tmp_path, tools=[], mcp_servers={"tb": stdio()}, allow=["mcp__tb"])
    view = RunView(agent, **view_kw)
    agent.approver = view.approver
    agent.on_event(view.listener)
    return agent, view


async def test_the_form_in_the_cell_is_built_from_the_schema_and_answers_the_server(tmp_path):
    import asyncio

    from ipy_agent.ui.elicitation_form import ElicitationForm
    from tests.support.run_view import next_prompt

    agent, view = await _form_run(tmp_path)
    try:
        task = asyncio.create_task(agent.arun("sign me up"))
        form = await next_prompt(view, task)
        assert isinstance(form, ElicitationForm)
        by_name = {f.name: f for f in form.fields}
        assert [f.kind for f in form.fields] == [
            "string",
            "integer",
            "number",
            "boolean",
            "enum",
            "enum",
            "multi",
            "string",
        ]
        assert by_name["name"].required and not by_name["age"].required
        assert (
            "Your name" in by_name["name"].widget.children[0].value and "*" in by_name["name"].widget.children[0].value
        )
        assert by_name["color"].input.value == "green" and by_name["subscribe"].input.value is True  # defaults
        assert [lbl for lbl, _ in by_name["size"].input.options] == ["—", "Small", "Large"]  # titled enum
        assert [c.description for c in by_name["tags"].checks] == ["a", "b", "c"]
        # Submitted without the required name: the form stays open and says what is missing.
        form.submit()
        await asyncio.sleep(0)
        assert form.pending and "Not sent: &#x27;name&#x27; is a required property" in form.problem.value
        form.fill("name", "Ada")
        form.fill("age", "41")
        form.fill("size", "l")
        form.fill("tags", ["b"])
        form.fill("api_token", "tok-secret-1")
        form.submit()
        await asyncio.wait_for(task, 60)
        got = as_json(all_results(agent.messages)["1"])
        assert got["action"] == "accept"
        assert got["content"] == {
            "name": "Ada",
            "age": 41,
            "score": 0.5,
            "subscribe": True,
            "color": "green",
            "size": "l",
            "tags": ["b"],
            "api_token": "tok-secret-1",
        }
        record = view.record_bundle()["text/plain"]  # what the saved notebook keeps
        assert "Who is signing up?" in record and "Ada" in record and "tok-secret-1" not in record
    finally:
        agent.close()


async def test_a_background_run_declines_the_form_without_opening_it(tmp_path):
    import asyncio

    agent, view = await _form_run(tmp_path, background=True)
    try:
        await asyncio.wait_for(agent.arun("sign me up"), 60)
        assert view.prompts == {}
        assert as_json(all_results(agent.messages)["1"])["action"] == "decline"
        assert "a --background run" in view.record_bundle()["text/plain"]
    finally:
        agent.close()


def test_a_working_directory_added_between_runs_is_a_root_of_the_running_server(make_agent, tmp_path):
    from dataclasses import replace

    extra = tmp_path / "more"
    extra.mkdir()
    model = ScriptedModel([[use("mcp__tb__roots", "1")], "done", [use("mcp__tb__roots", "2")], "done"])
    agent = make_agent(model=model, mcp_servers={"tb": stdio()}, approver=lambda r: "allow", allow=["mcp__tb"])
    agent.run("first")
    agent.config = replace(agent.config, working_dirs=(extra.resolve(),))
    agent.run("second")
    first, second = ([u for u, _ in as_json(all_results(agent.messages)[t])] for t in ("1", "2"))
    assert first == [agent.cwd.resolve().as_uri()]
    assert second == [agent.cwd.resolve().as_uri(), extra.resolve().as_uri()]
    assert agent.mcp.connection("tb").starts == 1  # the same server process, told of the change


def test_a_form_fires_the_notification_hooks_as_it_opens(make_agent):
    told: list[tuple[str | None, str | None]] = []
    model = ScriptedModel([[use("mcp__tb__signup", "1")], "done"])
    agent = make_agent(model=model, mcp_servers={"tb": stdio()}, approver=lambda r: "decline", allow=["mcp__tb"])
    agent.hooks.add(
        "Notification", lambda e: told.append((e.notification_type, e.message)), matcher="elicitation_dialog"
    )
    agent.hooks.add("Notification", lambda e: told.append(("a prompt", e.message)), matcher="permission_prompt")
    agent.run("go")
    # The form, once; no permission prompt opened (the rule allows the tool), so that matcher never ran.
    assert told == [("elicitation_dialog", "The MCP server tb asks you: Who is signing up?")]


def test_in_a_terminal_the_form_is_asked_field_by_field_and_reaches_the_server(make_agent, monkeypatch):
    """Terminal IPython's approver (ui/text.py) gets the server's form too: each field asked in
    turn, a value of the wrong kind asked again, Enter keeping the default, then "send?".
    (Before, it read the form as a permission prompt and the form failed.)"""
    from ipy_agent.ui.text import make_console, terminal_approver

    typed = iter(["Ada", "three", "3", "", "n", "1", "2", "1,3", "", "y"])
    asked: list[str] = []
    monkeypatch.setattr("builtins.input", lambda q: asked.append(q) or next(typed))
    agent, _model, _notices = _run(make_agent, terminal_approver(make_console()))
    got = as_json(all_results(agent.messages)["1"])
    assert got == {
        "action": "accept",
        "content": {
            "name": "Ada",
            "age": 3,
            "score": 0.5,
            "subscribe": False,
            "color": "red",
            "size": "l",
            "tags": ["a", "c"],
        },
    }
    assert asked[0] == "  Your name (required) [text]: " and asked[1] == asked[2]  # "three" asked again
    assert asked[-1].startswith("Send this to the server?")
    # Control: "n" at the end declines, and nothing typed is sent.
    typed = iter(["Ada", "", "", "", "", "", "", "", "n"])
    agent, _model, _notices = _run(make_agent, terminal_approver(make_console()))
    assert as_json(all_results(agent.messages)["1"]) == {"action": "decline", "content": None}
