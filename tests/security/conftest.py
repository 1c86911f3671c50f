"""Fixtures for the containment suites: real bubblewrap, never skipped silently in CI."""

from __future__ import annotations

import os

import pytest

from ipy_agent.tools.bash.sandbox import sandbox_status


@pytest.fixture
def need_bwrap() -> None:
    """Skip where bubblewrap cannot sandbox (a developer's Mac); in CI, fail and say why."""
    status = sandbox_status()
    if status.available:
        return
    message = f"the OS sandbox is unavailable: {status.reason}. .ci/run installs bubblewrap; run it as root, or apt-get install bubblewrap"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)
