"""A kernel's streaming request to the key gateway, on a raw socket the test holds.

The gateway tests that cut a stream (a hang-up, a replica killed, a shutdown mid-stream) need the
request to have reached the API and the socket left in their hands: httpx would read on or close.
"""

from __future__ import annotations

import socket

__all__ = ["open_stream"]


def open_stream(url: str, body: bytes, *, token: str = "tok-alice", timeout: float = 20) -> socket.socket:
    """POST `body` to `url`'s /v1/messages as a kernel would, read until the first SSE event
    (message_start), and return the socket, still open: close it to hang up."""
    host, port = url.removeprefix("http://").rstrip("/").split(":")
    sock = socket.create_connection((host, int(port)), timeout=timeout)
    head = (
        f"POST /v1/messages HTTP/1.1\r\nHost: {host}\r\nx-api-key: {token}\r\n"
        f"content-type: application/json\r\nanthropic-version: 2023-06-01\r\ncontent-length: {len(body)}\r\n\r\n"
    )
    sock.sendall(head.encode() + body)
    seen = b""
    while b"message_start" not in seen:
        data = sock.recv(4096)
        if not data:
            sock.close()
            raise AssertionError(f"the gateway closed the stream before its first event: {seen[-500:]!r}")
        seen += data
    return sock
