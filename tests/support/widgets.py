"""A stand-in for the kernel's comm that counts what widgets send, and a tool that answers at once.

Shared by tests/ui/test_widget_traffic.py and `python -m bench` (bench/rows.py): both replay a
long run through the widget view and read the bytes a front end would receive.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from ipy_agent import build_tool

__all__ = ["PING", "CountingComm"]


class Ping(BaseModel):
    i: int


async def _ping(inp: Ping, ctx: Any) -> str:
    return f"pong {inp.i}"


PING = build_tool(
    name="ping", input_model=Ping, description="Answers.", call=_ping, is_read_only=True, is_concurrency_safe=True
)


class CountingComm:
    """Stands in for the kernel's comm: adds up the bytes of everything a widget sends."""

    sent = 0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.comm_id = kwargs.get("comm_id") or f"c{id(self)}"
        self.kernel = object()  # ipywidgets sends trait updates only through a comm with a kernel
        CountingComm.sent += len(json.dumps(kwargs.get("data") or {}, default=str))

    def send(self, data: Any = None, metadata: Any = None, buffers: Any = None) -> None:
        CountingComm.sent += len(json.dumps(data or {}, default=str)) + sum(len(b) for b in buffers or [])

    def open(self, *args: Any, **kwargs: Any) -> None:
        pass

    def close(self, *args: Any, **kwargs: Any) -> None:
        pass

    def on_msg(self, callback: Any) -> None:
        pass

    def on_close(self, callback: Any) -> None:
        pass
