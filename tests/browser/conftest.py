"""Fixtures for the browser tests: one Chromium per module, one Jupyter server per front end.

`server` is parametrised over JupyterLab and Notebook 7 (module scope: starting a server takes a
few seconds); each test gets a fresh project directory under the server's root. `lab_server` is
one JupyterLab for the live-notebook tests, which also need the ipy-agent-notebook extension.
Without a browser (or that extension) the tests are skipped locally, but FAIL in CI (CI=true): a
skipped browser suite would hide exactly the bugs it exists to catch. `.ci/run` installs chromium
with apt-get, and Node to build the extension.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.browser import JupyterServer, Kind, NotebookPage, browser_missing, launch_browser


def _need_browser(*, extension: bool = False) -> None:
    why = browser_missing(extension=extension)
    if why is None:
        return
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(
            f"browser tests cannot run in CI: {why}. .ci/run installs chromium with apt-get and Node "
            "for the extension; install them, or fix the image.",
            pytrace=False,
        )
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


def _serve(kind: Kind, tmp_path_factory: Any) -> Iterator[JupyterServer]:
    s = JupyterServer(kind, tmp_path_factory.mktemp(f"jupyter_{kind}")).start()
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture(scope="module", params=["lab", "notebook"])
def server(request: Any, tmp_path_factory: Any) -> Iterator[JupyterServer]:
    _need_browser()
    yield from _serve(request.param, tmp_path_factory)


@pytest.fixture(scope="module")
def lab_server(tmp_path_factory: Any) -> Iterator[JupyterServer]:
    """JupyterLab with the ipy-agent-notebook extension, for the live-notebook tests."""
    _need_browser(extension=True)
    yield from _serve("lab", tmp_path_factory)


@pytest.fixture(scope="module")
def notebook_server(tmp_path_factory: Any) -> Iterator[JupyterServer]:
    """Notebook 7 alone, for what only happens there (New > Notebook from the file browser)."""
    _need_browser()
    yield from _serve("notebook", tmp_path_factory)


@pytest.fixture
def project(server: JupyterServer) -> Path:
    """A fresh directory under the server's root for one test (the notebook lives there)."""
    d = server.root / f"p{uuid.uuid4().hex[:8]}"
    d.mkdir()
    return d


@pytest.fixture(scope="module", params=["lab", "notebook"])
def front(request: Any, tmp_path_factory: Any) -> Iterator[JupyterServer]:
    """JupyterLab, then Notebook 7, each with this checkout's build of the extension (a module may
    define its own, as test_review_bar.py does for JupyterLab's windowing modes)."""
    _need_browser(extension=True)
    yield from _serve(request.param, tmp_path_factory)


@pytest.fixture
def opened(front: JupyterServer, browser: Any) -> Iterator[list[NotebookPage]]:
    """The pages a test opens, closed after it."""
    pages: list[NotebookPage] = []
    yield pages
    for p in pages:
        p.close()
