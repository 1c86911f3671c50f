"""The gateway's HTTP service: authenticate, check the budget, forward to the Messages API, count.

`POST {prefix}/v1/messages` (and `/v1/messages/count_tokens`) are forwarded byte for byte, with
the real key put in place of the person's token; a stream is passed on chunk by chunk as it
comes, and read on the way for its usage (`message_start`, `message_delta`), so prompt caching,
thinking and tool use need nothing of their own here. A request from someone who has reached a
budget gets HTTP 402 with an error of type `budget_exceeded_error` that says what was spent and
what the limit is; the agent ends its run with `stop_reason="budget_exceeded"` and shows it.

A request in flight holds the most it can cost (its input at about three bytes a token, its
`max_tokens` of output, at the model's list price) until its usage is counted, and the budget
check adds what is held to what was spent. So one person's concurrent requests cannot each pass
the check on the same spending and together run far past the limit: like the agent's own
budget, a request is let through while the person is under it, and only the one running when
the limit is crossed can end past it. The holds live in this process (one gateway per Hub).
"""

from __future__ import annotations

import asyncio
import json
import threading
from dataclasses import dataclass
from typing import Any

import httpx
import tornado.httpserver
import tornado.iostream
import tornado.netutil
import tornado.web

from ipy_agent.models.base import Usage
from ipy_agent.models.pricing import estimate_cost

from .auth import Authenticator
from .usage import UsageDB

__all__ = ["Gateway", "Limits", "SseUsage"]

# Headers passed on to the API; the key is the gateway's own.
_FORWARD = ("anthropic-version", "anthropic-beta", "content-type", "accept", "x-stainless-helper-method")
_BACK = ("content-type", "request-id", "retry-after", "x-should-retry", "anthropic-ratelimit-requests-remaining")
_TOKENS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


@dataclass(frozen=True, kw_only=True)
class Limits:
    """Budgets per person in US dollars: per day and in all (None: no limit)."""

    per_day: float | None = None
    per_user: float | None = None


class SseUsage:
    """Reads a Messages API event stream as it passes, for the model and its usage."""

    def __init__(self) -> None:
        self._buffer = b""
        self.model = ""
        self.tokens: dict[str, int] = {}

    def feed(self, chunk: bytes) -> None:
        self._buffer += chunk
        while b"\n\n" in self._buffer:
            event, self._buffer = self._buffer.split(b"\n\n", 1)
            for line in event.split(b"\n"):
                if line.startswith(b"data:"):
                    self._take(line[5:].strip())

    def _take(self, data: bytes) -> None:
        try:
            payload = json.loads(data)
        except ValueError:
            return
        if payload.get("type") == "message_start":
            message = payload.get("message") or {}
            self.model = str(message.get("model") or "")
            self.read(message.get("usage") or {})
        elif payload.get("type") == "message_delta":
            self.read(payload.get("usage") or {})

    def read(self, usage: dict[str, Any]) -> None:
        for key in _TOKENS:
            if isinstance(usage.get(key), int):
                self.tokens[key] = usage[key]  # message_delta's counts are cumulative


