"""The fixtures of tests/support for every test, and the end of the session.

tests/support/fixtures.py holds the shared fixtures (`rec`, `ctx`, the InteractiveShell ones).
"""

from __future__ import annotations

import pytest

pytest_plugins = ["tests.support.fixtures"]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # Widgets the tests made are closed while the interpreter is whole: left to `__del__` at
    # shutdown, each one prints a traceback (ipywidgets' registry is already gone by then).
    import sys

    widgets = sys.modules.get("ipywidgets")
    if widgets is not None:
        widgets.Widget.close_all()
