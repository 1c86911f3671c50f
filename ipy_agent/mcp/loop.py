"""One event loop in a daemon thread, where every MCP session of a manager lives.

An MCP session is a set of tasks bound to the loop it was opened on. The agent's own loop is
not stable: `Agent.run()` from a notebook cell runs on a fresh private loop in a thread each
time, `%agent` in a kernel runs on the kernel's loop, a terminal on `asyncio.run`'s. Sessions
that must outlive a run therefore get a loop of their own, and calls are marshalled to it; the
caller awaits a future that works from any loop, and cancelling it cancels the call there.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["BackgroundLoop"]

T = TypeVar("T")


class BackgroundLoop:
    def __init__(self, name: str = "ipy_agent-mcp") -> None:
        self._name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _ensure(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or not self.running:
                loop = asyncio.new_event_loop()
                ready = threading.Event()

                def main() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set)
                    loop.run_forever()

                self._thread = threading.Thread(target=main, name=self._name, daemon=True)
                self._thread.start()
                ready.wait()
                self._loop = loop
            return self._loop

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Run `coro` on the background loop; a thread-safe future of its result."""
        return asyncio.run_coroutine_threadsafe(coro, self._ensure())

    async def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await `coro` on the background loop from any other loop."""
        return await asyncio.wrap_future(self.submit(coro))

    def run_sync(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Block this thread until `coro` finishes there (never call from the loop's own thread)."""
        return self.submit(coro).result(timeout)

    def stop(self, timeout: float = 5.0) -> None:
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout)
        if not thread.is_alive():
            loop.close()
