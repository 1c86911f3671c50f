"""Worker threads for blocking tool code, enough for a whole batch of calls at once.

A sync tool (or a tool's blocking file work) runs in a thread so the event loop keeps serving
widgets and the other calls. `asyncio.to_thread` uses the loop's default pool, which has
`min(32, cpus + 4)` threads: on a 2-core machine six, so ten parallel 100 ms calls took two
rounds. This pool belongs to ipy_agent, grows to what the executors ask for (`reserve_threads`,
their `max_concurrency`), and starts threads only when work arrives.

`run_to_end` serves another need: a synchronous `Agent.run()` called where an event loop is
already running (a notebook cell) cannot `asyncio.run` there, so it runs the coroutine on a
private loop in a thread of its own and waits, passing Ctrl-C on as an interrupt.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar, cast

__all__ = ["reserve_threads", "run_blocking", "run_to_end"]

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


def run_to_end(make: Callable[[], Coroutine[Any, Any, T]], *, interrupt: Callable[[], None]) -> T:
    """The result of the coroutine `make()` returns, run to its end from synchronous code.

    Without a running loop in this thread, `asyncio.run`. Inside one (a notebook cell), on a
    private loop in a thread; a Ctrl-C meanwhile calls `interrupt` and keeps waiting, so this
    returns (or raises what the coroutine raised) only once the coroutine has finished."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())
    box: dict[str, Any] = {}
    finished = threading.Event()

    def target() -> None:
        try:
            box["result"] = asyncio.run(make())
        except BaseException as e:  # re-raised in the caller's thread below
            box["error"] = e
        finally:
            finished.set()

    threading.Thread(target=target, name="ipy_agent-run", daemon=True).start()
    while True:
        try:
            if finished.wait(0.1):
                break
        except KeyboardInterrupt:
            # Every Ctrl-C asks the run to stop; return only once its history is closed.
            interrupt()
    if "error" in box:
        raise box["error"]
    return cast(T, box["result"])
