"""MCP through the magics: .mcp.json asks once at the terminal, %agent_mcp and %agent_tools show
the servers and where each tool comes from, %agent_reset and %unload_ext stop the servers."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import psutil
import pytest

from tests.support.mcp import TOOLBOX
from tests.support.transcript import use


def _servers() -> set[int]:
    return {
        p.pid
        for p in psutil.Process(os.getpid()).children(recursive=True)
        if p.is_running() and p.status() != psutil.STATUS_ZOMBIE and TOOLBOX in " ".join(p.cmdline())
    }


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("IPY_AGENT_CONFIG_DIR", str(tmp_path / "user-config"))
    (tmp_path / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"tb": {"command": sys.executable, "args": [TOOLBOX]}}})
    )
    return tmp_path


def test_agent_mcp_lists_servers_status_and_tools(shell, script, project, monkeypatch, capsys):
    shell.run_line_magic("agent_mcp", "")
    out = capsys.readouterr().out
    assert "tb" in out and "project: .mcp.json" in out and "not started: needs approval" in out
    prompts: list[str] = []
    monkeypatch.setattr("builtins.input", lambda q="": prompts.append(q) or "a")
    shell.run_line_magic("agent", f"--script {script([use('mcp__tb__lookup', 'l1', key='k')], 'done')} look it up")
    assert len(prompts) == 1 and "[a]lways allow MCP server 'tb' in this project" in prompts[0]
    capsys.readouterr()

    shell.run_line_magic("agent_mcp", "")
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.strip().startswith("tb "))
    tools = {line.split()[0]: line.split()[1:] for line in out.splitlines() if line.strip().startswith("mcp__tb__")}
    assert "project: .mcp.json" in row and f"stdio: {sys.executable}" in row and " up " in row
    assert row.split()[-1] == str(len(tools)) and len(tools) > 10  # the count column, one row per tool
    assert tools["mcp__tb__lookup"] == ["yes", "yes", "no", "yes"]  # read-only, parallel, destructive, offered
    assert tools["mcp__tb__add"] == ["no", "no", "no", "yes"]
    assert tools["mcp__tb__wipe"] == ["no", "no", "yes", "yes"]

    shell.run_line_magic("agent_tools", "")
    out = capsys.readouterr().out
    rows = {line.split()[0]: line for line in out.splitlines() if line.startswith("  ") and line.split()}
    assert rows["mcp__tb__lookup"].rstrip().endswith("MCP server tb (.mcp.json)")
    assert rows["Read"].rstrip().endswith("built-in")

    # A deny rule hides the tool, and %agent_mcp says which rule.
    shell.run_line_magic("config", "AgentMagics.deny = ['mcp__tb__add']")
    shell.run_line_magic("agent_mcp", "")
    out = capsys.readouterr().out
    add = next(line for line in out.splitlines() if line.strip().startswith("mcp__tb__add"))
    assert "no: denied by rule 'mcp__tb__add'" in add


def test_reset_and_unload_leave_no_server_process(shell, script, project, monkeypatch, capsys):
    monkeypatch.setattr("builtins.input", lambda q="": "a")
    before = _servers()
    shell.run_line_magic("agent", f"--script {script([use('mcp__tb__lookup', 'l1', key='k')], 'done')} go")
    assert len(_servers() - before) == 1
    shell.run_line_magic("agent_reset", "")
    assert _servers() - before == set()
    monkeypatch.setattr("builtins.input", lambda q="": pytest.fail("the approval is remembered; nobody is asked"))
    shell.run_line_magic("agent", f"--script {script([use('mcp__tb__lookup', 'l2', key='k')], 'done')} again")
    assert len(_servers() - before) == 1
    shell.run_line_magic("unload_ext", "ipy_agent")
    assert _servers() - before == set()


def test_agent_mcp_logout_removes_a_servers_tokens(shell, project, capsys):
    folder = project / "user-config" / "mcp-tokens"
    folder.mkdir(parents=True)
    (folder / "tb.json").write_text('{"url": "x", "tokens": {"access_token": "t"}}')
    shell.run_line_magic("agent_mcp", "logout tb")
    assert "Signed out of 'tb': its tokens were removed." in capsys.readouterr().out
    assert not (folder / "tb.json").exists()
    shell.run_line_magic("agent_mcp", "logout tb")
    assert "No tokens were kept for 'tb'." in capsys.readouterr().out
