"""Fixtures for the MCP tests: real servers (tests/support/mcp_servers/) over stdio and streamable HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ipy_agent import Agent
from tests.support.mcp import http_toolbox


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
def http_url() -> Iterator[str]:
    """The toolbox server over streamable HTTP on 127.0.0.1 (tests/support/mcp.py)."""
    with http_toolbox() as url:
        yield url
