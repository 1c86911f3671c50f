"""The state line under a running agent: what it is doing now, and for how long.

A person watching a cell needs to tell three situations apart at a glance: the model is working
("thinking… 12 s", the clock shows it has not hung), tools are running, or the run is waiting
for them (an approval prompt is open: nothing happens until they answer). The line is re-drawn
once a second while the run lasts; each redraw is one small widget update.
"""

from __future__ import annotations

import asyncio
import html
import time
from typing import Any, Literal

__all__ = ["Phase", "Progress", "elapsed_text"]

Phase = Literal["starting", "thinking", "tools", "waiting", "stopping", "ended"]
TICK = 1.0  # seconds between redraws of the elapsed time
_WAITING_STYLE = "color:#d08700;font-weight:bold"


def elapsed_text(seconds: float) -> str:
    s = int(seconds)
    return f"{s} s" if s < 60 else f"{s // 60} min {s % 60:02d} s"


class Progress:
    """Owns the `state` HTML widget of a RunView; `set(phase)` and `end(text)` drive it."""

    def __init__(self, state: Any, *, model: str = "", idle: str = "") -> None:
        """`idle`: set, the line of a view that follows no run (a served notebook's outside
        calls): it says `idle` unless a prompt is open, with no clock."""
        self.state = state
        self.model = model
        self.idle = idle
        self.phase: Phase = "starting"
        self.since = time.monotonic()
        self.waiting = 0  # open approval prompts
        self._handle: asyncio.TimerHandle | None = None
        self._draw()

    def set(self, phase: Phase) -> None:
        if phase == self.phase or self.phase in ("ended", "stopping"):
            return
        self.phase, self.since = phase, time.monotonic()
        self._draw()

    def prompt_opened(self) -> None:
        self.waiting += 1
        self._draw()

    def prompt_closed(self) -> None:
        self.waiting = max(0, self.waiting - 1)
        if not self.waiting:
            self.since = time.monotonic()  # the clock of what goes on next starts now
        self._draw()

    def stopping(self) -> None:
        self.phase = "stopping"
        self.state.value = "<i>stopping…</i>"

    def end(self, text_html: str) -> None:
        self.phase = "ended"
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        self.state.value = text_html

    def text(self) -> str:
        """The line as plain words (tests and the record read this)."""
        if self.waiting:
            return f"waiting for you ({self.waiting} prompt{'s' if self.waiting > 1 else ''} open)"
        if self.idle and self.phase in ("starting", "thinking", "tools"):
            return self.idle
        took = elapsed_text(time.monotonic() - self.since)
        return {
            "starting": f"starting {self.model}…" if self.model else "starting…",
            "thinking": f"thinking… {took}",
            "tools": f"running tools… {took}",
            "waiting": "waiting for you",
            "stopping": "stopping…",
            "ended": "",
        }[self.phase]

    def _draw(self) -> None:
        if self.phase == "ended":
            return
        text = html.escape(self.text())
        self.state.value = f'<span style="{_WAITING_STYLE}">● {text}</span>' if self.waiting else f"<i>{text}</i>"
        self._schedule()

    def _schedule(self) -> None:
        if self._handle is not None or self.phase in ("ended", "stopping") or self.idle:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._handle = loop.call_later(TICK, self._tick)

    def _tick(self) -> None:
        self._handle = None
        self._draw()
