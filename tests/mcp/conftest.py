"""Fixtures for the MCP tests: real servers (tests/mcp/servers/) over stdio and streamable HTTP."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ipy_agent import Agent
from tests.mcp._util import TOOLBOX


@pytest.fixture(autouse=True)
def config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Approvals and user settings go to a directory of the test's own, never the person's."""
    path = tmp_path / "user-config"
    monkeypatch.setenv("IPY_AGENT_CONFIG_DIR", str(path))
    return path


@pytest.fixture
def make_agent(tmp_path: Path) -> Any:
    """Agents whose MCP servers are always closed at the end of the test."""
    agents: list[Agent] = []
    project = tmp_path / "project"
    project.mkdir()

    def make(**kw: Any) -> Agent:
        kw.setdefault("cwd", project)
        kw.setdefault("tools", [])
        agent = Agent(**kw)
        agents.append(agent)
        return agent

    yield make
    for agent in agents:
        agent.close()


@pytest.fixture
def http_url() -> Any:
    """The toolbox server over streamable HTTP on 127.0.0.1, a free port, in its own process."""
    proc = subprocess.Popen(
        [sys.executable, TOOLBOX, "http"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        assert line.startswith("PORT "), (
            f"the HTTP server did not start: {line!r} {proc.stderr.read() if proc.stderr else ''}"
        )
        yield f"http://127.0.0.1:{int(line.split()[1])}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
