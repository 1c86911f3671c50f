"""A local Messages API on 127.0.0.1 that replays scripted streaming responses.

Tests and bench/streaming.py run the REAL anthropic client against it, so SSE parsing, retries,
headers and the connection pool are the SDK's own. It records what a test needs to assert:
each request (path, headers, JSON body), the monotonic time each event was written, and
connections the client closed in the middle of a stream.

Replies are queued with `add()` and served in order, one per POST. A reply is either a JSON
error (status, headers, body) or an event stream built with `message_events()`, in the
documented SSE format (`event: NAME` / `data: JSON`, blank line), sent with chunked encoding.
"""

from __future__ import annotations

import json
import select
import sys
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .waits import waiting_for

__all__ = ["Event", "ReplayServer", "Reply", "error_event", "error_reply", "message_events"]


@dataclass(kw_only=True)
class Event:
    name: str
    data: dict[str, Any]
    delay: float = 0.0  # seconds to wait before writing this event
    gate: threading.Event | None = None  # set by the test when this event may be written


@dataclass(kw_only=True)
class Reply:
    status: int = 200
    events: list[Event] | None = None  # None: a JSON body instead of a stream
    body: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    hold_open: bool = False  # after the events, wait for the client to close the connection
    cut: bool = False  # after the events, drop the connection without ending the stream
    short: bool = False  # a JSON body: announce its whole length, send half of it, drop the connection


@dataclass(kw_only=True)
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    time: float


