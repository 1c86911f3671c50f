"""The gateway's HTTP service: authenticate, check the policy and the budget, forward, count.

`POST {prefix}/v1/messages` (and `/v1/messages/count_tokens`) are forwarded byte for byte, with
the real key put in place of the person's token; a stream is passed on chunk by chunk as it
comes, and read on the way for its usage (`message_start`, `message_delta`), so prompt caching,
thinking and tool use need nothing of their own here.

Refusals are HTTP errors with a JSON body in the API's error format, so the agent shows them: a
model the managed policy does not list (`availableModels`, config/policy.py) gets 403
`permission_error` naming the model and the allowed patterns; a person who has reached a budget
gets 429 `budget_exceeded_error` (with `x-should-retry: false`, so the SDK does not retry it, and
`retry-after` until a daily budget resets) whose body names the limit, what was spent, the cap
and when it resets (`error.limit`, `error.spent_usd`, `error.limit_usd`, `error.resets_at`). The
agent ends its run with `stop_reason="budget_exceeded"` and shows the message.

A request in flight holds the most it can cost (its input at about three bytes a token, its
`max_tokens` of output, at the model's list price) until its usage is counted, and the budget
check adds what is held to what was spent. So one person's concurrent requests cannot each pass
the check on the same spending and together run far past the limit: like the agent's own
budget, a request is let through while the person is under it, and only the one running when
the limit is crossed can end past it. The holds live in the store (usage.py), checked and
inserted in one transaction, so replicas on one database share them; each is renewed while its
response runs and stops counting after `--hold-seconds` if its replica dies.

A response is charged its reported usage only when that usage arrived whole: a stream's
`message_delta` (its final usage), a non-streamed body that parses with its usage. A response
that ends without it (the client hung up mid-stream, the upstream connection was cut, a body
cut short, an error event in the stream) is charged the whole hold, so hanging up early never
pays less than finishing. An error status from the API is not billed and is charged nothing.

`GET {prefix}/health` and `/metrics` (metrics.py) are for the administrator's probes and
Prometheus; every request to the API's paths and `/usage` is one line on the gateway's logger
(logs.py), written by tornado's `log_function` once its charge is known.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar, TypeVarTuple

import httpx
import tornado.httpserver
import tornado.iostream
import tornado.netutil
import tornado.web
from tornado.http1connection import HTTP1Connection

from ipy_agent.config.policy import Policy, PolicyViolation
from ipy_agent.history.blocks import JsonObject, JsonValue
from ipy_agent.models.base import Usage
from ipy_agent.models.pricing import estimate_cost

from .auth import Authenticator
from .charges import (
    BudgetRefusal,
    Charge,
    Hold,
    Limits,
    SseUsage,
    charge_of,
    max_tokens_of,
    strictest,
    usage_of,
)
from .in_flight import InFlight
from .logs import RequestRecord, log_request
from .metrics import CONTENT_TYPE, Metrics
from .policy_files import PolicyFiles
from .upstream_pool import UpstreamPool
from .usage import UsageDB

__all__ = ["Gateway"]

# Headers passed on to the API; the key is the gateway's own.
_T = TypeVar("_T")
_Args = TypeVarTuple("_Args")

_FORWARD = ("anthropic-version", "anthropic-beta", "content-type", "accept", "x-stainless-helper-method")
_BACK = ("content-type", "request-id", "retry-after", "x-should-retry", "anthropic-ratelimit-requests-remaining")


class Gateway:
    """The service: `app()` for tornado; `serve(host, port)` runs it; `start_in_thread()` for tests."""

    def __init__(
        self,
        *,
        api_key: str,
        auth: Authenticator,
        db: UsageDB,
        limits: Limits | None = None,
        upstream: str = "",
        policy: Policy | None = None,
        policy_paths: Sequence[Path] | None = None,
    ) -> None:
        """`policy`: the managed policy in force; or `policy_paths`, its files, read again when they change."""
        if not api_key:
            raise ValueError("the gateway needs the real API key: set ANTHROPIC_API_KEY in its environment")
        self.api_key = api_key
        self.auth = auth
        self.db = db
        self.policy_files = PolicyFiles(policy_paths) if policy_paths is not None else None
        self.policy = self.policy_files.policy if self.policy_files else policy or Policy()
        self.command_limits = limits or Limits()
        self.limits = strictest(self.command_limits, self.policy)
        self.metrics = Metrics()
        self.in_flight = InFlight()
        self.upstream = (upstream or "https://api.anthropic.com").rstrip("/")
        self.upstream_pool = UpstreamPool()
        self.ended = 0  # responses settled (charged or not), for whoever waits on `settled`
        self.settled = threading.Condition()
        # The store's calls block (a transaction, a disk commit, a person's lock): they run here,
        # never on the event loop, which only passes bytes.
        self.store_threads = ThreadPoolExecutor(
            max_workers=_STORE_THREADS if db.postgres else 1, thread_name_prefix="ipy-agent-gateway-store"
        )

    async def in_store_thread(self, call: Callable[[*_Args], _T], *args: *_Args) -> _T:
        """`call(*args)` on one of the store's threads, awaited without blocking the event loop."""
        return await asyncio.get_running_loop().run_in_executor(self.store_threads, call, *args)

    def app(self) -> tornado.web.Application:
        return tornado.web.Application(
            [
                (r".*/v1/messages(/count_tokens)?", MessagesHandler),
                (r".*/usage", UsageHandler),
                (r".*/health", HealthHandler),
                (r".*/metrics", MetricsHandler),
            ],
            gateway=self,
            log_function=self.observe,
        )

    def observe(self, handler: tornado.web.RequestHandler) -> None:
        """A request has been answered: its log line and its counts (tornado's `log_function`)."""
        if not isinstance(handler, _Base) or (record := handler.record) is None:
            return  # /health and /metrics are neither logged nor counted
        if handler.charge_pending or handler.observed:
            return  # a response's line waits for its charge, after its last byte
        handler.observed = True
        record.status = handler.get_status()
        record.latency_ms = handler.request.request_time() * 1000
        self.metrics.count(record)
        log_request(record)

    def policy_unreadable(self) -> str | None:
        """Read the policy files again if they changed; why they cannot be read, or None."""
        if self.policy_files is None or self.policy_files.refresh():
            if self.policy_files is not None and self.policy is not self.policy_files.policy:
                self.policy = self.policy_files.policy
                self.limits = strictest(self.command_limits, self.policy)
            return None
        return self.policy_files.error

    async def aclose(self) -> None:
        await self.upstream_pool.aclose()
        await asyncio.to_thread(self.store_threads.shutdown, True)  # the charges still being written are written

    def model_refused(self, model: str) -> str | None:
        """Why the managed policy does not let `model` through (its availableModels), or None."""
        try:
            self.policy.check_model(model, "the key gateway")
        except PolicyViolation as e:
            return str(e)
        return None

    def hold(self, user: str, body: bytes, request: JsonObject) -> Hold | BudgetRefusal:
        """Hold the most the request (`body`, parsed: `request`) can cost for `user`, or refuse
        `user` at a limit: checked and held in one transaction of the store (end it: settle, release)."""
        most = Usage(input_tokens=len(body) // 3 + 1, output_tokens=max_tokens_of(request))
        model = str(request.get("model") or "")
        usd = estimate_cost(model, most)
        held = self.db.hold(user, usd, self.limits)
        if isinstance(held, BudgetRefusal):
            return held
        return Hold(id=held, model=model, input_tokens=most.input_tokens, output_tokens=most.output_tokens, usd=usd)

    async def keep_holding(self, hold: Hold) -> None:
        """Renew `hold` while its response runs, three times in each of its expiry periods."""
        while True:
            await asyncio.sleep(self.db.hold_seconds / 3)
            await self.in_store_thread(self.db.renew, hold.id)

    def release(self, hold: Hold) -> None:
        """The API answered with an error: the hold goes, nothing is charged."""
        self.db.release(hold.id)

    def settle(self, user: str, hold: Hold, usage: SseUsage) -> None:
        """A response has ended: its reported usage when it came whole, else the whole hold."""
        if usage.final:
            self.count(user, usage.model or hold.model, usage.tokens, hold)
        else:
            tokens = {"input_tokens": hold.input_tokens, "output_tokens": hold.output_tokens}
            self.db.settle(hold.id, user, usage.model or hold.model, tokens, hold.usd)

    def count(self, user: str, model: str, tokens: dict[str, int], hold: Hold | None = None) -> None:
        """Charge `tokens` of `model` to `user`, in place of `hold` when there is one."""
        usd = estimate_cost(model, usage_of(tokens))
        if hold is not None:
            if tokens:
                self.db.settle(hold.id, user, model, tokens, usd)
            else:
                self.db.release(hold.id)
        elif tokens:
            self.db.add(user, model, tokens, usd)

    def ended_one(self) -> None:
        with self.settled:
            self.ended += 1
            self.settled.notify_all()

    def wait_ended(self, count: int, timeout: float) -> bool:
        """Whether `count` responses have been settled within `timeout` seconds (for tests)."""
        with self.settled:
            return self.settled.wait_for(lambda: self.ended >= count, timeout)

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


# The store's calls at once per replica, a transaction each. SQLite writes one transaction at a
# time: threads of one process waiting on its lock would sleep in its busy handler's back-off
# (up to 100 ms a try), so a SQLite store gets one thread, which takes them in turn.
_STORE_THREADS = 8

_REASONS = {"authentication_error": "auth", "permission_error": "model", "invalid_request_error": "bad_request"}


class _Base(tornado.web.RequestHandler):
    record: RequestRecord | None = None
    charge_pending = False  # a hold is taken and not yet settled
    observed = False

    @property
    def gateway(self) -> Gateway:
        gw: Gateway = self.settings["gateway"]
        return gw

    def refuse(self, status: int, kind: str, message: str, *, reason: str | None = None) -> None:
        if self.record is not None:
            self.record.refusal = reason or _REASONS.get(kind)
        self.set_status(status)
        self.set_header("content-type", "application/json")
        self.finish(json.dumps({"type": "error", "error": {"type": kind, "message": message}}))

    async def who(self) -> str | None:
        """The person behind the request's token, or None after refusing it."""
        headers = self.request.headers
        token = headers.get("x-api-key", "") or headers.get("authorization", "").removeprefix("Bearer ").strip()
        user = await self.gateway.auth.user(token) if token else None
        if self.record is not None:
            self.record.user = user
        if user is None:
            self.refuse(
                401,
                "authentication_error",
                "the key gateway does not know this token: in a JupyterHub session it is JUPYTERHUB_API_TOKEN "
                "(restart the server if it changed); elsewhere ask the administrator for one",
            )
        return user


class _RepeatedKey(ValueError):
    pass


def _once_each(pairs: list[tuple[str, JsonValue]]) -> JsonObject:
    """A JSON object whose keys are all different. The body is forwarded byte for byte, and a
    parser that keeps the first of two `model` (or `max_tokens`) keys would run what this
    gateway, which keeps the last, did not judge or hold for."""
    out: JsonObject = {}
    for key, value in pairs:
        if key in out:
            raise _RepeatedKey(
                f"the request gives {key!r} more than once; the key gateway refuses a request it cannot read one way"
            )
        out[key] = value
    return out


class MessagesHandler(_Base):
    client_gone = False
    cut = False  # the API's connection broke mid-response
    copying: asyncio.Task[None] | None = None

    def on_connection_close(self) -> None:
        # The kernel hung up: stop reading the API's response now, not at its next chunk.
        self.client_gone = True
        if self.copying is not None:
            self.copying.cancel()

    def prepare(self) -> None:
        gw = self.gateway
        gw.in_flight.track()
        self.record = RequestRecord(path=self.request.path.rsplit("/v1/", 1)[-1])
        if gw.in_flight.draining:  # a request on a kept-alive connection while the gateway stops
            self.set_header("x-should-retry", "true")
            self.refuse(503, "overloaded_error", "the key gateway is stopping; try again", reason="stopping")

    async def post(self, count_tokens: str | None = None) -> None:
        user = await self.who()
        if user is None:
            return
        gw = self.gateway
        try:
            request = json.loads(self.request.body or b"{}", object_pairs_hook=_once_each)
        except _RepeatedKey as e:
            self.refuse(400, "invalid_request_error", str(e))
            return
        except ValueError:
            request = {}
        request = request if isinstance(request, dict) else {}
        if self.record is not None:
            self.record.model = str(request.get("model") or "")
        if (unreadable := gw.policy_unreadable()) is not None:  # fail closed, as the kernels do
            message = f"the key gateway cannot read its managed policy: {unreadable}"
            self.refuse(503, "api_error", message, reason="policy_unreadable")
            return
        if (refused := gw.model_refused(str(request.get("model") or ""))) is not None:
            self.refuse(403, "permission_error", refused)
            return
        if count_tokens is not None:  # counting generates nothing and costs nothing
            await self._forward(gw, count_tokens, SseUsage())
            self._end_response()
            return
        # Checked and held in one transaction: every replica on the store sees the hold.
        hold = await gw.in_store_thread(gw.hold, user, self.request.body, request)
        if isinstance(hold, BudgetRefusal):
            self.refuse_budget(hold)
            return
        gw.metrics.holds_open += 1
        self.charge_pending = True
        usage, billed = SseUsage(), True  # billed until the API is known to have answered with an error
        renewing = asyncio.ensure_future(gw.keep_holding(hold))
        try:
            billed = await self._forward(gw, None, usage)
        finally:
            renewing.cancel()
            # Its own task, so that a second cancellation (a hurried shutdown) cannot skip the charge.
            ending = asyncio.ensure_future(self._end(user, hold, usage, billed))
            await asyncio.shield(ending)
        self._end_response()  # only now: a response that has ended has been charged

    def _end_response(self) -> None:
        """End the response: closed when it was cut (by the API or the kernel), else finished."""
        if (self.cut or self.client_gone) and isinstance(self.request.connection, HTTP1Connection):
            self.request.connection.close()
        elif not self._finished:
            self.finish()

    async def _end(self, user: str, hold: Hold, usage: SseUsage, billed: bool) -> None:
        """Charge the ended response (or release its hold) on a store thread, then log and count it."""
        gw = self.gateway
        try:
            if billed:
                await gw.in_store_thread(gw.settle, user, hold, usage)
            else:
                await gw.in_store_thread(gw.release, hold)
        finally:
            gw.metrics.holds_open -= 1
            self._charged(charge_of(hold, usage, billed=billed))
            gw.ended_one()

    def _charged(self, charge: Charge) -> None:
        self.charge_pending = False
        if self.record is not None:
            self.record.model, self.record.tokens = charge.model, charge.tokens
            self.record.usd, self.record.charged = charge.usd, charge.how
        self.gateway.observe(self)

    def refuse_budget(self, over: BudgetRefusal) -> None:
        if self.record is not None:
            self.record.refusal = f"budget_{over.limit}"
        self.set_status(429)
        self.set_header("content-type", "application/json")
        self.set_header("x-should-retry", "false")  # the SDK would retry a 429
        if over.resets_at is not None:
            wait = over.resets_at - dt.datetime.now(dt.UTC)
            self.set_header("retry-after", str(max(1, int(wait.total_seconds()))))
        self.finish(json.dumps(over.body()))

    async def _forward(self, gw: Gateway, count_tokens: str | None, usage: SseUsage) -> bool:
        """Pass the request on and the response back, all but its end (`_end_response`); whether
        the API answered it with 200 (billed)."""
        headers = {k: v for k in _FORWARD if (v := self.request.headers.get(k)) is not None}
        headers["x-api-key"] = gw.api_key
        url = f"{gw.upstream}/v1/messages{count_tokens or ''}"
        pool = gw.upstream_pool
        taken = pool.take()
        try:
            return await self._forward_on(pool.clients[taken], url, headers, usage)
        finally:
            pool.give_back(taken)

    async def _forward_on(self, client: httpx.AsyncClient, url: str, headers: dict[str, str], usage: SseUsage) -> bool:
        request = client.build_request("POST", url, content=self.request.body, headers=headers)
        sent = time.perf_counter()
        try:
            response = await client.send(request, stream=True)
        except httpx.HTTPError as e:
            self.refuse(502, "api_error", f"the key gateway could not reach the API: {e}")
            return False
        if self.record is not None:
            self.record.upstream_ttfb_ms = (time.perf_counter() - sent) * 1000
        cut = False
        try:
            self.set_status(response.status_code)
            for k in _BACK:
                if (v := response.headers.get(k)) is not None:
                    self.set_header(k, v)
            if not self.client_gone:  # a kernel gone before the answer came gets none of it
                self.copying = asyncio.ensure_future(self._copy(response, usage))
                await self.copying
        except (tornado.iostream.StreamClosedError, asyncio.CancelledError):
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise  # the gateway itself is stopping
            # The kernel went away (an interrupt): charged the hold unless the usage came whole.
        except httpx.HTTPError:
            cut = True  # the API's connection broke mid-response: the kernel must see it broken too
        finally:
            await response.aclose()
        self.cut = cut
        return response.status_code == 200

    async def _copy(self, response: httpx.Response, usage: SseUsage) -> None:
        """The API's response to the kernel, chunk by chunk, read on the way for its usage."""
        streaming = response.headers.get("content-type", "").startswith("text/event-stream")
        body = b""
        async for chunk in response.aiter_bytes():
            if streaming:
                usage.feed(chunk)
            else:
                body += chunk
            self.write(chunk)
            await self.flush()  # each event reaches the kernel as it comes
        if not streaming:
            usage.read_body(body)


class UsageHandler(_Base):
    def prepare(self) -> None:
        self.record = RequestRecord(path="usage")

    async def get(self) -> None:
        """The caller's own spending: {"user", "today_usd", "total_usd", "limits"}."""
        user = await self.who()
        if user is None:
            return
        day, total = await self.gateway.in_store_thread(self.gateway.db.spent, user)
        limits = self.gateway.limits
        self.finish(
            {
                "user": user,
                "today_usd": day,
                "total_usd": total,
                "limits": {"per_day_usd": limits.per_day, "per_user_usd": limits.per_user},
            }
        )


class HealthHandler(_Base):
    async def get(self) -> None:
        """200 {"ok": true, "store": "reachable"} while the gateway serves and its store answers; else 503."""
        store = "reachable"
        try:
            await self.gateway.in_store_thread(self.gateway.db.ping)
        except Exception:
            store = "unreachable"
        stopping = self.gateway.in_flight.draining
        ok = store == "reachable" and not stopping
        self.set_status(200 if ok else 503)
        self.finish({"ok": ok, "store": store, "stopping": stopping})


class MetricsHandler(_Base):
    def get(self) -> None:
        """The counters of metrics.py in Prometheus's text format."""
        self.set_header("content-type", CONTENT_TYPE)
        self.finish(self.gateway.metrics.render())
