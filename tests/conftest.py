"""Shared fixtures."""

from __future__ import annotations

import pytest

from tests.helpers import Recorder


@pytest.fixture
def rec() -> Recorder:
    return Recorder()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # Widgets the tests made are closed while the interpreter is whole: left to `__del__` at
    # shutdown, each one prints a traceback (ipywidgets' registry is already gone by then).
    import sys

    widgets = sys.modules.get("ipywidgets")
    if widgets is not None:
        widgets.Widget.close_all()
