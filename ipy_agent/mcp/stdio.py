"""The stdio transport to an MCP server: its bytes read in linear time, one message at most so big.

A stdio server's output is untrusted bytes. The SDK's reader joins what it has buffered with
each new chunk before splitting it into lines, so one long line costs time that grows with the
square of its length, and memory without bound. This transport reads the same newline-delimited
JSON-RPC with a reader that keeps the pieces of an unfinished line in a list (each byte is
copied once, when the line is complete) and gives up on a message past `MAX_MESSAGE_BYTES`:
the server is then told it broke the protocol (its connection ends, with a reason that says so)
instead of filling the kernel's memory. Messages are parsed one at a time and handed to the
session as the SDK's transport hands them (a stream with no buffer: the server waits while the
client is busy), so an endless stream of messages costs time, not memory.

Starting and stopping the process are the SDK's: the same environment, a new process group,
stdin closed first, then the whole group terminated.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any, TextIO

__all__ = ["MAX_MESSAGE_BYTES", "LineReader", "MessageTooLarge", "stdio_transport"]

MAX_MESSAGE_BYTES = 32 * 1024 * 1024
STOP_GRACE = 2.0  # seconds between closing the server's stdin and terminating its group


class MessageTooLarge(Exception):
    """A server sent a message over the size limit."""


class LineReader:
    """Newline-delimited messages out of chunks of bytes: each byte is copied once, and a line
    that grows past `limit` raises `MessageTooLarge` before more of it is kept."""

    def __init__(self, limit: int = MAX_MESSAGE_BYTES) -> None:
        self.limit = limit
        self._parts: list[bytes] = []
        self._size = 0

    def feed(self, chunk: bytes) -> list[bytes]:
        """The lines `chunk` completes (without their newline); keeps the unfinished rest."""
        lines: list[bytes] = []
        start = 0
        while (end := chunk.find(b"\n", start)) != -1:
            if self._size + end - start > self.limit:
                raise MessageTooLarge(self._size + end - start)
            piece = chunk[start:end]
            lines.append(b"".join([*self._parts, piece]) if self._parts else piece)
            self._parts, self._size = [], 0
            start = end + 1
        if start < len(chunk):
            rest = chunk[start:]
            self._size += len(rest)
            if self._size > self.limit:
                raise MessageTooLarge(self._size)
            self._parts.append(rest)
        return lines


@contextlib.asynccontextmanager
async def stdio_transport(
    params: Any, errlog: TextIO, *, on_fault: Callable[[str], None], limit: int | None = None
) -> AsyncIterator[tuple[Any, Any]]:
    """(read stream, write stream) for the session, like the SDK's `stdio_client(params)`.
    `on_fault` hears, in words for the person, why the server's output was refused."""
    if sys.platform == "win32":  # the SDK's own, with its Windows process handling
        from mcp import stdio_client

        async with stdio_client(params, errlog=errlog) as streams:
            yield streams
        return
    import anyio
    from mcp.client.stdio import get_default_environment

    process = await anyio.open_process(
        [params.command, *params.args],
        env=get_default_environment() | (params.env or {}),
        stderr=errlog,
        cwd=params.cwd,
        start_new_session=True,
    )
    pipes = _Pipes(process, limit if limit is not None else MAX_MESSAGE_BYTES, on_fault)
    async with anyio.create_task_group() as tg:
        tg.start_soon(pipes.read_stdout)
        tg.start_soon(pipes.write_stdin)
        try:
            yield pipes.read_stream, pipes.write_stream
        finally:
            with anyio.CancelScope(shield=True):
                await pipes.stop()
            tg.cancel_scope.cancel()


class _Pipes:
    """The server process and the two streams the session reads and writes."""

    def __init__(self, process: Any, limit: int, on_fault: Callable[[str], None]) -> None:
        import anyio

        self.process = process
        self.limit = limit
        self.on_fault = on_fault
        self.read_writer, self.read_stream = anyio.create_memory_object_stream[Any](0)
        self.write_stream, self.write_reader = anyio.create_memory_object_stream[Any](0)

    @staticmethod
    def parse(line: bytes) -> Any:
        import mcp_types as types
        from mcp.shared.message import SessionMessage

        try:
            return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
        except ValueError as e:  # shown to the session as the SDK's transport shows it
            return e

    async def read_stdout(self) -> None:
        import anyio

        reader = LineReader(self.limit)
        async with self.read_writer:
            try:
                async for chunk in self.process.stdout:
                    for line in reader.feed(chunk):
                        if line.strip():
                            await self.read_writer.send(self.parse(line))
            except MessageTooLarge as e:
                self.on_fault(
                    f"sent a message of more than {self.limit:,} bytes ({e.args[0]:,} so far, the limit for "
                    "one MCP message), so its connection was closed"
                )
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError):
                pass

    async def write_stdin(self) -> None:
        import anyio

        try:
            async with self.write_reader:
                async for message in self.write_reader:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                    await self.process.stdin.send(data.encode("utf-8"))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await self.read_writer.aclose()

    async def stop(self) -> None:
        """Stdin closed, a grace period, then the whole process group terminated (the SDK's way)."""
        import anyio
        from mcp.os.posix.utilities import terminate_posix_process_tree

        process = self.process
        with contextlib.suppress(Exception):
            await process.stdin.aclose()
        with anyio.move_on_after(STOP_GRACE):
            while process.returncode is None:
                await anyio.sleep(0.01)
        if process.returncode is None:
            await terminate_posix_process_tree(process, STOP_GRACE)
        for stream in (self.read_stream, self.write_stream, self.read_writer, self.write_reader):
            with contextlib.suppress(Exception):
                await stream.aclose()
        with anyio.move_on_after(STOP_GRACE), contextlib.suppress(Exception):
            await process.aclose()
