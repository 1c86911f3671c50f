"""The open notebook served to outside agents over MCP: `Agent.serve_mcp()` and `%agent_serve`.

An outside agent (Claude Code, Codex) connects to a streamable-HTTP MCP server in the kernel and
calls NotebookRead, NotebookEdit, NotebookRun, Variables, Read, Grep and Glob on the notebook the
person has open, in the kernel they are running. Guard the resource, not the door: each call is
one more call of the conversation, submitted to a `ToolExecutor` (runtime/executor.py) exactly as
a tool_use block of the model is, so it passes the same lifecycle (validation, hooks, the
permission decision with its rules, mode, cell policies and protected surfaces, the person's
prompt and the in-cell review of a NotebookEdit, result budgets, checkpoints) and lands in the
conversation's trace, its record naming the client (`CallRecord.client`, from the client's
`initialize`). The one difference is the read state: each client has its own, since what one
model has read says nothing of what another has seen (edit-before-read holds per reader).

Decisions:
- Loopback by default, and a random bearer token on every request (401 without it, compared in
  constant time); the SDK's DNS-rebinding check is on for a loopback host.
- Where it runs: on the caller's running event loop when there is one (a kernel cell: the
  kernel's loop, so NotebookRun runs its code on the kernel's main thread, between the person's
  cells, and the notebook cell's prompt widgets answer on their own loop); otherwise on a daemon
  thread with a loop of its own (a script, a test). The socket is bound before `serve_mcp`
  returns, so `.url` is usable at once.
- Calls from outside run one at a time, in the order they arrive; prompts are one at a time
  among them (a shared approval lock).
- It stops with `.stop()`, `Agent.close()` (which `%unload_ext` and the end of the kernel reach),
  and at interpreter exit; whoever stops it, `on_stop` callbacks run then (the `%agent_serve`
  cell's view becomes its record), and `stopped_text()` says what it served.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import dataclasses
import hmac
import secrets
import socket
import threading
import uuid
from collections.abc import Callable, Iterator, MutableMapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ipy_agent.contract.decision import PermissionMode
from ipy_agent.contract.hooks import Hooks
from ipy_agent.contract.read_state import ReadState
from ipy_agent.contract.tool import Tool
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.history.blocks import JsonObject, ToolResultBlock, ToolUseBlock
from ipy_agent.permissions.decide import Approver
from ipy_agent.permissions.rules import PermissionRules
from ipy_agent.runtime.budget import ResultBudget
from ipy_agent.runtime.executor import ToolExecutor
from ipy_agent.runtime.registry import ToolRegistry
from ipy_agent.runtime.run_env import RunEnv
from ipy_agent.runtime.trace import AgentEvent, CallRecord, TurnRecord

from .ask_person import notifying

if TYPE_CHECKING:
    import uvicorn

__all__ = ["SERVED_TOOLS", "McpServeHandle", "ServedAgent", "connect_lines", "serve_mcp"]

# What an outside agent may call: the notebook and reading the files, nothing that runs a shell.
SERVED_TOOLS = ("NotebookRead", "NotebookEdit", "NotebookRun", "Variables", "Read", "Grep", "Glob")
SERVER_NAME = "ipy_agent"
PATH = "/mcp"
UNNAMED_CLIENT = "an MCP client"


class ServedAgent(Protocol):
    """What the server needs of the agent whose notebook it serves (`Agent`)."""

    registry: ToolRegistry
    rules: PermissionRules
    hooks: Hooks
    budget: ResultBudget
    trace: list[CallRecord]
    turns: list[TurnRecord]

    @property
    def simple(self) -> bool: ...
    @property
    def permission_mode(self) -> PermissionMode: ...
    @property
    def ask_person(self) -> Approver | None: ...
    async def notify_person(self, message: str, notification_type: str) -> None: ...

    def tool_context(self, tool_use_id: str | None = None) -> ToolContext: ...
    def emit(self, event: AgentEvent) -> None: ...


class _Calls:
    """The outside calls of one server: each through the executor, one at a time."""

    def __init__(
        self,
        agent: ServedAgent,
        *,
        tools: Sequence[str],
        approver: Approver | None,
        listener: Callable[[AgentEvent], None] | None,
    ) -> None:
        self.agent = agent
        self.tools = tuple(tools)
        self.approver = approver
        self.listener = listener
        self.read_states: dict[str, ReadState] = {}  # per client: what that client has read
        self.served: dict[str, int] = {}  # per client: how many calls it made
        self._batches = [0]
        self._one_at_a_time: asyncio.Lock | None = None
        self._approval_lock: asyncio.Lock | None = None

    def listed(self) -> list[Tool]:
        """The served tools a client sees: registered, and not denied whole by a rule."""
        tools = (self.agent.registry.get(name) for name in self.tools)
        return [t for t in tools if t is not None and self.agent.rules.denies_whole(t) is None]

    def env(self, client: str) -> RunEnv:
        agent = self.agent
        exposure = agent.registry.exposed(agent.tool_context(), agent.rules, simple=agent.simple)
        read_state = self.read_states.setdefault(client, ReadState())
        assert self._approval_lock is not None
        return RunEnv(
            tools={t.name: t for t in exposure.offered if t.name in self.tools},
            rules=agent.rules,
            hooks=agent.hooks,
            budget=agent.budget,
            make_ctx=lambda tid: dataclasses.replace(agent.tool_context(tid), read_state=read_state),
            mode=lambda: agent.permission_mode,
            approver=agent.ask_person if self.approver is None else notifying(self.approver, agent.notify_person),
            emit=self.listener if self.listener is not None else agent.emit,
            result_limit=agent.registry.result_limit,
            approval_lock=self._approval_lock,
            client=client,
        )

    def unavailable(self, name: str) -> str | None:
        """Why `name` cannot be called now, in words for the outside agent; None when it can."""
        if name not in self.tools:
            return f"No such tool here: {name!r}. This notebook serves: {', '.join(self.tools)}."
        agent = self.agent
        hidden = agent.registry.exposed(agent.tool_context(), agent.rules, simple=agent.simple).hidden
        if name in hidden:
            return f"{name} is not available now: it {hidden[name]}."
        return None

    async def call(self, name: str, arguments: JsonObject, client: str) -> ToolResultBlock:
        if self._one_at_a_time is None:
            self._one_at_a_time, self._approval_lock = asyncio.Lock(), asyncio.Lock()
        async with self._one_at_a_time:
            self.served[client] = self.served.get(client, 0) + 1
            env = self.env(client)
            executor = ToolExecutor(
                env, turn=len(self.agent.turns), trace=self.agent.trace, batch_counter=self._batches
            )
            block: ToolUseBlock = {
                "type": "tool_use",
                "id": f"mcp_{uuid.uuid4().hex[:20]}",
                "name": name,
                "input": arguments,
            }
            executor.submit(block)
            try:
                results = await executor.results()
            except asyncio.CancelledError:  # the client cancelled, or the server stops
                executor.interrupt("The outside client cancelled this call before it finished.")
                with contextlib.suppress(BaseException):
                    await executor.drain()
                raise
            return results[0]


def _mcp_content(block: ToolResultBlock) -> list[Any]:
    """A tool_result's content as MCP content: text, and images as MCP image content."""
    import mcp_types as types

    content = block.get("content")
    if isinstance(content, str) or content is None:
        return [types.TextContent(type="text", text=content or "")]
    out: list[Any] = []
    for part in content:
        if part["type"] == "text":
            out.append(types.TextContent(type="text", text=part["text"]))
        else:
            source = part["source"]
            if source["type"] == "base64":
                out.append(types.ImageContent(type="image", data=source["data"], mime_type=source["media_type"]))
            else:
                out.append(types.TextContent(type="text", text=f"[image at {source['url']}]"))
    return out


