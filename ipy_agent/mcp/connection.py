"""One MCP server's session, its state, and what went wrong with it, on the manager's loop.

A runner task owns the transport and the session (anyio contexts must be entered and left by
one task) and waits until it is told to stop. Calls go through the live session from other
tasks of the same loop. Any failure, at start or mid-call, marks the server down with a
reason a person and the model can act on (with the last lines of its stderr); the next call
starts it again. Everything here runs on the manager's background loop (loop.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import tempfile
import warnings
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ipy_agent.history.blocks import JsonObject

from .config import McpAuthorize, ServerConfig
from .elicitation import ElicitationAnswer, ElicitationRequest

Asker = Callable[[ElicitationRequest], Awaitable[ElicitationAnswer]]
SAMPLING_DECLINED = (
    "ipy_agent declines sampling: the person's model and budget are not an MCP server's to spend. "
    "Do the work without asking the client's model."
)

__all__ = ["CallOutcome", "ServerConnection", "ServerDown", "Status", "ToolInfo"]

# The SDK logs a server's faults (a line that is not JSON-RPC) with tracebacks; with no logging
# configured they would land in the cell's output. The person hears of faults from us instead;
# a configured logging setup still receives them (this only stops the last-resort handler).
logging.getLogger("mcp").addHandler(logging.NullHandler())

Status = Literal["stopped", "starting", "up", "down"]
STDERR_LINES = 8
STOP_TIMEOUT = 15.0


class ServerDown(Exception):
    """The server cannot answer (it did not start, exited, or hung); the text says which and why."""


class CallFailed(Exception):
    """The server is up but the call failed (a protocol error, an invalid answer)."""


@dataclass(frozen=True, kw_only=True)
class ToolInfo:
    name: str
    description: str
    input_schema: JsonObject
    annotations: JsonObject = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class CallOutcome:
    content: list[JsonObject]
    structured: Any = None
    is_error: bool = False


class ServerConnection:
    def __init__(
        self,
        config: ServerConfig,
        cwd: Path,
        authorize: McpAuthorize | None = None,
        *,
        ask: Asker | None = None,
        roots: Callable[[], Sequence[Path]] | None = None,
    ) -> None:
        self.config = config
        self.cwd = cwd
        self.authorize = authorize
        self._receiver: Any = None  # oauth.LoopbackReceiver, made when an HTTP server first starts
        self._start_scope: Any = None  # the start's deadline, stopped while a person authorizes
        self._ask = ask  # a server's elicitation goes to the person through this
        self._roots = roots or (lambda: (cwd,))
        self._asked = 0
        self.status: Status = "stopped"
        self.reason = ""
        self.tools: list[ToolInfo] = []
        self.instructions = ""
        self.has_resources = False  # the server said it has resources (its capabilities)
        self.has_prompts = False
        self.tools_stale = False
        self.starts = 0
        self.fault = ""  # why the transport refused the server's output (a message too large)
        self._session: Any = None
        self._runner: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._lock: asyncio.Lock | None = None
        self._errlog: Any = None
        self._err_from = 0

    # --- what the person sees ------------------------------------------------------------
    def stderr_tail(self, lines: int = STDERR_LINES) -> str:
        """The last lines the server wrote to stderr (stdio servers only)."""
        f = self._errlog
        if f is None:
            return ""
        try:
            fd = f.fileno()
            size = os.fstat(fd).st_size
            # pread: the server shares this file's offset; reading must not move it.
            start = max(self._err_from, size - 8192)  # only what this start of the server wrote
            data = os.pread(fd, size - start, start) if size > start else b""
        except (OSError, ValueError):
            return ""
        kept = [ln.rstrip() for ln in data.decode("utf-8", "replace").splitlines() if ln.strip()]
        return "\n".join(kept[-lines:])

    def _waiting(self, person: bool) -> None:
        """The start's deadline stops while the person authorizes, and starts again after."""
        import anyio

        scope = self._start_scope
        if scope is not None:
            scope.deadline = math.inf if person else anyio.current_time() + self.config.startup_timeout

    def _fault(self, what: str) -> None:
        self.fault = what

    def _why(self, what: str) -> str:
        tail = self.stderr_tail()
        return f"{what}. Its last stderr lines:\n{tail}" if tail else f"{what}."

    # --- start and stop ------------------------------------------------------------------
    async def start(self) -> None:
        """Up, or ServerDown with the reason. Starts (or restarts) the server when needed."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self.status == "up" and self._session is not None:
                return
            await self._shutdown()
            self.status, self.reason = "starting", ""
            self.starts += 1
            ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._stop = asyncio.Event()
            self._runner = asyncio.create_task(self._run(ready, self._stop))
            try:
                await ready
            except Exception as e:
                why = self.fault or _describe(e, self.config)
                self.status, self.reason = "down", self._why(f"failed to start: {why}")
                await self._shutdown()
                raise ServerDown(self.reason) from None

    async def close(self) -> None:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            await self._shutdown()
            self.status, self.reason = "stopped", ""
            if self._errlog is not None:
                self._errlog.close()
                self._errlog = None
            if self._receiver is not None:
                await self._receiver.close()
                self._receiver = None

    async def _shutdown(self) -> None:
        runner, stop = self._runner, self._stop
        self._runner = self._stop = None
        self._session = None
        if runner is None or stop is None:
            return
        stop.set()
        try:
            # The SDK's own shutdown is bounded (stdin close, TERM, KILL); this bounds the rest.
            await asyncio.wait_for(asyncio.shield(runner), STOP_TIMEOUT)
        except TimeoutError:
            runner.cancel()
            with contextlib.suppress(BaseException):
                await runner
        except BaseException:
            pass

    async def _run(self, ready: asyncio.Future[None], stop: asyncio.Event) -> None:
        import anyio
        from mcp import ClientSession

        try:
            async with contextlib.AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._transport())
                session = await stack.enter_async_context(
                    ClientSession(
                        read,
                        write,
                        message_handler=self._on_message,
                        elicitation_callback=self._on_elicit,
                        list_roots_callback=self._on_list_roots,
                        sampling_callback=self._on_sampling,
                    )
                )
                with anyio.fail_after(self.config.startup_timeout) as scope:
                    self._start_scope = scope
                    init = await session.initialize()
                    tools = await self._list(session)
                self.tools, self.instructions, self.tools_stale = tools, init.instructions or "", False
                caps = init.capabilities
                self.has_resources, self.has_prompts = caps.resources is not None, caps.prompts is not None
                self._session, self.status = session, "up"
                ready.set_result(None)
                await stop.wait()
        except BaseException as e:
            if not ready.done():
                ready.set_exception(e if isinstance(e, Exception) else ServerDown("its start was cancelled"))
            if not isinstance(e, Exception):
                raise
        finally:
            self._session = None

    def _transport(self) -> Any:
        if self.config.transport == "stdio":
            from mcp import StdioServerParameters

            from .stdio import stdio_transport

            if self._errlog is None:
                self._errlog = tempfile.TemporaryFile()  # noqa: SIM115 (kept open across restarts; closed in close())
            self._err_from = os.fstat(self._errlog.fileno()).st_size
            # As Claude Code does: the person's environment, then the configured variables.
            params = StdioServerParameters(
                command=self.config.command,
                args=list(self.config.args),
                env={**os.environ, **self.config.env},
                cwd=self.cwd,
            )
            self.fault = ""
            return stdio_transport(params, self._errlog, on_fault=self._fault)
        from .oauth import LoopbackReceiver

        if self._receiver is None:
            self._receiver = LoopbackReceiver()
        return _http_transport(self.config, self.authorize, self._receiver, self._waiting)

    async def _list(self, session: Any) -> list[ToolInfo]:
        from mcp.types import PaginatedRequestParams

        out: list[ToolInfo] = []
        cursor = None
        while True:
            res = await session.list_tools(params=PaginatedRequestParams(cursor=cursor) if cursor else None)
            for t in res.tools:
                notes = t.annotations.model_dump(by_alias=True, exclude_none=True) if t.annotations else {}
                out.append(
                    ToolInfo(
                        name=t.name,
                        description=t.description or "",
                        input_schema=dict(t.input_schema),
                        annotations=notes,
                    )
                )
            cursor = res.next_cursor
            if not cursor:
                return out

    async def _on_message(self, message: Any) -> None:
        from mcp.types import ToolListChangedNotification

        if isinstance(message, ToolListChangedNotification):
            self.tools_stale = True

    # --- what the server asks of the client -----------------------------------------------
    async def _on_elicit(self, context: Any, params: Any) -> Any:
        from mcp.types import ElicitResult, ErrorData

        if getattr(params, "mode", "form") != "form":
            return ErrorData(code=-32602, message="ipy_agent supports form elicitation only (no URL mode)")
        self._asked += 1
        request = ElicitationRequest(
            server=self.config.name,
            message=params.message,
            schema=dict(params.requested_schema),
            id=f"mcp-elicit-{self.config.name}-{self.starts}-{self._asked}",
        )
        if self._ask is None:
            return ElicitResult(action="decline")
        answer = await self._ask(request)
        content: Any = answer.content if answer.action == "accept" else None  # checked against its schema
        return ElicitResult(action=answer.action, content=content)

    async def _on_list_roots(self, context: Any) -> Any:
        from mcp.types import ListRootsResult, Root

        return ListRootsResult(roots=[Root(uri=p.as_uri(), name=p.name or str(p)) for p in self._roots()])  # type: ignore[arg-type]

    async def _on_sampling(self, context: Any, params: Any) -> Any:
        from mcp.types import INVALID_REQUEST, ErrorData

        return ErrorData(code=INVALID_REQUEST, message=SAMPLING_DECLINED)

    async def roots_changed(self) -> None:
        """Tell the server the working directories changed (roots/list_changed)."""
        session = self._session
        if session is not None:
            # The SDK marks roots deprecated for a later protocol version; 2025-11-25 has them.
            with contextlib.suppress(Exception), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                await session.send_roots_list_changed()

    async def refresh_tools(self) -> None:
        """List the tools again after the server said they changed."""
        session = self._session
        if session is None or not self.tools_stale:
            return
        self.tools_stale = False
        try:
            self.tools = await asyncio.wait_for(self._list(session), self.config.startup_timeout)
        except Exception as e:
            self._down(f"could not list its tools again: {_describe(e, self.config)}")

    def _down(self, what: str) -> str:
        self.status, self.reason = "down", self._why(what)
        self._session = None
        # Stop what is left of it now (a hung server holds a process); the next call restarts.
        asyncio.get_running_loop().create_task(self._stop_after_fault())
        return self.reason

    async def _stop_after_fault(self) -> None:
        assert self._lock is not None
        async with self._lock:
            if self.status == "down":
                await self._shutdown()

    # --- calls ---------------------------------------------------------------------------
    async def call(self, tool: str, arguments: JsonObject) -> CallOutcome:
        result = await self._request(
            lambda s: s.call_tool(tool, arguments, read_timeout_seconds=self.config.timeout), "tool result"
        )
        return CallOutcome(
            content=[c.model_dump(mode="json", by_alias=True, exclude_none=True) for c in result.content],
            structured=result.structured_content,
            is_error=bool(result.is_error),
        )

    async def list_resources(self) -> tuple[list[JsonObject], list[JsonObject]]:
        """The server's resources and resource templates (every page), as the server gave them."""
        resources = await self._all_pages("list_resources", "resources", "resource list")
        templates = await self._all_pages("list_resource_templates", "resource_templates", "template list")
        return resources, templates

    async def read_resource(self, uri: str) -> list[JsonObject]:
        """The contents of one resource: text or base64 blobs, each with its URI and type."""

        async def send(session: Any) -> Any:
            return await session.read_resource(uri)

        res = await self._request(send, "resource")
        return [c.model_dump(mode="json", by_alias=True, exclude_none=True) for c in res.contents]

    async def list_prompts(self) -> list[JsonObject]:
        return await self._all_pages("list_prompts", "prompts", "prompt list")

    async def _all_pages(self, method: str, items: str, what: str) -> list[JsonObject]:
        from mcp.types import PaginatedRequestParams

        out: list[JsonObject] = []
        cursor: str | None = None
        while True:
            params = PaginatedRequestParams(cursor=cursor) if cursor else None

            async def send(session: Any, params: Any = params) -> Any:
                return await getattr(session, method)(params=params)

            res = await self._request(send, what)
            out += [i.model_dump(mode="json", by_alias=True, exclude_none=True) for i in getattr(res, items)]
            cursor = res.next_cursor
            if not cursor:
                return out

    async def get_prompt(self, name: str, arguments: dict[str, str]) -> list[JsonObject]:
        """The prompt's messages: each {"role", "content"} with one MCP content block."""

        async def send(session: Any) -> Any:
            return await session.get_prompt(name, arguments)

        res = await self._request(send, "prompt")
        return [m.model_dump(mode="json", by_alias=True, exclude_none=True) for m in res.messages]

    async def _request(self, send: Callable[[Any], Awaitable[Any]], what: str) -> Any:
        """One request on the live session (started when needed), its failures as ServerDown
        (the server is gone or hung) or CallFailed (it answered with an error)."""
        from mcp.shared.exceptions import MCPError
        from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        await self.start()
        session = self._session
        if session is None:
            raise ServerDown(self.reason or "it stopped before the call could be sent.")
        try:
            return await send(session)
        except MCPError as e:
            if e.code == CONNECTION_CLOSED:
                raise ServerDown(self._down(self.fault or "exited during the call (its connection closed)")) from None
            if e.code == REQUEST_TIMEOUT:
                raise ServerDown(
                    self._down(
                        f"did not answer within {self.config.timeout:g} s (its 'timeout'); "
                        "the call was abandoned and the server stopped"
                    )
                ) from None
            raise CallFailed(f"the server answered with an error: {_cut(e.message)} (code {e.code})") from None
        except (asyncio.CancelledError, KeyboardInterrupt):
            raise
        except Exception as e:
            raise CallFailed(f"its answer is not a valid MCP {what} ({_cut(_describe(e, self.config))})") from None


