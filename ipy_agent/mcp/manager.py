"""The MCP servers of one agent: which start, their tools, their state, and closing them.

The agent calls `sync()` before each model request: project servers are approved once (the
agent's own approver shows the prompt), servers not yet running start in parallel, tool lists
a server said had changed are listed again, and what went wrong becomes notices for the
person. `tools()` then gives the current `McpTool`s for the registry. All sessions live on
one background loop (loop.py), so they survive across runs whatever loop runs the agent; they
end with `close()` (`%agent_reset`, `%unload_ext`) or at interpreter exit, child processes and
all.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import weakref
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar, cast

from ipy_agent.base.secrets import redact
from ipy_agent.contract.tool import PermissionPreview, Tool, maybe_await
from ipy_agent.history.blocks import JsonObject
from ipy_agent.permissions.decide import Approver, PermissionRequest, normalize_answer

from .config import McpAuthorize, ServerConfig, parse_servers
from .connection import CallOutcome, ServerConnection, ServerDown
from .elicitation import ElicitationAnswer, ElicitationRequest, normalize_elicitation, record_text
from .loop import BackgroundLoop
from .trust import TrustStore

__all__ = ["McpManager", "close_all"]

Notice = tuple[Literal["info", "warning", "error"], str]  # (level, text)
T = TypeVar("T")
_MANAGERS: weakref.WeakSet[McpManager] = weakref.WeakSet()


class McpManager:
    def __init__(
        self,
        cwd: str | Path,
        servers: Mapping[str, Any] | None = None,
        *,
        trust: TrustStore | None = None,
        authorize: McpAuthorize | None = None,
    ) -> None:
        self.cwd = Path(cwd)
        self.authorize = authorize  # Agent(mcp_authorize=...): OAuth without the link
        self._code = parse_servers(servers)
        self._files: dict[str, ServerConfig] = {}
        self._conns: dict[str, ServerConnection] = {}
        self._loop = BackgroundLoop()
        self._trust = trust or TrustStore()
        self._approved: set[tuple[str, str]] = set()  # (name, fingerprint) approved for this session
        self._declined: set[tuple[str, str]] = set()  # not started this session; said once
        self._tried: set[str] = set()  # failed servers already retried in this run
        self._reported: dict[str, str] = {}  # the last down reason told to the person
        self._built: dict[str, tuple[int, list[Tool], list[str]]] = {}
        self.skipped: dict[str, str] = {}  # tool -> why it is not offered (bad schema, name clash)
        self._scripts: tuple[Any, tuple[tuple[str, str], ...]] | None = None
        # Why an administrator's policy keeps a server from starting (config/policy.py), or None.
        self.blocked: Callable[[ServerConfig], str | None] = _never_blocked
        # Who answers a server's questions (elicitation), on which loop, and where the record goes:
        # set by each sync, so a question asked during a run reaches that run's approver.
        self._approver: Approver | None = None
        self._agent_loop: asyncio.AbstractEventLoop | None = None
        self._notify: Callable[[str, str], None] | None = None
        self.roots: tuple[Path, ...] = (self.cwd,)
        self._resource_tools: list[Tool] | None = None
        _MANAGERS.add(self)

    # --- configuration ---------------------------------------------------------------------
    @property
    def configs(self) -> dict[str, ServerConfig]:
        """The servers configured and not blocked by the managed policy."""
        every = {**self._files, **self._code}
        return {n: c for n, c in every.items() if self.blocked(c) is None}

    def policy_blocked(self) -> dict[str, str]:
        """Servers configured but kept from starting by the managed policy, with why."""
        every = {**self._files, **self._code}
        return {n: why for n, c in every.items() if (why := self.blocked(c)) is not None}

    def set_file_servers(self, servers: Mapping[str, ServerConfig]) -> None:
        """Servers from settings files (load_mcp_files), replacing the previous ones; servers
        given in code keep their name. A changed or removed server stops at the next sync."""
        self._files = dict(servers)

    @property
    def idle(self) -> bool:
        """No server configured and none left to stop: nothing to do before a request."""
        return not self.configs and not self._conns and not self._built

    def trust_state(self, cfg: ServerConfig) -> str:
        """'trusted' (code or user settings), 'approved' (this session), 'remembered', 'declined'
        or 'needs approval'."""
        if cfg.source != "project":
            return "trusted"
        key = (cfg.name, cfg.fingerprint(self.cwd))
        if key in self._approved:
            return "approved"
        if self._trust.is_trusted(self.cwd, cfg):
            return "remembered"
        return "declined" if key in self._declined else "needs approval"

    def protected_files(self) -> tuple[tuple[str, str], ...]:
        """(path, why) of the files in the project that configured servers run: writing one
        asks in every mode (`ToolContext.protected_files`), since the server runs it unasked."""
        configs = self.configs
        key = (id(self._files), id(self._code), tuple((n, c.command, c.args) for n, c in configs.items()))
        if self._scripts is None or self._scripts[0] != key:
            found = tuple(
                (path, f"the MCP server {name!r} runs it, so its code runs without a prompt")
                for name, cfg in configs.items()
                for path in cfg.script_files(self.cwd)
            )
            self._scripts = (key, found)
        return self._scripts[1]

    def connection(self, name: str) -> ServerConnection | None:
        return self._conns.get(name)

    def begin_run(self) -> None:
        """A new run: a server that failed to start gets one more try."""
        self._tried.clear()

    # --- before each model request -----------------------------------------------------------
    async def sync(
        self,
        approver: Approver | None,
        *,
        notify: Callable[[str, str], None] | None = None,
        roots: tuple[Path, ...] | None = None,
    ) -> list[Notice]:
        """`notify(text, question_id)` records a server's question and its answer; `roots` are the working
        directories advertised to servers (a change is notified to the running ones)."""
        notices: list[Notice] = []
        self._approver, self._notify = approver, notify
        self._agent_loop = asyncio.get_running_loop()
        if roots is not None and roots != self.roots:
            self.roots = roots
            up = [c for c in self._conns.values() if c.status == "up"]
            if up:
                await self._loop.run(_gather(*(c.roots_changed() for c in up)))
        configs = self.configs
        for name, why in self.policy_blocked().items():
            if self._reported.get(name) != why:
                self._reported[name] = why
                notices.append(("warning", f"{why}; it was not started."))
        # A changed configuration stops its server; so does a project server whose approval no
        # longer holds (a script it runs was edited since): it asks again before it restarts.
        stale = [
            n
            for n, c in self._conns.items()
            if configs.get(n) != c.config or self.trust_state(c.config) in ("needs approval", "declined")
        ]
        if stale:
            await self._loop.run(self._close(stale))
        wanted: list[ServerConfig] = []
        for name, cfg in configs.items():
            conn = self._conns.get(name)
            # A server that was up and went down keeps its tools; the next call restarts it.
            if conn is not None and (conn.status in ("up", "starting") or (conn.status == "down" and conn.tools)):
                continue
            if name in self._tried:
                continue
            if cfg.source == "project" and not await self._approve(cfg, approver, notices):
                continue
            wanted.append(cfg)
        for cfg in wanted:
            self._tried.add(cfg.name)
            self._conns.setdefault(cfg.name, self._connection(cfg))
        if wanted or any(c.tools_stale for c in self._conns.values()):
            await self._loop.run(self._start_and_refresh([c.name for c in wanted]))
        for name, conn in self._conns.items():
            if conn.status == "down" and self._reported.get(name) != conn.reason:
                self._reported[name] = conn.reason
                notices.append(("error", redact(f"MCP server {name!r} is down: it {conn.reason}")))
            elif conn.status == "up":
                self._reported.pop(name, None)
        return notices

    def _connection(self, cfg: ServerConfig) -> ServerConnection:
        return ServerConnection(cfg, self.cwd, self.authorize, ask=self._elicit, roots=lambda: self.roots)

    # --- a server's questions (elicitation) ----------------------------------------------------
    async def _elicit(self, request: ElicitationRequest) -> ElicitationAnswer:
        """On the background loop: ask the run's approver, on the run's own loop (a widget's
        prompt lives there), and record the question and the answer."""
        loop, approver, notify = self._agent_loop, self._approver, self._notify

        async def ask() -> ElicitationAnswer:
            if approver is None:
                answer = ElicitationAnswer(action="decline", note="no one can answer: this agent has no approver")
            elif getattr(approver, "interactive", True) is False:
                why = getattr(approver, "why", "no one can answer prompts")
                answer = ElicitationAnswer(action="decline", note=f"this run is non-interactive ({why})")
            else:
                try:
                    ask_person = cast(Callable[[ElicitationRequest], object], approver)
                    answer = normalize_elicitation(request, await maybe_await(ask_person(request)))
                except (asyncio.CancelledError, KeyboardInterrupt):
                    raise
                except Exception as e:
                    answer = ElicitationAnswer(action="decline", note=f"the form failed ({type(e).__name__}: {e})")
            if notify is not None:
                notify(record_text(request, answer), request.id)
            return answer

        if loop is None or loop.is_closed():
            return ElicitationAnswer(action="decline", note="no run is in progress to ask in")
        try:
            return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(ask(), loop))
        except RuntimeError as e:  # the run's loop ended meanwhile
            return ElicitationAnswer(action="decline", note=f"no run is in progress to ask in ({e})")

    async def _start_and_refresh(self, names: list[str]) -> None:
        async def one(conn: ServerConnection) -> None:
            with contextlib.suppress(ServerDown):  # recorded on the connection; sync reports it
                await conn.start()

        await asyncio.gather(*(one(self._conns[n]) for n in names))
        await asyncio.gather(*(c.refresh_tools() for c in self._conns.values() if c.tools_stale))

    async def _approve(self, cfg: ServerConfig, approver: Any, notices: list[Notice]) -> bool:
        key = (cfg.name, cfg.fingerprint(self.cwd))
        if key in self._approved or self._trust.is_trusted(self.cwd, cfg):
            return True
        if key in self._declined:
            return False
        answer = None
        if approver is not None:
            try:
                answer = normalize_answer(await maybe_await(approver(_trust_request(cfg, self.cwd))))
            except (asyncio.CancelledError, KeyboardInterrupt):
                raise
            except Exception as e:
                notices.append(
                    ("warning", f"The approval prompt for MCP server {cfg.name!r} failed ({type(e).__name__}: {e}).")
                )
        if answer is not None and answer.behavior in ("allow", "always"):
            self._approved.add(key)
            if answer.behavior == "always":
                try:
                    self._trust.remember(self.cwd, cfg)
                except OSError as e:
                    notices.append(
                        (
                            "warning",
                            f"Could not remember the approval of MCP server {cfg.name!r} "
                            f"in {self._trust.path} ({e}); it will ask again next session.",
                        )
                    )
            return True
        self._declined.add(key)
        if answer is not None and not answer.automatic:
            notices.append(
                (
                    "warning",
                    f"MCP server {cfg.name!r} ({cfg.origin}) was not started: you declined it. "
                    "It asks again in a new session, or when its configuration changes.",
                )
            )
        else:
            notices.append(
                (
                    "warning",
                    f"MCP server {cfg.name!r} from {cfg.origin} was not started: a project's "
                    "servers run only after you approve them once, and no one can answer a "
                    "prompt in this run. Run %agent interactively to approve it.",
                )
            )
        return False

    # --- tools -----------------------------------------------------------------------------
    def tools(self) -> list[Tool]:
        """The current MCP tools of every server that has listed them (up, or down since)."""
        from .tools import McpTool, schema_problem

        out: list[Tool] = []
        self.skipped = {}
        taken: set[str] = set()
        for name, conn in list(self._conns.items()):
            listing = conn.tools
            cached = self._built.get(name)
            if cached is None or cached[0] != id(listing):
                built: list[Tool] = []
                problems: list[str] = []
                for info in listing:
                    problem = schema_problem(info.input_schema)
                    if problem is None:
                        built.append(McpTool(server=name, origin=conn.config.origin, info=info, invoke=self._invoke))
                    else:
                        problems.append(f"mcp__{name}__{info.name}: {problem}")
                cached = self._built[name] = (id(listing), built, problems)
            for p in cached[2]:
                tool_, _, why = p.partition(": ")
                self.skipped[tool_] = why
            for tool in cached[1]:
                if tool.name in taken:
                    self.skipped[f"{tool.name} ({tool.info.name!r})"] = "another tool of this server has the same name"  # type: ignore[attr-defined]
                    continue
                taken.add(tool.name)
                out.append(tool)
        if self.resource_servers():
            from .resources import ListResourcesTool, ReadResourceTool

            if self._resource_tools is None:
                self._resource_tools = [ListResourcesTool(self._list_resources), ReadResourceTool(self._read_resource)]
            out += self._resource_tools
        return out

    # --- resources and prompts -----------------------------------------------------------------
    def resource_servers(self) -> list[str]:
        """Servers connected (or down since) that said they have resources."""
        return [n for n, c in self._conns.items() if c.has_resources and c.status in ("up", "down")]

    def prompt_servers(self) -> list[str]:
        return [n for n, c in self._conns.items() if c.has_prompts and c.status in ("up", "down")]

    def _resource_conn(self, server: str) -> ServerConnection:
        conn = self._conns.get(server)
        if conn is None or not conn.has_resources:
            raise KeyError(server)
        return conn

    async def _list_resources(self, server: str | None) -> dict[str, tuple[list[JsonObject], list[JsonObject]]]:
        names = [server] if server is not None else self.resource_servers()
        conns = [self._resource_conn(n) for n in names]
        found = await self._loop.run(_all(c.list_resources() for c in conns))
        return dict(zip(names, found, strict=True))

    async def _read_resource(self, server: str, uri: str) -> list[JsonObject]:
        return await self._loop.run(self._resource_conn(server).read_resource(uri))

    async def read_resource(self, server: str, uri: str) -> list[JsonObject]:
        """One resource's contents (an `@server:uri` in a prompt); KeyError: no such server."""
        return await self._read_resource(server, uri)

    async def list_prompts(self) -> dict[str, list[JsonObject]]:
        """Each server's prompts with their arguments; a server that fails is left out."""
        names = self.prompt_servers()

        async def one(name: str) -> list[JsonObject]:
            try:
                return await self._conns[name].list_prompts()
            except Exception:
                return []

        found = await self._loop.run(_all(one(n) for n in names))
        return dict(zip(names, found, strict=True))

    def prompt_listing(self, timeout: float = 30.0) -> dict[str, list[JsonObject]]:
        """`list_prompts`, from code that is not on an event loop (`%agent_mcp`)."""
        if not self.prompt_servers():
            return {}
        try:
            return self._loop.run_sync(self._list_prompts_here(), timeout=timeout)
        except Exception:
            return {}

    async def _list_prompts_here(self) -> dict[str, list[JsonObject]]:
        names = self.prompt_servers()
        found = await asyncio.gather(*(self._conns[n].list_prompts() for n in names), return_exceptions=True)
        return {n: f for n, f in zip(names, found, strict=True) if isinstance(f, list)}

    async def get_prompt(self, server: str, name: str, arguments: dict[str, str]) -> list[JsonObject]:
        conn = self._conns.get(server)
        if conn is None or not conn.has_prompts:
            raise KeyError(server)
        return await self._loop.run(conn.get_prompt(name, arguments))

    async def _invoke(self, server: str, tool: str, arguments: JsonObject) -> CallOutcome:
        conn = self._conns.get(server)
        if conn is None:
            cfg = self.configs.get(server)
            if cfg is None:
                raise ServerDown("is no longer configured.")
            conn = self._conns[server] = self._connection(cfg)
        return await self._loop.run(conn.call(tool, arguments))

    # --- what the model and the person are told ----------------------------------------------
    def prompt_section(self) -> str:
        """For the system prompt: each server's state, and its instructions when it has any."""
        if not self.configs:
            return ""
        lines = ["# MCP servers", "Tools named mcp__<server>__<tool> come from these MCP servers:"]
        for name, cfg in self.configs.items():
            conn = self._conns.get(name)
            if conn is None or conn.status == "stopped":
                lines.append(
                    f"- {name}: not started" + (" (it needs the person's approval)" if cfg.source == "project" else "")
                )
            elif conn.status == "down":
                lines.append(f"- {name}: DOWN, it {conn.reason[:1500]}")
            else:
                lines.append(f"- {name}: running, {len(conn.tools)} tools")
                if conn.instructions.strip():
                    lines.append(f"  Its instructions: {conn.instructions.strip()[:2000]}")
        # A server's error text (its stderr, a URL with a token in it) and instructions are the
        # server's words: no credential of the environment reaches the model through them.
        return redact("\n".join(lines))

    def logout(self, name: str) -> bool:
        """Forget a server's OAuth tokens and registration (`%agent_mcp logout NAME`) and stop it
        if it runs, so the next call authorizes again; whether there were tokens."""
        from .oauth import forget_tokens

        if self._loop.running and name in self._conns:
            with contextlib.suppress(Exception):
                self._loop.run_sync(self._close([name]), timeout=60)
        self._tried.discard(name)
        return forget_tokens(name)

    # --- closing ---------------------------------------------------------------------------
    async def _close(self, names: list[str]) -> None:
        conns = [self._conns.pop(n) for n in names if n in self._conns]
        for n in names:
            self._built.pop(n, None)
            self._reported.pop(n, None)
        await asyncio.gather(*(c.close() for c in conns), return_exceptions=True)

    def close(self) -> None:
        """Stop every server (their processes too) and the background loop. They start again
        at the next run that needs them. Safe to call more than once, from any thread but the
        background loop's."""
        if self._loop.running and self._conns:
            with contextlib.suppress(Exception):
                self._loop.run_sync(self._close(list(self._conns)), timeout=60)
        self._conns.clear()
        self._built.clear()
        self._tried.clear()
        self._reported.clear()
        self._loop.stop()

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)


