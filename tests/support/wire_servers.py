"""Local servers on 127.0.0.1 that speak each provider's wire format, for the real SDK clients.

- `BedrockServer`: Bedrock's `invoke-with-response-stream`, whose body is AWS's binary event
  stream (each frame: total and header lengths, a CRC of those, typed headers, the payload, a
  CRC of it all); a frame's payload holds a Messages API event, base64 in `{"bytes": ...}`. An
  error mid-stream is an `exception` frame. It keeps the requests' SigV4 headers for the tests
  (present and well-formed; the signature itself is not checked).
- Vertex and Foundry stream the Messages API's own SSE (the plain `ReplayServer`); Vertex at
  `.../publishers/anthropic/models/MODEL:streamRawPredict`, with a bearer token.
- `OpenAIServer`: Chat Completions chunks as `data: {...}` lines and a final `data: [DONE]`;
  `chat_events` builds them from Anthropic-format blocks, tool calls streamed in pieces.

Each server answers with the replies queued on it, like `ReplayServer`.
"""

from __future__ import annotations

import base64
import json
import struct
import zlib
from typing import Any

from .sse_server import Event, ReplayServer, Reply

__all__ = ["BedrockServer", "OpenAIServer", "bedrock_error", "bedrock_exception", "chat_events", "event_frame"]


def _header(name: str, value: str) -> bytes:
    raw_name, raw_value = name.encode(), value.encode()
    return struct.pack("!B", len(raw_name)) + raw_name + b"\x07" + struct.pack("!H", len(raw_value)) + raw_value


def event_frame(headers: dict[str, str], payload: bytes) -> bytes:
    """One AWS event stream message."""
    head = b"".join(_header(k, v) for k, v in headers.items())
    total = 12 + len(head) + len(payload) + 4
    prelude = struct.pack("!II", total, len(head))
    prelude += struct.pack("!I", zlib.crc32(prelude) & 0xFFFFFFFF)
    message = prelude + head + payload
    return message + struct.pack("!I", zlib.crc32(message) & 0xFFFFFFFF)


class BedrockServer(ReplayServer):
    content_type = "application/vnd.amazon.eventstream"

    def frame(self, event: Event) -> bytes:
        if event.name == "exception":
            headers = {
                ":exception-type": event.data["type"],
                ":content-type": "application/json",
                ":message-type": "exception",
            }
            return event_frame(headers, json.dumps({"message": event.data["message"]}).encode())
        chunk = {"bytes": base64.b64encode(json.dumps(event.data).encode()).decode()}
        headers = {":event-type": "chunk", ":content-type": "application/json", ":message-type": "event"}
        return event_frame(headers, json.dumps(chunk).encode())


def bedrock_exception(kind: str, message: str) -> Event:
    """An exception frame in the middle of a Bedrock stream (e.g. "throttlingException")."""
    return Event(name="exception", data={"type": kind, "message": message})


def bedrock_error(status: int, kind: str, message: str) -> Reply:
    """Bedrock's JSON error: the kind in the x-amzn-ErrorType header, the words in the body."""
    return Reply(status=status, body={"message": message}, headers={"x-amzn-ErrorType": f"{kind}:http://internal"})


class OpenAIServer(ReplayServer):
    def frame(self, event: Event) -> bytes:
        return f"data: {json.dumps(event.data)}\n\n".encode()

    def end(self) -> bytes:
        return b"data: [DONE]\n\n"


def _chunk(model: str, delta: dict[str, Any] | None, finish: str | None = None, **extra: Any) -> dict[str, Any]:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": model,
        "choices": choices,
        **extra,
    }


def chat_events(
    blocks: list[dict[str, Any]],
    *,
    finish: str | None = None,
    usage: dict[str, int] | None = None,
    model: str = "local-test",
    chunk: int = 8,
    tail_delay: float = 0.0,
    end: bool = True,
) -> list[Event]:
    """Chat Completions chunks for a reply made of Anthropic-format `blocks` (text, tool_use).
    Event names: "text", "tool_call", "finish" (the chunk with finish_reason), "usage"."""
    events = [Event(name="role", data=_chunk(model, {"role": "assistant", "content": ""}))]
    calls = 0
    for spec in blocks:
        delay = spec.get("_delay", 0.0)
        if spec["type"] == "text":
            for i in range(0, len(spec["text"]), chunk):
                events.append(
                    Event(name="text", data=_chunk(model, {"content": spec["text"][i : i + chunk]}), delay=delay)
                )
                delay = 0.0
        elif spec["type"] == "tool_use":
            raw = json.dumps(spec.get("input", {}))
            first = {
                "index": calls,
                "id": spec["id"],
                "type": "function",
                "function": {"name": spec["name"], "arguments": ""},
            }
            events.append(Event(name="tool_call", data=_chunk(model, {"tool_calls": [first]}), delay=delay))
            for i in range(0, len(raw), chunk):
                piece = {"index": calls, "function": {"arguments": raw[i : i + chunk]}}
                events.append(Event(name="tool_call", data=_chunk(model, {"tool_calls": [piece]})))
            calls += 1
    if end:
        reason = finish or ("tool_calls" if calls else "stop")
        events.append(Event(name="finish", data=_chunk(model, {}, reason), delay=tail_delay))
        numbers = {"prompt_tokens": 10, "completion_tokens": 7, **(usage or {})}
        numbers["total_tokens"] = numbers["prompt_tokens"] + numbers["completion_tokens"]
        events.append(Event(name="usage", data=_chunk(model, None, usage=numbers)))
    return events
