"""Shared fixtures."""

from __future__ import annotations

import pytest

from tests.helpers import Recorder


@pytest.fixture
def rec() -> Recorder:
    return Recorder()


@pytest.fixture(autouse=True)
def _no_personal_files(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """The person's own ipy_agent directory (their AGENTS.md, skills, MCP settings) is an empty
    one: what a test sees does not depend on the machine it runs on. Tests that need one set
    IPY_AGENT_CONFIG_DIR themselves (the test kernels get an empty one of their own)."""
    monkeypatch.setenv("IPY_AGENT_CONFIG_DIR", str(tmp_path_factory.mktemp("personal")))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # Widgets the tests made are closed while the interpreter is whole: left to `__del__` at
    # shutdown, each one prints a traceback (ipywidgets' registry is already gone by then).
    import sys

    widgets = sys.modules.get("ipywidgets")
    if widgets is not None:
        widgets.Widget.close_all()
