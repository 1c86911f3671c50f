"""Worker threads for blocking tool code, enough for a whole batch of calls at once.

A sync tool (or a tool's blocking file work) runs in a thread so the event loop keeps serving
widgets and the other calls. `asyncio.to_thread` uses the loop's default pool, which has
`min(32, cpus + 4)` threads: on a 2-core machine six, so ten parallel 100 ms calls took two
rounds. This pool belongs to ipy_agent, grows to what the executors ask for (`reserve_threads`,
their `max_concurrency`), and starts threads only when work arrives.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar
from collections.abc import Callable

__all__ = ["run_blocking", "reserve_threads"]

T = TypeVar("T")

_MIN_THREADS = 16
_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_size = _MIN_THREADS


def reserve_threads(n: int) -> None:
    """Let at least `n` blocking calls run at the same time from now on."""
    global _pool, _size
    with _lock:
        if n <= _size:
            return
        _size = n
        old, _pool = _pool, None
    if old is not None:
        old.shutdown(wait=False)  # running work finishes; new work goes to the larger pool


def _get_pool() -> ThreadPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=_size, thread_name_prefix="ipy_agent-tool")
        return _pool


async def run_blocking(fn: Callable[..., T], /, *args: Any) -> T:
    """`await asyncio.to_thread(fn, *args)`, on ipy_agent's pool (context variables included)."""
    loop = asyncio.get_running_loop()
    ctx = contextvars.copy_context()
    return await loop.run_in_executor(_get_pool(), functools.partial(ctx.run, fn, *args))
