"""An outside agent edits the notebook open in real JupyterLab, through `%agent_serve`, in Chromium.

The person runs `%agent_serve`; an MCP client (the `mcp` SDK's streamable-HTTP client, as Claude
Code connects with the printed line) reads the notebook and proposes an edit of a cell. The edit
is staged in that cell, nothing changes in the notebook model before the person clicks Accept in
the cell, and the client is told it landed. Without a browser (or the built extension) this skips
locally and fails in CI (CI=true).
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.browser import TIMEOUT, JupyterServer, NotebookPage
from tests.support.review_page import shown_outcome, watch_outcomes
from tests.support.waits import timed_out, waiting_for

pytestmark = pytest.mark.browser

LINE = re.compile(r'claude mcp add --transport http notebook (\S+) --header "Authorization: Bearer (\S+)"')
SERVE = 1  # the %agent_serve cell; c1 `x = 1` follows it


@pytest.fixture
def pages(lab_server: JupyterServer, browser: Any) -> Iterator[list[NotebookPage]]:
    opened: list[NotebookPage] = []
    yield opened
    for p in opened:
        p.close()


def outside_edit(url: str, token: str, notebook: str, done: threading.Event, out: dict[str, Any]) -> None:
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp_types import Implementation

    async def main() -> Any:
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=TIMEOUT * 2) as http,
            streamable_http_client(url, http_client=http) as streams,
            ClientSession(streams[0], streams[1], client_info=Implementation(name="claude-code", version="1")) as s,
        ):
            await s.initialize()
            await s.call_tool("NotebookRead", {})
            return await s.call_tool(
                "NotebookEdit", {"notebook_path": notebook, "cell_id": "c1", "new_source": "x = 41"}
            )

    try:
        out["result"] = asyncio.run(main())
    except BaseException as e:
        out["error"] = e
    finally:
        done.set()


def test_an_outside_clients_edit_is_accepted_in_the_cell(
    lab_server: JupyterServer, browser: Any, pages: list[NotebookPage]
):
    name = "served.ipynb"
    lab_server.notebook_file(name, ["%load_ext ipy_agent", "%agent_serve", "x = 1"], ids=["load", "serve", "c1"])
    page = lab_server.open(browser, name)
    pages.append(page)
    watch_outcomes(page.page)
    page.run(0)
    page.wait_done(0)
    page.run(SERVE)
    page.wait_done(SERVE)
    found = LINE.search(page.wait_text(SERVE, "claude mcp add"))
    assert found is not None, page.text(SERVE)
    url, token = found.groups()

    done, out = threading.Event(), {}
    threading.Thread(target=outside_edit, args=(url, token, name, done, out), daemon=True).start()
    box = page.cell(2).locator(".ipy-agent-proposal:not([data-outcome])").first
    with waiting_for("Chromium to show the outside client's proposal in cell 2"):
        try:
            box.wait_for(state="visible", timeout=TIMEOUT * 1000)
        except Exception:
            raise timed_out("no proposal in cell 2", TIMEOUT, f"console: {page.console[-10:]}") from None
    assert "+ x = 41" in box.inner_text()
    assert [c["source"] for c in page.cells()][2] == "x = 1"  # nothing changes before Accept

    box.get_by_role("button", name="Accept", exact=True).click()

    shown_outcome(page.page, "Accepted")
    assert done.wait(TIMEOUT), "the outside client's call did not end"
    assert "error" not in out, out.get("error")
    assert not out["result"].is_error, out["result"]
    assert [c["source"] for c in page.cells()][2] == "x = 41"
    page.wait_text(SERVE, "via claude-code")  # the row in the %agent_serve cell names the client
