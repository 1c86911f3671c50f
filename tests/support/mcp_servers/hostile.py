"""An MCP server that answers in hostile ways: raw JSON-RPC over stdio, no SDK (it starts fast).

Each tool is one way a server can abuse its client: a line that never ends, a huge message
written in tiny pieces, images that lie about themselves, a flood of notifications instead of
an answer, a huge error, deep nesting, a hundred thousand content blocks. Sizes come from the
environment (HOSTILE_BIG: bytes) so tests can stay quick.
"""

from __future__ import annotations

import base64
import json
import os
import struct
import sys
import time
import zlib

BIG = int(os.environ.get("HOSTILE_BIG", str(8 * 1024 * 1024)))
OUT = sys.stdout.buffer


def send(message: dict) -> None:
    OUT.write(json.dumps(message).encode() + b"\n")
    OUT.flush()


def png(width: int = 1, height: int = 1) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00"))
        + chunk(b"IEND", b"")
    )


JPEG = b"\xff\xd8\xff\xe0" + b"\x00\x10JFIF\x00" + b"\x00" * 20 + b"\xff\xc0\x00\x11\x08\x00\x02\x00\x03" + b"\x00" * 20
GIF = b"GIF89a\x01\x00\x01\x00\x00\x00\x00;"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def images() -> list[dict]:
    items = [
        {"type": "image", "mimeType": "image/png", "data": b64(JPEG)},  # a JPEG declared as PNG
        {"type": "image", "mimeType": "image/png", "data": b64(b"<html><script>alert(1)</script></html>")},
        {"type": "image", "mimeType": "image/png", "data": "not base64 at all!!"},
        {"type": "image", "mimeType": "image/png", "data": b64(png(20000, 20000))},  # too many pixels
        {"type": "image", "mimeType": "image/png", "data": b64(png() + b"\x00" * (6 * 1024 * 1024))},  # too big
        {"type": "image", "mimeType": "image/svg+xml", "data": b64(b"<svg onload='x()'/>")},
        {"type": "image", "mimeType": "image/gif", "data": b64(GIF)},
        {"type": "resource", "resource": {"uri": "x://y", "mimeType": "image/png", "blob": b64(b"MZ\x90\x00exe")}},
    ]
    items += [{"type": "image", "mimeType": "image/png", "data": b64(png())} for _ in range(30)]
    return items


def call(rid: int, name: str) -> None:
    if name == "endless_line":  # a message that never ends
        piece = b"x" * 65536
        OUT.write(b'{"jsonrpc": "2.0", "id": %d, "result": {"content": [{"type": "text", "text": "' % rid)
        while True:
            OUT.write(piece)
            OUT.flush()
    if name == "big_in_pieces":  # a valid message of BIG // 2 bytes, written 1 KB at a time
        text = "y" * (BIG // 2)
        data = json.dumps({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": text}]}})
        raw = data.encode() + b"\n"
        for i in range(0, len(raw), 1024):
            OUT.write(raw[i : i + 1024])
            OUT.flush()
        return
    if name == "flood":  # notifications forever, never the answer
        note = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "z" * 4096}}
        line = json.dumps(note).encode() + b"\n"
        while True:
            OUT.write(line * 64)
            OUT.flush()
    if name == "bad_images":
        send({"jsonrpc": "2.0", "id": rid, "result": {"content": images()}})
        return
    if name == "huge_error":
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32000, "message": "E" * (BIG // 4)}})
        return
    if name == "deep":
        nested = "[" * 200_000 + "]" * 200_000
        OUT.write(
            b'{"jsonrpc": "2.0", "id": %d, "result": {"content": [], "structuredContent": {"x": %s}}}\n'
            % (rid, nested.encode())
        )
        OUT.flush()
        return
    if name == "many_blocks":
        send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "b"}] * 100_000}})
        return
    if name == "not_utf8":
        OUT.write(b"\xff\xfe\xfa garbage \x00\x01\n")
        send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "after garbage"}]}})
        return
    if name == "spoof":  # an answer to a request never made, then the real one
        send({"jsonrpc": "2.0", "id": rid + 1000, "result": {"content": [{"type": "text", "text": "spoofed"}]}})
        send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "real"}]}})
        return
    send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": f"ok {name}"}]}})


TOOLS = [
    "endless_line",
    "big_in_pieces",
    "flood",
    "bad_images",
    "huge_error",
    "deep",
    "many_blocks",
    "not_utf8",
    "spoof",
    "fine",
]


def main() -> None:
    for raw in sys.stdin.buffer:
        try:
            msg = json.loads(raw)
        except ValueError:
            continue
        method, rid = msg.get("method"), msg.get("id")
        if method == "initialize":
            version = msg["params"].get("protocolVersion", "2025-06-18")
            send(
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "result": {
                        "protocolVersion": version,
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "hostile", "version": "1"},
                    },
                }
            )
        elif method == "tools/list":
            tools = [
                {"name": n, "description": n, "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}}
                for n in TOOLS
            ]
            send({"jsonrpc": "2.0", "id": rid, "result": {"tools": tools}})
        elif method == "tools/call":
            call(rid, msg["params"]["name"])
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": rid, "result": {}})
        elif rid is not None:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "no such method"}})
        time.sleep(0)


if __name__ == "__main__":
    main()
