"""The gateway's connections to the API: several small HTTP/1.1 connection pools, not one big one.

One `httpx.AsyncClient` forwards at most its pool's size of responses at once (100 by default),
and an unbounded one costs more CPU per request the more connections it holds (its pool looks
through all of them for a free one on every request). So the gateway keeps clients of at most
`per_client` connections each, kept alive between requests (a request does not open a
connection while one is free), and adds a client when all are busy: any number of responses
stream at once, and each request looks through one small pool (httpcore checks every idle
connection of a pool, a system call each, whenever it assigns or returns one: with pools of 32 that
was a fifth of the event loop's time at 300 streams).
"""

from __future__ import annotations

import ssl

import httpx

__all__ = ["UpstreamPool"]

PER_CLIENT = 8  # connections in one client's pool: httpcore checks each idle one on every request


class UpstreamPool:
    """Clients to the API, each with at most `per_client` requests on it at once."""

    def __init__(self, per_client: int = PER_CLIENT) -> None:
        self.per_client = per_client
        self.clients: list[httpx.AsyncClient] = []
        self.busy: list[int] = []  # requests running on each client
        self._tls: ssl.SSLContext | None = None  # one for all: each loads the CA bundle (~0.5 MB)

    def take(self) -> int:
        """The index of a client with a free connection (a new client when all are busy); give it back with `give_back`."""
        for i, busy in enumerate(self.busy):
            if busy < self.per_client:
                self.busy[i] += 1
                return i
        limits = httpx.Limits(
            max_connections=self.per_client, max_keepalive_connections=self.per_client, keepalive_expiry=60
        )
        if self._tls is None:
            self._tls = httpx.create_ssl_context()
        self.clients.append(httpx.AsyncClient(timeout=httpx.Timeout(600, connect=10), limits=limits, verify=self._tls))
        self.busy.append(1)
        return len(self.clients) - 1

    def give_back(self, index: int) -> None:
        self.busy[index] -= 1

    async def aclose(self) -> None:
        for client in self.clients:
            await client.aclose()
        self.clients, self.busy = [], []
