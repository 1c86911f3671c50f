"""Running one shell command: process group, timeout, interrupt, capped output, final cwd.

Kept apart from the tool so the mechanics can be read (and tested) on their own:
- The command runs under `/bin/bash -c` in a new session, so it and everything it starts form
  one process group; a timeout or an interrupt signals the whole group (SIGTERM, then SIGKILL
  after a short grace), and no `sleep` left in the background outlives the call.
- stdout and stderr share one pipe, so the text reads in the order it was written. The pipe is
  ours, not asyncio's: asyncio's `Process.wait()` also waits for its pipes to close, which a
  background child that inherited them may never do.
- Output is kept whole while small; past that only its head and tail stay in memory and the
  whole stream goes to a spill file, so a command printing gigabytes costs disk, not memory.
- An EXIT trap writes the shell's final `pwd -P` to an inherited pipe, so `cd` can carry over;
  at most 4 KB of it is read, once the shell is gone (no file the command could fill is read).
- The environment has no credentials (`runtime.secrets`); a `Launch` puts the shell inside the
  OS sandbox (`bash.sandbox`), and `end_group` stops whatever the command left running in the
  background once it exits (for sandboxed commands). Spill files stop at MAX_SPILL_BYTES.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ipy_agent.base.secrets import tool_environ
from ipy_agent.runtime import budget

__all__ = [
    "OUTPUT_LIMIT",
    "Launch",
    "RunResult",
    "elide_middle",
    "group_alive",
    "run_command",
    "signal_group",
    "tool_env",
]

OUTPUT_LIMIT = 30_000  # characters the model gets, note included
_KEEP = 64 * 1024  # bytes of head and of tail kept in memory once output is large
_KILL_GRACE = 1.0  # seconds between SIGTERM and SIGKILL
_DRAIN_GRACE = 0.5  # seconds to collect output still in the pipe after the shell exits
_GONE_WAIT = 10.0  # seconds at most to wait for a killed group to disappear
_CWD_BYTES = 4096  # read from the final-cwd pipe, at most


@dataclass(frozen=True)
class Launch:
    """How the shell starts inside something else (the sandbox): `argv` runs `/bin/bash -c
    script`, which starts with `script_prefix` (resource limits); `pass_fds` are inherited by
    the child (the seccomp filter) and closed here once it started; `on_exit` is for the caller
    to call when the command ended."""

    argv: list[str]
    script_prefix: str = ""
    pass_fds: tuple[int, ...] = ()
    # Called once the command (and what it left) ended: removes the sandbox's placeholders.
    on_exit: Callable[[], None] | None = None


@dataclass(frozen=True)
class RunResult:
    output: str  # what the model reads: whole, or head and tail with a note in between
    exit_code: int | None  # None when the command was stopped by the timeout
    timed_out: bool
    total_chars: int
    total_lines: int
    spill_path: Path | None  # the whole output, when it was cut and a spill directory exists
    final_cwd: str | None  # the shell's last `pwd -P`, when it got that far


class _Collector:
    """Counts everything, keeps head and tail, streams the whole text to a file once large."""

    def __init__(self, spill_path: Path | None) -> None:
        self.buf = bytearray()
        self.tail = bytearray()
        self.large = False
        self.total_bytes = 0
        self.newlines = 0
        self.last_byte = b""
        self.total_chars = 0
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.spill_path = spill_path
        self._file: BinaryIO | None = None
        self._spilled = 0

    async def feed(self, chunk: bytes) -> None:
        self.total_bytes += len(chunk)
        self.newlines += chunk.count(b"\n")
        self.last_byte = chunk[-1:]
        self.total_chars += len(self._decoder.decode(chunk))
        if not self.large:
            self.buf += chunk
            if len(self.buf) > 2 * _KEEP:
                self.large = True
                self.tail = self.buf[_KEEP:]
                await self._spill(bytes(self.buf))
                del self.buf[_KEEP:]
        else:
            self.tail += chunk
            del self.tail[: max(0, len(self.tail) - _KEEP)]
            await self._spill(chunk)

    async def _spill(self, data: bytes) -> None:
        if self.spill_path is None:
            return
        if self._file is None:
            self.spill_path.parent.mkdir(parents=True, exist_ok=True)
            path = self.spill_path
            self._file = await asyncio.to_thread(lambda: open(path, "wb"))  # noqa: SIM115 (closed in close())
        room = budget.MAX_SPILL_BYTES - self._spilled
        self._spilled += len(data)
        if room > 0:
            await asyncio.to_thread(self._file.write, data[:room])

    async def _close_spill(self) -> None:
        if self._file is not None:
            if self._spilled > budget.MAX_SPILL_BYTES:
                note = budget.spill_note(self._spilled - budget.MAX_SPILL_BYTES).encode()
                await asyncio.to_thread(self._file.write, note)
            await asyncio.to_thread(self._file.close)

    async def finish(self) -> tuple[str, Path | None]:
        self.total_chars += len(self._decoder.decode(b"", final=True))
        if not self.large:
            text = self.buf.decode("utf-8", "replace")
            if len(text) <= OUTPUT_LIMIT:
                return text, None
            await self._spill(bytes(self.buf))
            head, tail = text, text
        else:
            head = self.buf.decode("utf-8", "replace")
            tail = self.tail.decode("utf-8", "replace")
        await self._close_spill()
        path = self.spill_path if self._file is not None else None
        return elide_middle(head, tail, self.total_chars, self.lines, path), path

    @property
    def lines(self) -> int:
        return self.newlines + (1 if self.total_bytes and self.last_byte != b"\n" else 0)


def elide_middle(head: str, tail: str, total_chars: int, total_lines: int, path: Path | None) -> str:
    """Head and tail of a long text with a note in the middle; at most OUTPUT_LIMIT chars."""
    half = (OUTPUT_LIMIT - 400) // 2
    first, last = head[:half], tail[-half:]
    # Cut at line ends when that loses little, so the model does not read half a line.
    if (nl := first.rfind("\n")) > half // 2:
        first = first[: nl + 1]
    if 0 <= (nl := last.find("\n")) < half // 2:
        last = last[nl + 1 :]
    cut_chars = total_chars - len(first) - len(last)
    cut_lines = max(0, total_lines - first.count("\n") - last.count("\n") - 1)
    where = (
        f"The full output is saved in {path}: Read it with offset/limit, or Grep it."
        if path is not None
        else "The full output was not saved; rerun with a narrower command (e.g. pipe to head, tail or grep)."
    )
    note = f"\n\n... [{cut_chars:,} characters, about {cut_lines:,} lines, cut from the middle] {where} ...\n\n"
    return first + note + last


def signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is already gone
        os.killpg(pgid, sig)


def group_alive(pgid: int) -> bool:
    """Whether any process of the group still runs (zombies waiting to be reaped do not count:
    PID 1 in a container may never reap them)."""
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    try:
        entries = os.listdir("/proc")
    except OSError:
        return True  # no /proc (macOS): the signal check above is all there is
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] != "Z":
            return True
    return False


async def _stop_group(proc: asyncio.subprocess.Process) -> None:
    """SIGTERM the whole group, give it a moment, then SIGKILL whatever is left and wait until
    it is gone: SIGKILL is delivered, not done, when `kill` returns, and a caller that reports
    "stopped" must be telling the truth even on a busy machine."""
    signal_group(proc.pid, signal.SIGTERM)
    try:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), _KILL_GRACE)
    finally:
        # Also runs when a second cancellation lands here, so nothing survives either way.
        await _kill_group(proc.pid)


async def _kill_group(pgid: int) -> None:
    signal_group(pgid, signal.SIGKILL)
    waited = 0.0
    while waited < _GONE_WAIT and await asyncio.to_thread(group_alive, pgid):
        await asyncio.sleep(0.02)
        waited += 0.02


async def run_command(
    command: str,
    cwd: str,
    timeout_s: float,
    spill_path: Path | None,
    *,
    launch: Launch | None = None,
    end_group: bool = False,
) -> RunResult:
    """Run `command`; on timeout stop its group and return; on cancellation stop it and re-raise.

    `launch` runs the shell inside the sandbox; with `end_group` the group is killed once the
    shell exits."""
    cwd_read, cwd_write = os.pipe()
    # Same line as the command, so bash's "line N" in error messages matches what the model wrote.
    # A NUL before the path: whatever the command itself wrote to the pipe comes before it.
    trap = f"trap 'printf \\\\0 >&{cwd_write} 2>/dev/null; pwd -P >&{cwd_write} 2>/dev/null' EXIT; "
    script = (launch.script_prefix if launch else "") + trap + command
    env = tool_env()
    collector = _Collector(spill_path)
    rfd, wfd = os.pipe()
    passed = launch.pass_fds if launch else ()
    try:
        proc = await asyncio.create_subprocess_exec(
            *(launch.argv if launch else []),
            "/bin/bash",
            "-c",
            script,
            cwd=cwd,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=wfd,
            stderr=wfd,
            start_new_session=True,
            pass_fds=(cwd_write, *passed),
        )
    except BaseException:
        os.close(rfd)
        os.close(cwd_read)
        raise
    finally:
        for fd in (wfd, cwd_write, *passed):
            with contextlib.suppress(OSError):
                os.close(fd)

    reader = asyncio.StreamReader(limit=2**20)
    pipe = os.fdopen(rfd, "rb", 0)
    transport: asyncio.ReadTransport | None = None
    pumping: asyncio.Future[None] | None = None

    async def pump() -> None:
        while chunk := await reader.read(65536):
            await collector.feed(chunk)

    timed_out = False
    try:
        # From here on the group runs: a cancellation at any await below must stop it, the
        # first ones included (the command may be well under way before the pipe is connected).
        try:
            loop = asyncio.get_running_loop()
            transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
            pumping = asyncio.ensure_future(pump())
            await asyncio.wait_for(proc.wait(), timeout_s)
        except TimeoutError:
            timed_out = True
            await _stop_group(proc)
        except asyncio.CancelledError:
            await _stop_group(proc)
            raise
        if end_group:
            await _kill_group(proc.pid)  # nothing it started outlives the call
        if pumping is not None:
            with contextlib.suppress(TimeoutError):  # a background child still holds the pipe; keep what arrived
                await asyncio.wait_for(asyncio.shield(pumping), _DRAIN_GRACE)
    finally:
        if pumping is not None:
            pumping.cancel()
        if transport is not None:
            transport.close()
        else:
            pipe.close()
        final_cwd = _take_cwd(cwd_read)
    text, path = await collector.finish()
    return RunResult(
        output=text,
        exit_code=None if timed_out else proc.returncode,
        timed_out=timed_out,
        total_chars=collector.total_chars,
        total_lines=collector.lines,
        spill_path=path,
        final_cwd=None if timed_out else final_cwd,
    )


def tool_env() -> dict[str, str]:
    """The environment of a command: no credentials, no pager, no prompt for a git password."""
    # pip checks PyPI for a newer pip once a week, even in `pip list`: a network call the
    # classifier calls read-only must not make.
    return {
        **tool_environ(),
        "GIT_TERMINAL_PROMPT": "0",
        "PAGER": "cat",
        "GIT_PAGER": "cat",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }


def _take_cwd(fd: int) -> str | None:
    """The path after the last NUL of what the pipe holds now (at most _CWD_BYTES), or None.
    The shell is gone; a process it left may still hold the pipe, so nothing here waits."""
    data = b""
    try:
        os.set_blocking(fd, False)
        while len(data) < _CWD_BYTES:
            chunk = os.read(fd, _CWD_BYTES - len(data))
            if not chunk:
                break
            data += chunk
    except BlockingIOError:
        pass
    finally:
        os.close(fd)
    if b"\0" not in data:
        return None
    path = data.rpartition(b"\0")[2].removesuffix(b"\n").decode("utf-8", "surrogateescape")
    return path if path.startswith("/") else None
