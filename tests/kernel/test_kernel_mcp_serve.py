"""`%agent_serve` in a real kernel: an outside MCP client edits the open notebook, the person decides.

The kernel has ipy_agent loaded and the fake page (tests/support/frontend.py) connected; the
client is the `mcp` SDK's streamable-HTTP client, in a thread of the test process, as Claude Code
would connect with the line `%agent_serve` prints. What a person notices is checked: the line to
paste, the change staged in the cell it changes (nothing written before Accept), the cell after
Accept in the cell, the row in the `%agent_serve` cell naming the client, and the end of serving.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.support.frontend import LiveKernel, Panel, cell, connected_kernel

pytestmark = pytest.mark.kernel

NB = "analysis.ipynb"
CLIENT = "claude-code"
LINE = re.compile(r'claude mcp add --transport http notebook (\S+) --header "Authorization: Bearer (\S+)"')


class Client(threading.Thread):
    """An outside agent's session, run in a thread while the test pumps the kernel's messages."""

    def __init__(self, url: str, token: str, work: Callable[[Any], Awaitable[Any]]) -> None:
        super().__init__(daemon=True)
        self.url, self.token, self.work = url, token, work
        self.result: Any = None
        self.error: BaseException | None = None
        self.done = threading.Event()

    def run(self) -> None:
        from mcp import ClientSession
        from mcp.client.streamable_http import streamable_http_client
        from mcp_types import Implementation

        async def main() -> Any:
            headers = {"Authorization": f"Bearer {self.token}"}
            async with (
                httpx2.AsyncClient(headers=headers, timeout=60) as http,
                streamable_http_client(self.url, http_client=http) as streams,
                ClientSession(streams[0], streams[1], client_info=Implementation(name=CLIENT, version="1")) as s,
            ):
                await s.initialize()
                return await self.work(s)

        try:
            self.result = asyncio.run(main())
        except BaseException as e:
            self.error = e
        finally:
            self.done.set()


def finished(k: LiveKernel, client: Client) -> Any:
    k.wait_for("the outside client's calls to end", client.done.is_set)
    if client.error is not None:
        raise client.error
    return client.result


@pytest.fixture
def panel() -> Panel:
    return Panel(path=NB, cells=[cell("# Analysis", "markdown", cell_id="md0"), cell("x = 1", cell_id="c1")])


def test_an_outside_edit_is_staged_in_the_cell_and_accepted_there(tmp_path: Path, panel: Panel):
    with connected_kernel(tmp_path, panel) as k:
        printed = k.check("%agent_serve")
        found = LINE.search(printed)
        assert found is not None, printed
        url, token = found.groups()
        assert url.startswith("http://127.0.0.1:") and "Codex" in printed

        async def work(session: Any) -> Any:
            read = await session.call_tool("NotebookRead", {})
            assert "x = 1" in read.content[0].text
            return await session.call_tool(
                "NotebookEdit", {"notebook_path": NB, "cell_id": "c1", "new_source": "x = 41"}
            )

        client = Client(url, token, work)
        client.start()
        proposal = k.proposal(panel)
        assert (proposal["kind"], proposal["cell_id"], proposal["source"]) == ("replace", "c1", "x = 41")
        assert panel.sources() == ["# Analysis", "x = 1"]  # nothing changes before Accept
        assert k.wait_for("the row naming the client", lambda: k.shows(f"via {CLIENT}"))

        k.decide(panel, "accept")
        edited = finished(k, client)

        assert not edited.is_error, edited
        assert panel.sources() == ["# Analysis", "x = 41"]
        assert proposal["outcome"] == "accepted"

        # --stop: the server is gone, and the kernel says so.
        assert "Stopped serving" in k.check("%agent_serve --stop")
        with pytest.raises(httpx2.ConnectError):
            httpx2.post(url, json={}, headers={"Authorization": f"Bearer {token}"})


def test_an_outside_notebook_run_is_asked_in_the_serve_cell_and_runs_in_the_kernel(tmp_path: Path, panel: Panel):
    with connected_kernel(tmp_path, panel) as k:
        found = LINE.search(k.check("%agent_serve"))
        assert found is not None
        url, token = found.groups()

        async def work(session: Any) -> Any:
            await session.call_tool("NotebookRead", {})
            return await session.call_tool("NotebookRun", {"cell_id": "c1"})

        client = Client(url, token, work)
        client.start()
        k.click(k.wait_for("the Allow button in the %agent_serve cell", lambda: k.find_button("Allow")))
        ran = finished(k, client)

        assert not ran.is_error, ran
        assert k.check("print(x)").strip() == "1"  # the cell ran in the person's kernel
        assert panel.cells[1]["execution_count"] is not None


def test_a_wrong_token_gets_401_from_the_kernel(tmp_path: Path, panel: Panel):
    with connected_kernel(tmp_path, panel) as k:
        found = LINE.search(k.check("%agent_serve"))
        assert found is not None
        url, _token = found.groups()
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        reply = httpx2.post(
            url,
            json=body,
            headers={"Authorization": "Bearer wrong", "Accept": "application/json, text/event-stream"},
        )
        assert reply.status_code == 401
