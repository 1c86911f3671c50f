"""Serving until SIGTERM (or SIGINT), then stopping gracefully: no new connections, the responses
in flight finish (up to `drain_seconds`), the ones still running then are cut and charged their
held maximum, and the process exits 0. A second signal cuts them at once. (JupyterHub stops a
service it runs with SIGINT, then SIGTERM 30 s later; Kubernetes with SIGTERM, then SIGKILL after
the pod's grace period, 30 s by default: the default drain of 25 s fits both.)

While it drains, the gateway answers a new request on a kept-alive connection with 503 (and
`x-should-retry: true`, so the SDK retries it, on another replica behind a balancer), and
`/health` with 503 so a balancer stops sending it any.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys

import tornado.httpserver

from .server import Gateway

__all__ = ["serve"]


async def serve(gateway: Gateway, host: str, port: int, *, drain_seconds: float) -> None:
    """Serve `gateway` on host:port until SIGTERM or SIGINT, then stop as above."""
    server = tornado.httpserver.HTTPServer(gateway.app())
    server.listen(port, address=host)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    print(f"ipy_agent.gateway: serving on http://{host}:{port}", file=sys.stderr, flush=True)
    await stop.wait()
    server.stop()  # the listening socket closes: no new connections
    gateway.in_flight.draining = True
    hurry = asyncio.Event()  # a second signal: cut the responses in flight now
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, hurry.set)
    print(
        f"ipy_agent.gateway: stopping; {len(gateway.in_flight.tasks)} responses in flight, "
        f"waiting up to {drain_seconds:g} s",
        file=sys.stderr,
        flush=True,
    )
    cut = await gateway.in_flight.drain(drain_seconds, hurry)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(server.close_all_connections(), timeout=5)
    await gateway.aclose()
    print(
        f"ipy_agent.gateway: stopped ({cut} responses cut and charged their held maximum)", file=sys.stderr, flush=True
    )