@contextlib.asynccontextmanager
async def _http_transport(
    config: ServerConfig, authorize: McpAuthorize | None, receiver: Any, waiting: Callable[[bool], None]
) -> Any:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    from .oauth import build_auth

    timeout = httpx2.Timeout(min(30.0, config.startup_timeout), read=max(config.timeout, 30.0))
    # OAuth applies when the server asks for it (a 401); a configured Authorization header wins.
    has_header = any(k.lower() == "authorization" for k in config.headers)
    auth = None if has_header else await build_auth(config, authorize, receiver, waiting=waiting)
    async with (
        httpx2.AsyncClient(headers=dict(config.headers), timeout=timeout, auth=auth) as client,
        streamable_http_client(config.url, http_client=client) as streams,
    ):
        yield streams


MAX_ERROR_CHARS = 2000  # of a server's error text in a message: an error is not a result to spill


def _cut(text: str) -> str:
    if len(text) <= MAX_ERROR_CHARS:
        return text
    return f"{text[:MAX_ERROR_CHARS]}… ({len(text):,} characters in all)"


def _leaf(e: BaseException) -> BaseException:
    while isinstance(e, BaseExceptionGroup) and e.exceptions:
        e = e.exceptions[0]
    return e


def _describe(e: BaseException, config: ServerConfig) -> str:
    e = _leaf(e)
    if isinstance(e, TimeoutError):
        return f"it did not finish starting within {config.startup_timeout:g} s ('startupTimeout')"
    if isinstance(e, FileNotFoundError) and config.transport == "stdio":
        return f"the command {config.command!r} was not found (check 'command' and PATH)"
    if isinstance(e, PermissionError) and config.transport == "stdio":
        return f"the command {config.command!r} cannot be run ({e.strerror})"
    text = str(e) or type(e).__name__
    if "Connection closed" in text:
        return "it exited before answering"
    if type(e).__module__.startswith(("httpx", "httpcore")):
        return f"could not reach {config.url} ({type(e).__name__}: {text})"
    return f"{type(e).__name__}: {text}" if not isinstance(e, ServerDown) else text
