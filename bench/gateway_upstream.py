"""A stand-in Messages API for the gateway's load bench, in a process of its own, that keeps its own bill.

    python -m bench.gateway_upstream        # prints "port N" once it listens on 127.0.0.1

`POST /v1/messages` answers every request with a stream in the API's SSE format: `message_start`
(with the input usage: fresh, cache-read and cache-written tokens), a text block in
`content_block_delta`s, `message_delta` (the final output usage) and `message_stop`, written in
six chunks over 0.5 s (the first at once). The token counts are drawn per request from the
person's name and their request number, so they differ from request to request.

The upstream cannot know who is behind the gateway's key: each request names its person in
`metadata.user_id` (a field of the real API, forwarded in the body as it is). Once a stream's
final usage is written, the request is billed to that person at list prices of this file's own
(exact, in `Decimal`): `GET /bench/stats` returns every person's requests, tokens and dollars,
and how many streams are open. `POST /bench/hold` makes new streams stop after their first
chunk until `POST /bench/release` (to hold many streams open at once); `POST /bench/reset`
forgets the bill.
"""

from __future__ import annotations

import asyncio
import json
import random
import socket
import sys
import uuid
from collections import defaultdict
from decimal import Decimal

import tornado.httpserver
import tornado.iostream
import tornado.netutil
import tornado.web

__all__ = ["MODEL", "PRICES", "cost", "main"]

MODEL = "claude-sonnet-4-5"
# US dollars per million tokens: input, output; cache writes 1.25x and cache reads 0.1x the input.
PRICES: dict[str, tuple[Decimal, Decimal]] = {MODEL: (Decimal(3), Decimal(15))}
ANSWER_S = 0.5
CHUNKS = 6  # the first at once, the last at ANSWER_S
_TOKENS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


def cost(model: str, usage: dict[str, int]) -> Decimal:
    """What `usage` costs at this file's list prices, exactly."""
    inp, out = PRICES[model]
    micro = (
        inp * usage["input_tokens"]
        + out * usage["output_tokens"]
        + inp * Decimal("0.1") * usage["cache_read_input_tokens"]
        + inp * Decimal("1.25") * usage["cache_creation_input_tokens"]
    )
    return micro / Decimal(1_000_000)


def _usage_for(user: str, number: int, max_tokens: int) -> dict[str, int]:
    rng = random.Random(f"{user}:{number}")
    return {
        "input_tokens": rng.randint(50, 3000),
        "cache_read_input_tokens": rng.choice((0, rng.randint(1000, 30000))),
        "cache_creation_input_tokens": rng.choice((0, rng.randint(100, 4000))),
        "output_tokens": rng.randint(20, max(20, min(max_tokens, 900))),
    }


def _event(name: str, data: dict[str, object]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


class Upstream:
    def __init__(self) -> None:
        self.bill: dict[str, dict[str, Decimal | int]] = defaultdict(
            lambda: {"requests": 0, "usd": Decimal(0), "max_usd": Decimal(0), **dict.fromkeys(_TOKENS, 0)}
        )
        self.numbers: dict[str, int] = defaultdict(int)
        self.open = 0
        self.released = asyncio.Event()
        self.released.set()

    def charge(self, user: str, model: str, usage: dict[str, int]) -> None:
        line = self.bill[user]
        line["requests"] = int(line["requests"]) + 1
        usd = cost(model, usage)
        line["usd"] = Decimal(line["usd"]) + usd
        line["max_usd"] = max(Decimal(line["max_usd"]), usd)
        for key in _TOKENS:
            line[key] = int(line[key]) + usage[key]

    def stats(self) -> dict[str, object]:
        users = {
            u: {k: (str(v) if isinstance(v, Decimal) else v) for k, v in line.items()} for u, line in self.bill.items()
        }
        return {"users": users, "open": self.open}


class _Handler(tornado.web.RequestHandler):
    @property
    def upstream(self) -> Upstream:
        up: Upstream = self.settings["upstream"]
        return up


class MessagesHandler(_Handler):
    async def post(self) -> None:
        up = self.upstream
        if not self.request.headers.get("x-api-key"):
            self.set_status(401)
            self.finish({"type": "error", "error": {"type": "authentication_error", "message": "no key"}})
            return
        body = json.loads(self.request.body)
        user = str((body.get("metadata") or {}).get("user_id") or "anonymous")
        model = str(body.get("model") or MODEL)
        if model not in PRICES:
            self.set_status(404)
            self.finish({"type": "error", "error": {"type": "not_found_error", "message": f"model: {model}"}})
            return
        up.numbers[user] += 1
        usage = _usage_for(user, up.numbers[user], int(body.get("max_tokens") or 1024))
        message_id = f"msg_{uuid.uuid4().hex[:24]}"
        self.set_header("content-type", "text/event-stream")
        self.set_header("request-id", f"req_{uuid.uuid4().hex[:24]}")
        words = [f"word{i} " for i in range(usage["output_tokens"] // 4 + 1)]
        per = -(-len(words) // (CHUNKS - 1))
        start_usage = {**{k: usage[k] for k in _TOKENS if k != "output_tokens"}, "output_tokens": 1}
        first = _event(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": message_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": start_usage,
                },
            },
        ) + _event(
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        )
        loop = asyncio.get_running_loop()
        began = loop.time()
        up.open += 1
        try:
            self.write(first)
            await self.flush()
            await up.released.wait()
            for i in range(1, CHUNKS):
                await asyncio.sleep(max(0.0, began + ANSWER_S * i / (CHUNKS - 1) - loop.time()))
                text = "".join(words[(i - 1) * per : i * per])
                chunk = _event(
                    "content_block_delta",
                    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
                )
                if i == CHUNKS - 1:
                    chunk += (
                        _event("content_block_stop", {"type": "content_block_stop", "index": 0})
                        + _event(
                            "message_delta",
                            {
                                "type": "message_delta",
                                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                                "usage": {"output_tokens": usage["output_tokens"]},
                            },
                        )
                        + _event("message_stop", {"type": "message_stop"})
                    )
                self.write(chunk)
                await self.flush()
            up.charge(user, model, usage)  # its final usage is written: the API bills it
            self.finish()
        except tornado.iostream.StreamClosedError:
            pass
        finally:
            up.open -= 1


class StatsHandler(_Handler):
    def get(self) -> None:
        self.finish(self.upstream.stats())


class ControlHandler(_Handler):
    def post(self, action: str) -> None:
        up = self.upstream
        if action == "hold":
            up.released.clear()
        elif action == "release":
            up.released.set()
        elif action == "reset":
            up.bill.clear()
            up.numbers.clear()
        self.finish({"ok": True})


async def _serve() -> None:
    up = Upstream()
    app = tornado.web.Application(
        [
            (r"/v1/messages", MessagesHandler),
            (r"/bench/stats", StatsHandler),
            (r"/bench/(hold|release|reset)", ControlHandler),
        ],
        upstream=up,
    )
    # A deep backlog: the bench opens hundreds of connections at once.
    sockets = tornado.netutil.bind_sockets(0, "127.0.0.1", family=socket.AF_INET, backlog=4096)
    server = tornado.httpserver.HTTPServer(app)
    server.add_sockets(sockets)
    print(f"port {sockets[0].getsockname()[1]}", flush=True)
    await asyncio.Event().wait()


def main() -> None:
    try:
        asyncio.run(_serve())
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
