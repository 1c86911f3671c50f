"""Kernel-side cost of the person's view for a long run: widget rows against the text renderer.

A run of 1,000 tool calls (100 messages of 10 calls) is replayed with the widget view and,
separately, with the terminal text renderer listening; we time what each listener spends per
call row, and count the bytes the widgets would send to the front end (every comm message's
JSON), at 100 and at 1,000 calls, to see whether traffic grows linearly with the run.
"""

from __future__ import annotations

import asyncio
import io
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ipy_agent import Agent, ScriptedModel

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.support.widgets import PING, CountingComm  # noqa: E402  (the same stand-in comm the test uses)

__all__ = ["row_costs"]


def _timed(listener: Any, spent: list[float]) -> Any:
    def wrapped(event: Any) -> None:
        t = time.perf_counter()
        listener(event)
        spent[0] += time.perf_counter() - t

    return wrapped


def _run(calls: int, view: str) -> tuple[float, int]:
    """(seconds the listener spent per call row, bytes sent) for a run of `calls` calls."""
    per = 10
    turns: list[Any] = [
        [{"type": "tool_use", "id": f"p{m}_{i}", "name": "ping", "input": {"i": i}} for i in range(per)]
        for m in range(calls // per)
    ]
    agent = Agent(
        model=ScriptedModel([*turns, "done"]),
        tools=[PING],
        cwd=tempfile.mkdtemp(),
        system_prompt="bench",
        max_turns=calls // per + 5,
    )
    spent = [0.0]
    if view == "widgets":
        import comm

        from ipy_agent.ui.widgets import RunView

        old = comm.create_comm
        comm.create_comm = CountingComm  # type: ignore[assignment]
        CountingComm.sent = 0
        try:
            run_view = RunView(agent)
            agent.on_event(_timed(run_view.listener, spent))
            asyncio.run(agent.arun("go"))
        finally:
            comm.create_comm = old  # type: ignore[assignment]
        return spent[0] / calls, CountingComm.sent
    from ipy_agent.ui.text import TextRenderer, make_console

    renderer = TextRenderer(make_console())
    renderer.console.file = io.StringIO()  # type: ignore[misc]
    agent.on_event(_timed(renderer, spent))
    asyncio.run(agent.arun("go"))
    return spent[0] / calls, 0


def row_costs() -> dict[str, float]:
    _run(20, "widgets")  # warm-up: widget classes, markdown, rich
    _run(20, "text")
    w_small, bytes_small = _run(100, "widgets")
    w_big, bytes_big = _run(1000, "widgets")
    t_big, _ = _run(1000, "text")
    return {
        "widget_row_s": w_big,
        "text_row_s": t_big,
        "widget_row_s_100": w_small,
        "bytes_100": bytes_small,
        "bytes_1000": bytes_big,
    }
