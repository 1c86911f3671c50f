"""Reading one large MCP message over stdio: our transport against the SDK's `stdio_client`.

A stand-in server writes one JSON-RPC notification of `size` bytes in 4 KB pieces, as a server
streaming a big result writes it. Each side starts the server, reads the message off its read
stream, and stops the server; the time is from start to the message read. The SDK's reader joins
its buffer with every new piece before splitting lines, so its time grows with the square of the
message; ours keeps the pieces and joins them once.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

__all__ = ["ours_seconds", "sdk_seconds"]

_SERVER = r"""
import json, os, sys
size = int(sys.argv[1])
head = b'{"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "'
body = head + b"x" * (size - len(head) - 4) + b'"}}\n'
for i in range(0, len(body), 4096):
    os.write(1, body[i : i + 4096])
sys.stdin.read()
"""
_PATH = Path(tempfile.mkdtemp(prefix="ipy-agent-bench-mcp-")) / "server.py"


def _params(size: int) -> Any:
    from mcp import StdioServerParameters

    if not _PATH.exists():
        _PATH.write_text(_SERVER)
    return StdioServerParameters(command=sys.executable, args=[str(_PATH), str(size)])


async def _read_one(streams_cm: Any) -> int:
    async with streams_cm as (read, _write):
        message = await read.receive()
        return len(str(message))


def ours_seconds(size: int) -> float:
    from ipy_agent.mcp.stdio import stdio_transport

    with tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        anyio.run(_read_one, stdio_transport(_params(size), err, on_fault=lambda why: None, limit=size * 2))
        return time.perf_counter() - start


def sdk_seconds(size: int) -> float:
    from mcp import stdio_client

    with tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        anyio.run(_read_one, stdio_client(_params(size), errlog=err))
        return time.perf_counter() - start
