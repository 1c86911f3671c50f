"""MCP servers' OAuth tokens are never shown to the model or a tool.

They are kept in `settings_dir()/mcp-tokens/NAME.json`, mode 0600, a built-in Read deny: Read,
Grep and a sandboxed Bash command (cwd at home, the name built at run time) get nothing of them.
Each attack has its control: without the built-in deny, the same call reads the token.
`McpManager.logout` (`%agent_mcp logout NAME`) removes the file.
"""

from __future__ import annotations

import asyncio
import stat
from pathlib import Path

import pytest
from mcp.shared.auth import OAuthToken

from ipy_agent import Agent, ScriptedModel
from ipy_agent.base.paths import mcp_token_dir
from ipy_agent.base.surfaces import refresh
from ipy_agent.mcp import McpManager
from ipy_agent.mcp.config import parse_server
from ipy_agent.mcp.oauth import TokenFile, token_path
from ipy_agent.permissions import rules as rules_module
from ipy_agent.tools import builtin_tools
from tests.support.transcript import all_results, result_text, use

ACCESS = "mcp-access-7f3a9c2e5b1d4e6f"
REFRESH = "mcp-refresh-0a8b7c6d5e4f3a2b"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    h = tmp_path / "home"
    h.mkdir()
    monkeypatch.setenv("HOME", str(h))
    monkeypatch.delenv("IPY_AGENT_CONFIG_DIR", raising=False)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    refresh()
    return h


def _store_tokens() -> Path:
    config = parse_server("github", {"type": "http", "url": "http://127.0.0.1:9/mcp"})
    store = TokenFile(config, "http://127.0.0.1:9/callback")
    asyncio.run(store.set_tokens(OAuthToken(access_token=ACCESS, refresh_token=REFRESH, expires_in=3600)))
    return store.path


def test_tokens_are_kept_per_server_for_the_person_alone(home: Path):
    path = _store_tokens()
    assert path == token_path("github") == home / ".ipy_agent" / "mcp-tokens" / "github.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    again = TokenFile(parse_server("github", {"url": "http://127.0.0.1:9/mcp"}), "http://127.0.0.1:9/callback")
    assert asyncio.run(again.get_tokens()) == OAuthToken(access_token=ACCESS, refresh_token=REFRESH, expires_in=3600)
    # Another URL under the same name starts over: a token is never sent to another server.
    moved = TokenFile(parse_server("github", {"url": "http://127.0.0.1:10/mcp"}), "http://127.0.0.1:9/callback")
    assert asyncio.run(moved.get_tokens()) is None


def _tools_read_the_tokens(home: Path) -> str:
    name = ".ipy_agent/mcp-tokens/github.json"
    code = "print(open('.ipy_' + 'agent/mcp-' + 'tokens/github.json').read())"
    agent = Agent(
        ScriptedModel(
            [
                [
                    use("Read", "r", file_path=name),
                    use("Grep", "g", pattern="mcp-access", path=".ipy_agent", output_mode="content"),
                    use("Bash", "b", command=f'python3 -c "{code}"'),
                ],
                "done",
            ]
        ),
        cwd=home,  # a JupyterHub: the tokens are inside the working directory
        tools=builtin_tools(),
        allow=["Bash(python3:*)", "Read", "Grep"],
        approver=lambda req: "deny",
    )
    try:
        agent.run("go")
    finally:
        agent.close()
    return "\n".join(f"{k}: {result_text(v)}" for k, v in all_results(agent.messages).items())


@pytest.mark.usefixtures("need_bwrap")
def test_no_tool_or_command_reads_the_tokens(home: Path):
    _store_tokens()
    out = _tools_read_the_tokens(home)
    assert ACCESS not in out and REFRESH not in out, out
    assert "denied by rule" in out and "hidden by deny rules" in out and "No such file" in out, out


@pytest.mark.usefixtures("need_bwrap")
def test_control_without_the_built_in_deny_the_tokens_are_read(home: Path, monkeypatch: pytest.MonkeyPatch):
    _store_tokens()
    monkeypatch.setattr(rules_module, "mcp_token_dir", lambda: home / "elsewhere")
    out = _tools_read_the_tokens(home)
    assert out.count(ACCESS) >= 3, out  # Read, Grep and the command


def test_logout_removes_the_tokens(home: Path):
    path = _store_tokens()
    manager = McpManager(home, {"github": {"type": "http", "url": "http://127.0.0.1:9/mcp"}})
    try:
        assert manager.logout("github") is True
        assert not path.exists() and mcp_token_dir().is_dir()
        assert manager.logout("github") is False
    finally:
        manager.close()
