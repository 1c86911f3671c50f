"""A responsive kernel: the person's own cells while a `%agent --background` run works.

A real kernel (tests/support/kernel.py) runs `%agent --background` against a local Messages API
in this process (tests/support/sse_server.py), through the real SDK: the model streams text,
asks for ten Grep calls at once (each searches 10 files of 20,000 lines), then streams more text. Meanwhile a
client sends `1+1` every 50 ms and times each until its execute_reply, as a notebook front end
would; the peer is the same cell on the same kernel with no run going.

Streaming: every text delta the server writes is a distinct word; an iopub thread stamps each
message the kernel publishes, and the delay of a delta is from the server writing it to the first
kernel message that carries it (one clock: both processes read CLOCK_MONOTONIC). The number of
kernel messages carrying text, against the number of deltas, says whether the cell is updated in
batches or once per token.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from tests.support.kernel import Kernel
from tests.support.sse_server import Event, ReplayServer, message_events
from tests.support.waits import Deadline

__all__ = ["measure"]

WORDS = 120  # text deltas per streamed message
DELTA_SECONDS = 0.02  # between two deltas, as a model streams


def _streamed(first: int, extra: list[dict[str, Any]] | None = None) -> list[Event]:
    text = "".join(f" w{first + i:04d}" for i in range(WORDS))
    events = message_events([{"type": "text", "text": text}, *(extra or [])], chunk=6)
    for e in events:
        if e.name == "content_block_delta" and e.data["delta"]["type"] == "text_delta":
            e.delay = DELTA_SECONDS
    return events


def _script(server: ReplayServer) -> None:
    calls = [
        {
            "type": "tool_use",
            "id": f"toolu_{i:02d}",
            "name": "Grep",
            "input": {"pattern": f"line {i}7", "output_mode": "content"},
        }
        for i in range(10)
    ]
    server.add(_streamed(0, calls), _streamed(WORDS))


class _Iopub(threading.Thread):
    def __init__(self, kernel: Kernel) -> None:
        super().__init__(daemon=True)
        self.kernel = kernel
        self.seen: list[tuple[float, str]] = []
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                msg = self.kernel.kc.get_iopub_msg(timeout=0.05)
            except Exception:
                continue
            self.seen.append((time.monotonic(), json.dumps(msg.get("content", {}), default=str)))


def _ping(kernel: Kernel) -> float:
    start = time.monotonic()
    msg_id = kernel.kc.execute("1+1", silent=False, store_history=False)
    while True:
        reply = kernel.kc.get_shell_msg(timeout=30)
        if reply["parent_header"].get("msg_id") == msg_id:
            return time.monotonic() - start


def _p95(values: list[float]) -> float:
    return sorted(values)[max(0, round(0.95 * len(values)) - 1)]


def measure(idle_pings: int = 40) -> dict[str, Any]:
    """Latencies of `1+1` idle and during a background run, and the streaming delays."""
    with tempfile.TemporaryDirectory(prefix="ipy_agent_bench_kernel_") as tmp, ReplayServer() as server:
        env = {"ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "sk-bench", "IPY_AGENT_MODEL": "claude-bench"}
        for i in range(10):
            (Path(tmp) / f"data_{i}.txt").write_text("".join(f"line {n} of file {i}\n" for n in range(20_000)))
        with Kernel(Path(tmp), env=env) as kernel:
            iopub = _Iopub(kernel)
            iopub.start()
            kernel_ready = _ping(kernel)  # the first cell also warms the kernel up
            _ping(kernel)
            idle = []
            for _ in range(idle_pings):
                idle.append(_ping(kernel))
                time.sleep(0.05)
            _ping(kernel)  # not timed: the extension loads in the next cell
            kernel.kc.execute("%load_ext ipy_agent", store_history=False)
            _script(server)
            kernel.kc.execute("%agent --background look into it", store_history=False)
            busy = []
            deadline = Deadline(120)  # the background run makes its two requests and streams
            while not deadline.passed():
                if len(server.requests) >= 2 and server.sent and server.sent[-1][1] == "message_stop":
                    break
                if server.requests:
                    busy.append(_ping(kernel))
                time.sleep(0.05)
            time.sleep(0.5)
            iopub.stop.set()
            iopub.join(2)
            delays, carrying = _stream_delays(server, iopub.seen)
            return {
                "first_ping": kernel_ready,
                "idle": idle,
                "busy": busy,
                "delays": delays,
                "deltas": 2 * WORDS,
                "messages_with_text": carrying,
                "requests": len(server.requests),
            }


def _stream_delays(server: ReplayServer, seen: list[tuple[float, str]]) -> tuple[list[float], int]:
    written = [t for n, name, t in server.sent if name == "content_block_delta"]
    words = [f"w{i:04d}" for i in range(2 * WORDS)]
    delays = []
    for word, t in zip(words, _text_delta_times(server, written), strict=False):
        first = next((s for s, text in seen if s >= t and word in text), None)
        if first is not None:
            delays.append(first - t)
    carrying = sum(1 for _, text in seen if any(w in text for w in ("w0", "w1")))
    return delays, carrying


def _text_delta_times(server: ReplayServer, written: list[float]) -> list[float]:
    """When each word's delta was written: one word a delta (6 characters), text deltas first in
    each message."""
    out: list[float] = []
    for request in range(len(server.requests)):
        times = [t for n, name, t in server.sent if n == request and name == "content_block_delta"]
        out += times[:WORDS]
    return out


def summary(m: dict[str, Any]) -> dict[str, float]:
    return {
        "idle_p95": _p95(m["idle"]),
        "busy_p95": _p95(m["busy"]) if m["busy"] else float("nan"),
        "busy_median": statistics.median(m["busy"]) if m["busy"] else float("nan"),
        "delay_p95": _p95(m["delays"]) if m["delays"] else float("nan"),
        "delay_median": statistics.median(m["delays"]) if m["delays"] else float("nan"),
    }


if __name__ == "__main__":
    result = measure()
    print(
        json.dumps(
            {
                **summary(result),
                **{k: v for k, v in result.items() if not isinstance(v, list)},
                "pings": len(result["busy"]),
                "delayed": len(result["delays"]),
            }
        )
    )