class Gateway:
    """The service: `app()` for tornado; `serve(host, port)` runs it; `start_in_thread()` for tests."""

    def __init__(
        self, *, api_key: str, auth: Authenticator, db: UsageDB, limits: Limits = Limits(), upstream: str = ""
    ) -> None:
        if not api_key:
            raise ValueError("the gateway needs the real API key: set ANTHROPIC_API_KEY in its environment")
        self.api_key = api_key
        self.auth = auth
        self.db = db
        self.limits = limits
        self.upstream = (upstream or "https://api.anthropic.com").rstrip("/")
        self.client: httpx.AsyncClient | None = None
        self.held: dict[str, float] = {}  # person -> US dollars held by their requests in flight

    def app(self) -> tornado.web.Application:
        return tornado.web.Application(
            [(r".*/v1/messages(/count_tokens)?", MessagesHandler), (r".*/usage", UsageHandler)], gateway=self
        )

    def over_budget(self, user: str) -> str | None:
        day, total = self.db.spent(user)
        held = self.held.get(user, 0.0)
        busy = f" (and ${held:.4f} is held by requests still running)" if held else ""
        if self.limits.per_day is not None and day + held >= self.limits.per_day:
            return (
                f"{user} has spent ${day:.4f} today{busy} of a ${self.limits.per_day:.2f} daily budget; "
                "it resets at 00:00 UTC."
            )
        if self.limits.per_user is not None and total + held >= self.limits.per_user:
            return (
                f"{user} has spent ${total:.4f}{busy} of a ${self.limits.per_user:.2f} budget in all; "
                "ask the administrator for more."
            )
        return None

    def hold(self, user: str, body: bytes) -> float:
        """Hold the most the request `body` can cost for `user`; returns the amount (release it)."""
        try:
            request = json.loads(body or b"{}")
        except ValueError:
            request = {}
        request = request if isinstance(request, dict) else {}
        most = Usage(input_tokens=len(body) // 3 + 1, output_tokens=int(request.get("max_tokens") or 0))
        usd = estimate_cost(str(request.get("model") or ""), most)
        self.held[user] = self.held.get(user, 0.0) + usd
        return usd

    def release(self, user: str, usd: float) -> None:
        left = self.held.get(user, 0.0) - usd
        if left > 1e-12:
            self.held[user] = left
        else:
            self.held.pop(user, None)

    def count(self, user: str, model: str, tokens: dict[str, int]) -> None:
        if not tokens:
            return
        usd = estimate_cost(model, Usage(**{k: tokens.get(k, 0) for k in _TOKENS}))
        self.db.add(user, model, tokens, usd)

    def http(self) -> httpx.AsyncClient:
        if self.client is None:
            self.client = httpx.AsyncClient(timeout=httpx.Timeout(600, connect=10))
        return self.client

    def start_in_thread(self, host: str = "127.0.0.1") -> tuple[str, threading.Thread, asyncio.AbstractEventLoop]:
        """Serve on a free port in a thread of its own; returns its URL, the thread and its loop."""
        sockets = tornado.netutil.bind_sockets(0, host)
        port = sockets[0].getsockname()[1]
        loop = asyncio.new_event_loop()
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(loop)
            server = tornado.httpserver.HTTPServer(self.app())
            server.add_sockets(sockets)
            ready.set()
            loop.run_forever()

        thread = threading.Thread(target=run, daemon=True, name="ipy-agent-gateway")
        thread.start()
        ready.wait(10)
        return f"http://{host}:{port}", thread, loop


class _Base(tornado.web.RequestHandler):
    @property
    def gateway(self) -> Gateway:
        gw: Gateway = self.settings["gateway"]
        return gw

    def refuse(self, status: int, kind: str, message: str) -> None:
        self.set_status(status)
        self.set_header("content-type", "application/json")
        self.finish(json.dumps({"type": "error", "error": {"type": kind, "message": message}}))

    async def who(self) -> str | None:
        """The person behind the request's token, or None after refusing it."""
        headers = self.request.headers
        token = headers.get("x-api-key", "") or headers.get("authorization", "").removeprefix("Bearer ").strip()
        user = await self.gateway.auth.user(token) if token else None
        if user is None:
            self.refuse(
                401,
                "authentication_error",
                "the key gateway does not know this token: in a JupyterHub session it is JUPYTERHUB_API_TOKEN "
                "(restart the server if it changed); elsewhere ask the administrator for one",
            )
        return user


class MessagesHandler(_Base):
    async def post(self, count_tokens: str | None = None) -> None:
        user = await self.who()
        if user is None:
            return
        gw = self.gateway
        if count_tokens is None and (why := gw.over_budget(user)) is not None:
            self.refuse(402, "budget_exceeded_error", why)
            return
        # Checked and held with no await between: the next request of this person sees the hold.
        held = gw.hold(user, self.request.body) if count_tokens is None else 0.0
        try:
            await self._forward(gw, user, count_tokens)
        finally:
            gw.release(user, held)

    async def _forward(self, gw: Gateway, user: str, count_tokens: str | None) -> None:
        headers = {k: v for k in _FORWARD if (v := self.request.headers.get(k)) is not None}
        headers["x-api-key"] = gw.api_key
        url = f"{gw.upstream}/v1/messages{count_tokens or ''}"
        request = gw.http().build_request("POST", url, content=self.request.body, headers=headers)
        usage = SseUsage()
        try:
            response = await gw.http().send(request, stream=True)
        except httpx.HTTPError as e:
            self.refuse(502, "api_error", f"the key gateway could not reach the API: {e}")
            return
        try:
            self.set_status(response.status_code)
            for k in _BACK:
                if (v := response.headers.get(k)) is not None:
                    self.set_header(k, v)
            streaming = response.headers.get("content-type", "").startswith("text/event-stream")
            body = b""
            async for chunk in response.aiter_bytes():
                self.write(chunk)
                await self.flush()  # each event reaches the kernel as it comes
                if streaming:
                    usage.feed(chunk)
                else:
                    body += chunk
            if not streaming and count_tokens is None and response.status_code == 200:
                message = json.loads(body or b"{}")
                usage.model = str(message.get("model") or "")
                usage.read(message.get("usage") or {})
        except tornado.iostream.StreamClosedError:
            pass  # the kernel went away (an interrupt): what was streamed so far is still counted
        finally:
            await response.aclose()
            gw.count(user, usage.model, usage.tokens)
        if not self._finished:
            self.finish()


class UsageHandler(_Base):
    async def get(self) -> None:
        """The caller's own spending: {"user", "today_usd", "total_usd", "limits"}."""
        user = await self.who()
        if user is None:
            return
        day, total = self.gateway.db.spent(user)
        limits = self.gateway.limits
        self.finish(
            {
                "user": user,
                "today_usd": day,
                "total_usd": total,
                "limits": {"per_day_usd": limits.per_day, "per_user_usd": limits.per_user},
            }
        )