def _chunks(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def message_events(
    blocks: list[dict[str, Any]],
    *,
    stop_reason: str | None = None,
    usage: dict[str, int] | None = None,
    output_tokens: int = 7,
    model: str = "claude-test",
    chunk: int = 8,
    tail_delay: float = 0.0,
    end: bool = True,
) -> list[Event]:
    """Events for one assistant message made of `blocks` (Anthropic format). A block may carry
    `"_delay"`: seconds before its content_block_start. `tail_delay` comes before message_delta.
    `end=False` stops after the blocks (for error and disconnect tests)."""
    tool_use = any(b.get("type") == "tool_use" for b in blocks)
    start_usage = {"input_tokens": 10, "output_tokens": 1, **(usage or {})}
    events = [
        Event(
            name="message_start",
            data={
                "type": "message_start",
                "message": {
                    "id": "msg_test",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": start_usage,
                },
            },
        ),
        Event(name="ping", data={"type": "ping"}),
    ]
    for index, spec in enumerate(blocks):
        block = {k: v for k, v in spec.items() if k != "_delay"}
        kind = block["type"]
        deltas: list[dict[str, Any]] = []
        if kind == "text":
            start = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": c} for c in _chunks(block["text"], chunk)]
        elif kind == "thinking":
            start = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": c} for c in _chunks(block["thinking"], chunk)]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        elif kind == "tool_use":
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            raw = json.dumps(block.get("input", {}))
            deltas = [{"type": "input_json_delta", "partial_json": c} for c in _chunks(raw, chunk)]
        else:  # redacted_thinking and anything else arrive whole
            start = block
        events.append(
            Event(
                name="content_block_start",
                delay=spec.get("_delay", 0.0),
                data={"type": "content_block_start", "index": index, "content_block": start},
            )
        )
        for delta in deltas:
            events.append(
                Event(name="content_block_delta", data={"type": "content_block_delta", "index": index, "delta": delta})
            )
        events.append(Event(name="content_block_stop", data={"type": "content_block_stop", "index": index}))
    if end:
        events.append(
            Event(
                name="message_delta",
                delay=tail_delay,
                data={
                    "type": "message_delta",
                    "delta": {
                        "stop_reason": stop_reason or ("tool_use" if tool_use else "end_turn"),
                        "stop_sequence": None,
                    },
                    "usage": {"output_tokens": output_tokens},
                },
            )
        )
        events.append(Event(name="message_stop", data={"type": "message_stop"}))
    return events


def typo_fix() -> list[list[Event]]:
    """A read-then-edit session: Read notes.txt, Edit "teh" to "the", then "Fixed the typo."."""
    return [
        message_events(
            [
                {"type": "text", "text": "Reading it."},
                {"type": "tool_use", "id": "toolu_r", "name": "Read", "input": {"file_path": "notes.txt"}},
            ]
        ),
        message_events(
            [
                {
                    "type": "tool_use",
                    "id": "toolu_e",
                    "name": "Edit",
                    "input": {"file_path": "notes.txt", "old_string": "teh", "new_string": "the"},
                }
            ]
        ),
        message_events([{"type": "text", "text": "Fixed the typo."}]),
    ]


def error_body(error_type: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": error_type, "message": message}}


def error_reply(status: int, error_type: str, message: str, **headers: str) -> Reply:
    """A JSON error response; keyword headers use `_` for `-` (retry_after_ms="1")."""
    return Reply(
        status=status,
        body=error_body(error_type, message),
        headers={k.replace("_", "-"): v for k, v in headers.items()},
    )


def error_event(error_type: str, message: str) -> Event:
    return Event(name="error", data=error_body(error_type, message))


class ReplayServer:
    """Serves queued replies on 127.0.0.1 in a background thread; use as a context manager.

    Subclasses speak other wire formats by overriding `content_type`, `frame` (the bytes of one
    event) and `end` (written after the last event). `pages` are fixed answers for a path
    (GET or POST), served without taking a queued reply."""

    content_type = "text/event-stream"

    def frame(self, event: Event) -> bytes:
        return f"event: {event.name}\ndata: {json.dumps(event.data)}\n\n".encode()

    def end(self) -> bytes:
        return b""

    def __init__(self) -> None:
        self.pages: dict[str, tuple[int, dict[str, Any]]] = {}
        self.requests: list[Recorded] = []
        self.sent: list[tuple[int, str, float]] = []  # (request number, event name, time)
        self.disconnects: list[int] = []  # request numbers whose stream the client closed
        self._replies: list[Reply] = []
        self._lock = threading.Lock()
        self._disconnected = threading.Event()
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.replay = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def add(self, *replies: Reply | list[Event]) -> None:
        with self._lock:
            self._replies.extend(r if isinstance(r, Reply) else Reply(events=r) for r in replies)

    def sent_time(self, name: str, request: int = -1) -> float:
        """When event `name` of request number `request` (default: the latest) was written."""
        number = request if request >= 0 else len(self.requests) + request
        return next(t for n, e, t in self.sent if n == number and e == name)

    def wait_disconnect(self, timeout: float) -> bool:
        """Whether a client closed a stream's connection within `timeout` seconds."""
        with waiting_for("the client to close a stream's connection to the replay server"):
            return self._disconnected.wait(timeout)

    def __enter__(self) -> ReplayServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    # -- used by the handler thread -------------------------------------------------------------

    def _take(self, recorded: Recorded) -> tuple[int, Reply]:
        with self._lock:
            self.requests.append(recorded)
            number = len(self.requests) - 1
            if not self._replies:
                return number, error_reply(500, "api_error", f"replay server: no reply queued for request {number}")
            return number, self._replies.pop(0)

    def _record_sent(self, number: int, name: str) -> None:
        with self._lock:
            self.sent.append((number, name, time.monotonic()))

    def _record_disconnect(self, number: int) -> None:
        with self._lock:
            self.disconnects.append(number)
        self._disconnected.set()


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client closing a kept-alive connection is normal here; anything else is printed.
        if not isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        pass

    def do_GET(self) -> None:
        server: ReplayServer = self.server.replay  # type: ignore[attr-defined]
        status, body = server.pages.get(self.path, (404, {"error": f"no page {self.path}"}))
        self._json(Reply(status=status, body=body))

    def do_POST(self) -> None:
        server: ReplayServer = self.server.replay  # type: ignore[attr-defined]
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        if self.path in server.pages:
            status, body = server.pages[self.path]
            self._json(Reply(status=status, body=body))
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:  # a form (an OAuth token request)
            body = {k: v[0] for k, v in urllib.parse.parse_qs(raw.decode()).items()}
        recorded = Recorded(
            path=self.path, headers={k.lower(): v for k, v in self.headers.items()}, body=body, time=time.monotonic()
        )
        number, reply = server._take(recorded)
        if reply.events is None:
            self._json(reply)
            return
        self.send_response(reply.status)
        for k, v in {"content-type": server.content_type, "cache-control": "no-cache", **reply.headers}.items():
            self.send_header(k, v)
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        try:
            for event in reply.events:
                if event.delay:
                    time.sleep(event.delay)
                if event.gate is not None:
                    event.gate.wait(30)
                data = server.frame(event)
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()
                server._record_sent(number, event.name)
            if reply.cut:
                self.close_connection = True
                return
            if reply.hold_open:
                self._wait_for_client_close(server, number)
                return
            if tail := server.end():
                self.wfile.write(b"%x\r\n%s\r\n" % (len(tail), tail))
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
            server._record_disconnect(number)

    def _json(self, reply: Reply) -> None:
        payload = json.dumps(reply.body or {}).encode()
        self.send_response(reply.status)
        for k, v in {"content-type": "application/json", **reply.headers}.items():
            self.send_header(k, v)
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        if reply.short:
            self.wfile.write(payload[: len(payload) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(payload)

    def _wait_for_client_close(self, server: ReplayServer, number: int) -> None:
        # The client sends nothing more on this connection, so readable + empty read = closed.
        self.close_connection = True
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            readable, _, _ = select.select([self.connection], [], [], 0.05)
            if readable:
                try:
                    if self.connection.recv(1) == b"":
                        server._record_disconnect(number)
                        return
                except OSError:
                    server._record_disconnect(number)
                    return
