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
- An EXIT trap writes the shell's final `pwd -P` to a side file, so `cd` can carry over.
- The environment has no credentials (`runtime.secrets`); `wrap` puts the shell inside the OS
  sandbox (`bash.sandbox`), and `end_group` stops whatever the command left running in the
  background once it exits (for commands no one approved). Spill files stop at MAX_SPILL_BYTES.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import shlex
import signal
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ipy_agent.base.secrets import tool_environ
from ipy_agent.runtime import budget

__all__ = ["OUTPUT_LIMIT", "RunResult", "elide_middle", "run_command"]

OUTPUT_LIMIT = 30_000  # characters the model gets, note included
_KEEP = 64 * 1024  # bytes of head and of tail kept in memory once output is large
_KILL_GRACE = 1.0  # seconds between SIGTERM and SIGKILL
_DRAIN_GRACE = 0.5  # seconds to collect output still in the pipe after the shell exits
_GONE_WAIT = 10.0  # seconds at most to wait for a killed group to disappear


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
            self._file = await asyncio.to_thread(lambda: open(path, "wb"))
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


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is already gone
        os.killpg(pgid, sig)


def _group_alive(pgid: int) -> bool:
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
    _signal_group(proc.pid, signal.SIGTERM)
    try:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), _KILL_GRACE)
    finally:
        # Also runs when a second cancellation lands here, so nothing survives either way.
        await _kill_group(proc.pid)


async def _kill_group(pgid: int) -> None:
    _signal_group(pgid, signal.SIGKILL)
    waited = 0.0
    while waited < _GONE_WAIT and await asyncio.to_thread(_group_alive, pgid):
        await asyncio.sleep(0.02)
        waited += 0.02


async def run_command(
    command: str,
    cwd: str,
    timeout_s: float,
    spill_path: Path | None,
    *,
    wrap: Callable[[str], list[str]] | None = None,
    end_group: bool = False,
) -> RunResult:
    """Run `command`; on timeout stop its group and return; on cancellation stop it and re-raise.

    `wrap(side_file)` gives the argv to run the shell under (the sandbox), which must let the
    shell write `side_file`; with `end_group` the group is killed once the shell exits."""
    fd, cwd_file = tempfile.mkstemp(prefix="ipy_agent_cwd_")
    os.close(fd)
    # Same line as the command, so bash's "line N" in error messages matches what the model wrote.
    script = f"trap 'pwd -P >| {shlex.quote(cwd_file)} 2>/dev/null' EXIT; {command}"
    # pip checks PyPI for a newer pip once a week, even in `pip list`: a network call the
    # classifier calls read-only must not make.
    env = {
        **tool_environ(),
        "GIT_TERMINAL_PROMPT": "0",
        "PAGER": "cat",
        "GIT_PAGER": "cat",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
    collector = _Collector(spill_path)
    rfd, wfd = os.pipe()
    try:
        prefix = wrap(cwd_file) if wrap is not None else []
        proc = await asyncio.create_subprocess_exec(
            *prefix,
            "/bin/bash",
            "-c",
            script,
            cwd=cwd,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=wfd,
            stderr=wfd,
            start_new_session=True,
        )
    except BaseException:
        os.close(rfd)
        os.unlink(cwd_file)
        raise
    finally:
        os.close(wfd)

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
        final_cwd = await asyncio.to_thread(_take_cwd, cwd_file)
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


def _take_cwd(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            text = f.read().rstrip("\n")
        return text or None
    finally:
        os.unlink(path)
