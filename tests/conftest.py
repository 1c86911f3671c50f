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


@pytest.fixture
def need_bwrap() -> None:
    """Skip where bubblewrap cannot sandbox (a developer's Mac); in CI, fail and say why."""
    import os

    from ipy_agent.tools.bash.sandbox import sandbox_status

    status = sandbox_status()
    if status.available:
        return
    message = f"the OS sandbox is unavailable: {status.reason}. .ci/run installs bubblewrap; run it as root, or apt-get install bubblewrap"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # Widgets the tests made are closed while the interpreter is whole: left to `__del__` at
    # shutdown, each one prints a traceback (ipywidgets' registry is already gone by then).
    import sys

    widgets = sys.modules.get("ipywidgets")
    if widgets is not None:
        widgets.Widget.close_all()
