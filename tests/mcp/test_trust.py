"""Servers from a project file start only once the person approved them; the approval is kept
per project and per configuration; code and the person's own settings need none."""

from __future__ import annotations

import json
import sys

from ipy_agent import PermissionAnswer, ScriptedModel
from ipy_agent.mcp import load_mcp_files
from ipy_agent.runtime.trace import NoticeEvent
from ipy_agent.ui.approver import NonInteractiveApprover
from tests.support.mcp import TOOLBOX, offered, stdio


def _write_project(project, args=None):
    servers = {"mcpServers": {"tb": {"type": "stdio", "command": sys.executable, "args": args or [TOOLBOX]}}}
    (project / ".mcp.json").write_text(json.dumps(servers))


def _agent(make_agent, answers, asked, notices=None):
    """An agent with the project's files loaded, as %agent does; answers trust prompts in order."""
    model = ScriptedModel(["done"])

    def approver(request):
        asked.append(request)
        return answers.pop(0)

    agent = make_agent(model=model, approver=approver)
    if notices is not None:
        agent.on_event(lambda e: notices.append(e.text) if isinstance(e, NoticeEvent) else None)
    servers, warnings = load_mcp_files(agent.cwd)
    assert warnings == []
    agent.mcp.set_file_servers(servers)
    return agent, model


def test_approve_once_is_remembered_and_a_changed_command_asks_again(make_agent, config_dir):
    asked: list = []
    first, model = _agent(make_agent, ["always"], asked)
    _write_project(first.cwd)
    first.mcp.set_file_servers(load_mcp_files(first.cwd)[0])
    first.run("go")
    assert [r.tool_name for r in asked] == ["mcp__tb"]
    assert TOOLBOX in asked[0].preview.command and ".mcp.json" in asked[0].summary
    assert "mcp__tb__lookup" in offered(model)
    first.run("again")
    assert len(asked) == 1  # not asked again in the session
    assert (config_dir / "mcp_trust.json").is_file()

    # A new session (another agent, another manager) in the same project: remembered.
    second, model2 = _agent(make_agent, [], asked)
    second.run("go")
    assert len(asked) == 1 and "mcp__tb__lookup" in offered(model2)

    # The project now runs another command: that needs a new approval.
    _write_project(second.cwd, args=[TOOLBOX, "stdio"])
    third, model3 = _agent(make_agent, [PermissionAnswer(behavior="deny", message="not today")], asked)
    third.run("go")
    assert len(asked) == 2 and asked[1].preview.command.endswith("toolbox.py stdio")
    assert not [n for n in offered(model3) if n.startswith("mcp__")]
    assert "- tb: not started (it needs the person's approval)" in model3.requests[0]["system"]


def test_allow_is_for_this_session_only(make_agent):
    asked: list = []
    first, model = _agent(make_agent, [], asked)
    _write_project(first.cwd)
    first.mcp.set_file_servers(load_mcp_files(first.cwd)[0])
    first.approver = lambda r: asked.append(r) or "allow"
    first.run("go")
    assert len(asked) == 1 and "mcp__tb__lookup" in offered(model)
    notices: list = []
    second, _model2 = _agent(make_agent, ["deny", "deny"], asked, notices)
    second.run("go")
    second.run("again")
    assert len(asked) == 2  # asked again in a new session, and only once in it
    assert [n for n in notices if "'tb'" in n] == [
        "MCP server 'tb' (.mcp.json) was not started: you declined it. It asks again in a new session, "
        "or when its configuration changes."
    ]


def test_non_interactive_runs_do_not_start_project_servers_and_say_so_once(make_agent):
    notices: list = []
    agent, _model = _agent(make_agent, [], [], notices)
    _write_project(agent.cwd)
    agent.mcp.set_file_servers(load_mcp_files(agent.cwd)[0])
    agent.approver = NonInteractiveApprover("IPY_AGENT_NONINTERACTIVE is set")
    agent.run("go")
    agent.run("again")
    said = [n for n in notices if "'tb'" in n]
    assert len(said) == 1 and "needs" not in said[0] and "approve them once" in said[0]
    assert agent.mcp.connection("tb") is None  # never started


def test_servers_in_code_and_in_user_settings_start_without_asking(make_agent, config_dir):
    config_dir.mkdir(parents=True, exist_ok=True)
    (config_dir / "settings.json").write_text(json.dumps({"mcpServers": {"mine": stdio()}}))
    asked: list = []
    agent, model = _agent(make_agent, [], asked)
    assert agent.mcp.configs["mine"].source == "user"
    agent.run("go")
    assert asked == [] and "mcp__mine__lookup" in offered(model)
