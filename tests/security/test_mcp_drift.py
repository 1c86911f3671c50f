"""MCP configuration drift: an approved project server is approved for exactly what it runs.

A family of changes, each made after the person approved the server, each of which must make
the approval stop holding: the command, its arguments, its environment, and the files in the
project it runs (the script, a module run with `-m`, a folder given as an argument). Writing
such a file also asks in every mode, like a git hook. One end-to-end case runs a real server:
after its script is edited, the next run asks again before the server is started.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from ipy_agent import Agent, ScriptedModel
from ipy_agent.mcp import load_mcp_files
from ipy_agent.mcp.config import ServerConfig, parse_server
from ipy_agent.mcp.manager import McpManager
from ipy_agent.mcp.trust import TrustStore
from ipy_agent.permissions.decide import decide
from ipy_agent.tools.files.write import WriteInput, WriteTool
from tests.support.mcp import TOOLBOX
from tests.support.tools import write_tree


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("IPY_AGENT_CONFIG_DIR", str(tmp_path / "user-config"))
    return write_tree(
        tmp_path / "project",
        {
            "server.py": "print('v1')\n",
            "pkg/__init__.py": "",
            "pkg/srv.py": "print('v1')\n",
            "srvdir/main.py": "print('v1')\n",
            "srvdir/lib/helpers.py": "x = 1\n",
        },
    )


def _server(args: list[str], **extra: object) -> ServerConfig:
    return parse_server("s", {"command": sys.executable, "args": args, **extra}, source="project", origin=".mcp.json")


Change = Callable[[Path, ServerConfig], ServerConfig]


def _edit(rel: str, text: str = "import os; os.system('id')\n") -> Change:
    def change(project: Path, cfg: ServerConfig) -> ServerConfig:
        (project / rel).write_text(text)
        return cfg

    return change


def _replace(**fields: object) -> Change:
    return lambda project, cfg: dataclasses.replace(cfg, **fields)


# (name, server args, the change made after approval)
CASES: list[tuple[str, list[str], Change]] = [
    ("script edited", ["server.py"], _edit("server.py")),
    ("script appended", ["server.py"], _edit("server.py", "print('v1')\nimport os\n")),
    (
        "script replaced by a link",
        ["server.py"],
        lambda p, c: (p.joinpath("server.py").unlink(), p.joinpath("server.py").symlink_to(p / "srvdir/main.py"), c)[2],
    ),
    ("module run with -m edited", ["-m", "pkg.srv"], _edit("pkg/srv.py")),
    ("folder argument: a file in it edited", ["--directory=srvdir", "main.py"], _edit("srvdir/main.py")),
    ("folder argument: a file deep in it edited", ["--directory=srvdir", "main.py"], _edit("srvdir/lib/helpers.py")),
    ("folder argument: a file added to it", ["--directory=srvdir", "main.py"], _edit("srvdir/lib/new.py")),
    ("arguments changed", ["server.py"], _replace(args=("server.py", "--debug"))),
    ("command changed", ["server.py"], _replace(command="/bin/sh")),
    ("environment changed", ["server.py"], _replace(env={"PYTHONSTARTUP": "evil.py"})),
]


@pytest.mark.parametrize("name,args,change", CASES, ids=[c[0] for c in CASES])
def test_a_change_after_approval_needs_a_new_approval(project, name, args, change):
    cfg = _server(args)
    store = TrustStore()
    store.remember(project, cfg)
    manager = McpManager(project, trust=store)
    manager.set_file_servers({"s": cfg})
    assert manager.trust_state(cfg) == "remembered"
    changed = change(project, cfg)
    manager.set_file_servers({"s": changed})
    assert manager.trust_state(changed) == "needs approval", name


def test_the_drift_family_holds(project, capsys):
    held = 0
    for _name, args, change in CASES:
        case_dir = project.parent / f"case-{held}-{_name[:10].replace(' ', '_')}"
        shutil.copytree(project, case_dir)
        cfg = _server(args)
        store = TrustStore()
        store.remember(case_dir, cfg)
        changed = change(case_dir, cfg)
        held += not store.is_trusted(case_dir, changed)
    with capsys.disabled():
        print(f"\n[MCP drift] changes tried: {len(CASES)}; approvals that stopped holding: {held}")
    assert held == len(CASES)


@pytest.mark.parametrize("mode", ["acceptEdits", "bypassPermissions"])
def test_writing_a_file_a_server_runs_asks_in_every_mode(project, mode):
    (project / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"s": {"command": sys.executable, "args": ["--directory=srvdir", "server.py"]}}})
    )
    agent = Agent(model=ScriptedModel(["done"]), cwd=project, permission_mode=mode)
    agent.mcp.set_file_servers(load_mcp_files(project)[0])
    tool = WriteTool()
    for rel in ("server.py", "srvdir/main.py", "srvdir/lib/new.py"):
        inp = WriteInput(file_path=rel, content="x")
        ctx = agent.tool_context()
        check = asyncio.run(tool.check_permissions(inp, ctx))
        d = decide(tool=tool, inp=inp, ctx=ctx, rules=agent.rules, mode=mode, tool_check=check, hook_decision=None)
        assert d.behavior == "ask" and "MCP server 's'" in d.reason, (rel, d)


def test_an_edited_script_stops_its_server_and_asks_again(tmp_path, monkeypatch):
    monkeypatch.setenv("IPY_AGENT_CONFIG_DIR", str(tmp_path / "user-config"))
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(TOOLBOX, project / "toolbox.py")
    (project / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"tb": {"command": sys.executable, "args": ["toolbox.py"]}}})
    )
    asked: list[str] = []
    shown: list[dict] = []
    model = ScriptedModel(["one", "two"])

    def approver(request):
        asked.append(request.tool_name)
        shown.append(request.input)
        return "always"

    agent = Agent(model=model, cwd=project, tools=[], approver=approver)
    try:
        agent.mcp.set_file_servers(load_mcp_files(project)[0])
        agent.run("go")
        assert asked == ["mcp__tb"] and agent.mcp.connection("tb").status == "up"
        with (project / "toolbox.py").open("a") as f:
            f.write("\n# changed after approval\n")
        agent.run("again")
        assert asked == ["mcp__tb", "mcp__tb"]  # asked again: the approval was for the old script
        assert shown[-1]["runs"] == ["toolbox.py"]  # the prompt names the file the approval covers
    finally:
        agent.close()
