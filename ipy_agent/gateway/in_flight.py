"""The requests for messages running now (their handlers' tasks), and whether the gateway is
stopping: what a graceful shutdown (shutdown.py) waits for, then cuts.
"""

from __future__ import annotations

import asyncio

__all__ = ["InFlight"]


class InFlight:
    """The handler tasks of the requests for messages running now, and whether the gateway stops."""

    def __init__(self) -> None:
        self.tasks: set[asyncio.Task[object]] = set()
        self.draining = False

    def track(self) -> None:
        """Count the running handler's task until it ends (called from its `prepare`)."""
        task = asyncio.current_task()
        if task is not None:
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

    async def drain(self, seconds: float, hurry: asyncio.Event | None = None) -> int:
        """Wait up to `seconds` (or until `hurry` is set) for the tasks to end, then cancel the
        rest (their handlers settle their holds as they unwind) and wait for them; how many were cut."""
        self.draining = True
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        pending = set(self.tasks)
        hurried = asyncio.ensure_future((hurry or asyncio.Event()).wait())
        try:
            while pending and not hurried.done() and (left := deadline - loop.time()) > 0:
                done, _ = await asyncio.wait({*pending, hurried}, timeout=left, return_when=asyncio.FIRST_COMPLETED)
                pending -= done
        finally:
            hurried.cancel()
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending)
        return len(pending)
