"""Acknowledge a widget's state updates while the cell that owns it is still awaiting.

Why this exists: ipywidgets' front end throttles state syncs. It sends one `update` comm message,
then buffers every later change of that widget until the kernel publishes an iopub `status: idle`
whose parent is that message; only then does it send the buffer. ipykernel >= 7.4 handles comm
messages that arrive while an async cell holds the shell (our awaited `%agent` cell) on a side
path that publishes no busy/idle status at all. So the first key typed into the Deny reason box
reached the kernel ("k") and every later key stayed in the browser's buffer; the Deny click (a
custom message, never throttled) then read "k". A `--background` run was not affected: the cell
had finished, comms took the normal path, and each update got its idle.

`idle_ack()` returns a handler that publishes the missing `idle` for an update message, then a
`busy` on behalf of the awaiting cell, so the front end's kernel indicator stays busy.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ipywidgets as W

from ipy_agent.history.blocks import JsonObject

__all__ = ["AckText", "idle_ack"]

Ack = Callable[[JsonObject], None]


def idle_ack() -> Ack | None:
    """A handler for the current cell's widgets, or None outside a kernel.

    Call it while the awaiting cell runs: it remembers that cell's request as the parent of the
    `busy` it re-publishes."""
    try:
        from IPython import get_ipython

        kernel = getattr(get_ipython(), "kernel", None)
    except Exception:
        kernel = None
    if kernel is None or getattr(kernel, "session", None) is None:
        return None
    try:
        cell = kernel.get_parent("shell")
    except Exception:
        return None

    def ack(msg: JsonObject) -> None:
        content = msg.get("content")
        data = content.get("data") if isinstance(content, dict) else None
        if not isinstance(data, dict) or data.get("method") != "update":
            return
        try:
            topic = kernel._topic("status")
            kernel.session.send(kernel.iopub_socket, "status", {"execution_state": "idle"}, parent=msg, ident=topic)
            if cell:
                kernel.session.send(
                    kernel.iopub_socket, "status", {"execution_state": "busy"}, parent=cell, ident=topic
                )
        except Exception:  # a front-end nicety: never break the prompt over it
            pass

    return ack


class AckText(W.Text):
    """A Text whose front-end updates are acknowledged by `ack` (see the module docstring)."""

    def __init__(self, *, ack: Ack | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._ack = ack

    def _handle_msg(self, msg: JsonObject) -> None:
        super()._handle_msg(msg)
        if self._ack is not None:
            self._ack(msg)

    def stop_acking(self) -> None:
        self._ack = None
