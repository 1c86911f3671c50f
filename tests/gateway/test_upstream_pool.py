"""The gateway's upstream clients: a client never runs more than its pool's size of requests,
and another is added when all are busy (so no response waits for a free connection)."""

from __future__ import annotations

import asyncio

from ipy_agent.gateway.upstream_pool import UpstreamPool


def test_a_busy_pool_adds_a_client_and_a_freed_slot_is_used_again():
    pool = UpstreamPool(per_client=2)
    taken = [pool.take() for _ in range(5)]
    assert taken == [0, 0, 1, 1, 2] and len(pool.clients) == 3  # control: two per client, no more
    pool.give_back(0)
    assert pool.take() == 0 and len(pool.clients) == 3  # a free slot on the first client, no new one
    for client in pool.clients:
        assert client._transport._pool._max_connections == 2  # type: ignore[attr-defined]
    asyncio.run(pool.aclose())
    assert pool.clients == []