def _trust_request(cfg: ServerConfig, project: Path) -> PermissionRequest:
    what: dict[str, object] = {"server": cfg.name, "from": cfg.origin, "type": cfg.transport}
    if cfg.transport == "stdio":
        what.update(command=cfg.command, args=list(cfg.args))
        if scripts := cfg.script_files(project):
            what["runs"] = [os.path.relpath(p, project) for p in scripts]
        if cfg.env:
            what["env"] = sorted(cfg.env)  # names only: values may be secrets
    else:
        what["url"] = cfg.url
        if cfg.headers:
            what["headers"] = sorted(cfg.headers)
    return PermissionRequest(
        tool_name=f"mcp__{cfg.name}",
        input=what,
        summary=f"from {cfg.origin}: start it?",
        suggested_rule=f"MCP server {cfg.name!r} in this project",
        tool_use_id=f"mcp-trust-{cfg.name}",
        reason=f"{cfg.origin} is part of the project; its servers start only once you approve them",
        preview=PermissionPreview(
            title=f"Start the MCP server {cfg.name!r} from {cfg.origin}?",
            command=cfg.describe() if cfg.transport == "stdio" else None,
            description=f"connects to {cfg.url}" if cfg.transport == "http" else None,
            notes=(
                "An MCP server from a project file runs as you, with your files and network; approve it "
                "only if you trust this project. Allow: this session; Always: remembered for this project.",
            ),
        ),
        display_name=f"MCP server {cfg.name}",
    )


def close_all() -> None:
    """Close every manager's servers (registered with atexit: a kernel shutdown leaves none)."""
    for manager in list(_MANAGERS):
        with contextlib.suppress(Exception):
            manager.close()


atexit.register(close_all)


async def _all(aws: Iterable[Awaitable[T]]) -> list[T]:
    return list(await asyncio.gather(*aws))


async def _gather(*aws: Any) -> None:
    await asyncio.gather(*aws, return_exceptions=True)


def _never_blocked(cfg: ServerConfig) -> str | None:
    return None
