"""Fixtures for the browser tests: one Chromium per module, one Jupyter server per front end.

`server` is parametrised over JupyterLab and Notebook 7 (module scope: starting a server takes a
few seconds); each test gets a fresh project directory under the server's root. Without a
browser the tests are skipped locally, but FAIL in CI (CI=true): a skipped browser suite would
hide exactly the bugs it exists to catch. `.ci/run` installs chromium with apt-get.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.harness import JupyterServer, browser_missing, launch_browser


def _need_browser() -> None:
    why = browser_missing()
    if why is None:
        return
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"browser tests cannot run in CI: {why}. .ci/run installs chromium with apt-get; "
                    "install it, or fix the image.", pytrace=False)
    pytest.skip(f"browser tests need a browser: {why}")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    # Module scope, not session: while Playwright's sync API is active it leaves an event loop
    # marked running in the main thread, so every asyncio test collected after the browser
    # tests would fail ("asyncio.run() cannot be called from a running event loop"), and a
    # second sync_playwright() in another module would refuse to start.
    _need_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = launch_browser(p)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture(scope="module", params=["lab", "notebook"])
def server(request: Any, tmp_path_factory: Any) -> Iterator[JupyterServer]:
    _need_browser()
    root = tmp_path_factory.mktemp(f"jupyter_{request.param}")
    s = JupyterServer(request.param, root).start()
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture
def project(server: JupyterServer) -> Path:
    """A fresh directory under the server's root for one test (the notebook lives there)."""
    d = server.root / f"p{uuid.uuid4().hex[:8]}"
    d.mkdir()
    return d