class _BearerOnly:
    """ASGI: every HTTP request must carry `Authorization: Bearer <token>`; else 401."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = next((v for k, v in scope.get("headers", ()) if k.lower() == b"authorization"), b"")
            if not hmac.compare_digest(given, self._expected):
                body = b'{"error": "unauthorized: this notebook\'s MCP server needs its bearer token"}'
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"www-authenticate", b'Bearer realm="ipy_agent"'),
                            (b"content-length", str(len(body)).encode()),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def _app(calls: _Calls, host: str, token: str) -> Any:
    import mcp_types as types
    from mcp.server.lowlevel import Server

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        tool_ctx = calls.agent.tool_context()
        specs = []
        for tool in calls.listed():
            with contextlib.suppress(Exception):  # a tool whose description fails is not listed
                specs.append(tool.to_api(tool_ctx))
        return types.ListToolsResult(
            tools=[
                types.Tool(name=s["name"], description=s["description"], input_schema=s["input_schema"]) for s in specs
            ]
        )

    async def call_tool(ctx: Any, params: Any) -> types.CallToolResult:
        problem = calls.unavailable(params.name)
        if problem is not None:
            return types.CallToolResult(content=[types.TextContent(type="text", text=problem)], is_error=True)
        info = ctx.session.client_params.client_info if ctx.session.client_params is not None else None
        client = (
            (getattr(info, "title", None) or getattr(info, "name", None) or UNNAMED_CLIENT) if info else UNNAMED_CLIENT
        )
        arguments: JsonObject = dict(params.arguments or {})
        result = await calls.call(params.name, arguments, str(client))
        return types.CallToolResult(content=_mcp_content(result), is_error=bool(result.get("is_error")))

    server: Server[Any] = Server(
        SERVER_NAME,
        instructions="The notebook open in the person's JupyterLab, in their running kernel. Every call asks "
        "them (or follows their rules) as their own agent's calls do.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
    return _BearerOnly(server.streamable_http_app(host=host), token)


def _uvicorn_server(app: Any) -> uvicorn.Server:
    import uvicorn

    class _Quiet(uvicorn.Server):
        """uvicorn without its signal handlers: the kernel's SIGINT must stay the kernel's."""

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

    config = uvicorn.Config(
        app, log_config=None, log_level="warning", access_log=False, lifespan="on", timeout_graceful_shutdown=2
    )
    return _Quiet(config)


class McpServeHandle:
    """A running server: `.url`, `.token`, `.stop()`; `.clients` names the clients that called."""

    def __init__(self, *, url: str, token: str, server: uvicorn.Server, calls: _Calls) -> None:
        self.url = url
        self.token = token
        self._server = server
        self._calls = calls
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Future[None] | None = None
        self._thread: threading.Thread | None = None
        self._on_stop: list[Callable[[], None]] = []
        self.stopped = False

    @property
    def clients(self) -> list[str]:
        return list(self._calls.read_states)

    @property
    def served(self) -> dict[str, int]:
        """How many calls each client made, by the name it gave."""
        return dict(self._calls.served)

    @property
    def running(self) -> bool:
        return not self.stopped

    def stopped_text(self) -> str:
        """What the person is told once serving stopped: where, and the outside calls it served."""
        served = self.served
        if not served:
            return f"Stopped serving the notebook at {self.url}: no outside agent called it."
        total = sum(served.values())
        each = ", ".join(f"{n} from {client}" for client, n in sorted(served.items(), key=lambda kv: -kv[1]))
        return f"Stopped serving the notebook at {self.url}: {total} outside call{'s' if total != 1 else ''}, {each}."

    def on_stop(self, callback: Callable[[], None]) -> None:
        """Call `callback()` once serving stopped, whoever stopped it (at once if it has)."""
        if self.stopped:
            callback()
        else:
            self._on_stop.append(callback)

    def _close_listeners(self) -> None:
        for listener in getattr(self._server, "servers", []):
            listener.close()  # no new connection from now on

    def stop(self) -> None:
        """Stop serving: no new connection is accepted; calls in flight are cancelled."""
        if self.stopped:
            return
        self.stopped = True
        atexit.unregister(self.stop)
        self._server.should_exit = True
        loop = self._loop
        if loop is not None and not loop.is_closed():
            try:
                running = asyncio.get_running_loop()
            except RuntimeError:
                running = None
            if running is loop:
                self._close_listeners()
            else:
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(self._close_listeners)
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(10)
        for callback in self._on_stop:
            with contextlib.suppress(Exception):  # one that fails does not keep the others from running
                callback()
        self._on_stop.clear()

    def __repr__(self) -> str:
        return f"<ipy_agent MCP server {self.url} ({'stopped' if self.stopped else 'serving'})>"


def connect_lines(handle: McpServeHandle, name: str = "notebook") -> list[str]:
    """How to connect Claude Code and Codex to `handle` (the token is in them: keep them private)."""
    return [
        f'claude mcp add --transport http {name} {handle.url} --header "Authorization: Bearer {handle.token}"',
        f"codex mcp add {name} --url {handle.url} --bearer-token-env-var IPY_AGENT_MCP_TOKEN  "
        f"# with IPY_AGENT_MCP_TOKEN={handle.token} in Codex's environment",
    ]


def serve_mcp(
    agent: ServedAgent,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    approver: Approver | None = None,
    listener: Callable[[AgentEvent], None] | None = None,
    tools: Sequence[str] = SERVED_TOOLS,
) -> McpServeHandle:
    """Serve `agent`'s notebook tools over streamable HTTP at `host:port` (0: a free port).

    `approver` answers the calls that ask (None: the agent's approver at the time of the call,
    and with none, a call that asks is denied); `listener` follows the calls' events (None: the
    agent's listeners)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.create_server((host, port), family=family)
    bound = sock.getsockname()[1]
    token = secrets.token_urlsafe(32)
    calls = _Calls(agent, tools=tools, approver=approver, listener=listener)
    try:
        server = _uvicorn_server(_app(calls, host, token))
    except BaseException:
        sock.close()
        raise
    shown = f"[{host}]" if family == socket.AF_INET6 else host
    handle = McpServeHandle(url=f"http://{shown}:{bound}{PATH}", token=token, server=server, calls=calls)
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    if loop is not None:
        handle._loop = loop
        handle._task = asyncio.ensure_future(server.serve(sockets=[sock]))
    else:
        started = threading.Event()

        def main() -> None:
            async def serve() -> None:
                handle._loop = asyncio.get_running_loop()
                started.set()
                await server.serve(sockets=[sock])

            asyncio.run(serve())

        handle._thread = threading.Thread(target=main, name="ipy_agent-mcp-serve", daemon=True)
        handle._thread.start()
        started.wait()
    atexit.register(handle.stop)
    return handle
