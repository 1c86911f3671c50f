"""Background commands: `Bash(run_in_background=true)` starts one, `BashOutput` reads what it
printed since the last read, `KillShell` stops its process group.

A background command belongs to one conversation (kept in `ToolContext.session`): it runs
until it ends, is killed, or the conversation is reset (`close`), and at the latest when the
process (the kernel) exits (`atexit`; a sandboxed one also dies with the kernel, bubblewrap's
`--die-with-parent`). It starts contained as its approval requires (contain.py): a sandboxed
command keeps its sandbox, its masks and limits, and nothing it leaves running outlives it.

Nothing here needs an event loop: the command runs under `subprocess.Popen` in a process group
of its own, one thread copies its output (stdout and stderr merged) to its log file in the
conversation's spill directory, capped at MAX_SPILL_BYTES like every spill file, and another
waits for it. A read takes the lines written since the previous read, through a filter if asked,
cut to the result limit with the log file's path for the rest.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import re
import signal
import subprocess
import tempfile
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ipy_agent.contract.decision import CallDecision
from ipy_agent.contract.tool import BackgroundTask, ToolError
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.runtime import budget

from .contain import contained_launch
from .logs import Read, duration_text, read_new_lines
from .process import Launch, group_alive, signal_group, tool_env
from .resources import Cgroup

__all__ = [
    "BackgroundShell",
    "BackgroundShells",
    "finished_note",
    "shells_of",
    "start_background",
    "started_any",
    "stop_group",
]

_SESSION_KEY = "background_shells"
_KILL_GRACE = 1.0  # seconds between SIGTERM and SIGKILL
_GONE_WAIT = 10.0  # seconds at most to wait for a killed group to disappear
_DRAIN_WAIT = 2.0  # seconds to let the copier finish once the command has ended
_CHUNK = 65536


@dataclass(eq=False)
class BackgroundShell:
    """One background command and its bookkeeping."""

    id: str
    command: str
    description: str
    log_path: Path
    proc: subprocess.Popen[bytes]
    cgroup: Cgroup | None
    end_group: bool  # stop whatever it leaves running once it ends (sandboxed and unapproved commands)
    on_exit: Callable[[], None] | None = None  # the sandbox's cleanup (`Launch.on_exit`), once it ended
    started: float = field(default_factory=time.time)
    ended: float | None = None
    exit_code: int | None = None
    killed: bool = False
    announced: bool = False
    written: int = 0  # bytes in the log file
    dropped: int = 0  # bytes past the spill cap, not saved
    read_offset: int = 0  # bytes of the log the model has read
    _copier: threading.Thread | None = None
    _done: threading.Event = field(default_factory=threading.Event)

    @property
    def running(self) -> bool:
        return not self._done.is_set()

    def state(self) -> str:
        now = self.ended or time.time()
        took = duration_text(now - self.started)
        if self.running:
            return f"running for {took}"
        if self.killed:
            return f"killed after {took}"
        return f"exited with code {self.exit_code} after {took}"

    def task(self) -> BackgroundTask:
        if self.running:
            state = "running"
        elif self.killed:
            state = "killed"
        else:
            state = f"exit {self.exit_code}"
        return BackgroundTask(
            id=self.id,
            kind="bash",
            description=self.description or self.command,
            state=state,
            started=self.started,
            ended=self.ended,
        )

    # --- the threads ----------------------------------------------------------------------
    def copy_output(self, fd: int) -> None:
        """Copy the pipe to the log until every writer closed it, up to the spill cap."""
        with open(fd, "rb", buffering=0) as pipe, open(self.log_path, "ab") as log:
            while chunk := pipe.read(_CHUNK):
                room = budget.MAX_SPILL_BYTES - self.written
                if room > 0:
                    log.write(chunk[:room])
                    log.flush()
                    self.written += min(room, len(chunk))
                self.dropped += max(0, len(chunk) - max(room, 0))
            if self.dropped:
                log.write(budget.spill_note(self.dropped).encode())

    def watch(self) -> None:
        """Wait for the command to end; then end what it left (when contained), and settle."""
        code = self.proc.wait()
        try:
            if self.end_group:
                stop_group(self.proc.pid, grace=0.0)
            if self._copier is not None:
                self._copier.join(_DRAIN_WAIT)
        finally:
            if self.cgroup is not None:
                with contextlib.suppress(OSError):
                    self.cgroup.remove()
            if self.on_exit is not None:
                self.on_exit()
            self.exit_code = code
            self.ended = time.time()
            self._done.set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)


class BackgroundShells:
    """The background commands of one conversation."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._shells: dict[str, BackgroundShell] = {}
        self._count = 0
        self._log_dir: Path | None = None
        _ALL.add(self)

    def start(
        self,
        command: str,
        *,
        cwd: Path,
        log_dir: Path | None,
        launch: Launch | None,
        cgroup: Cgroup | None,
        end_group: bool,
        description: str = "",
    ) -> BackgroundShell:
        with self._lock:
            self._count += 1
            shell_id = f"bash_{self._count}"
        folder = log_dir or self._own_dir()
        folder.mkdir(parents=True, exist_ok=True)
        log_path = folder / f"background-{shell_id}.log"
        log_path.write_bytes(b"")
        rfd, wfd = os.pipe()
        passed = launch.pass_fds if launch else ()
        try:
            proc = subprocess.Popen(
                [
                    *(launch.argv if launch else []),
                    "/bin/bash",
                    "-c",
                    (launch.script_prefix if launch else "") + command,
                ],
                cwd=str(cwd),
                env=tool_env(),
                stdin=subprocess.DEVNULL,
                stdout=wfd,
                stderr=wfd,
                start_new_session=True,
                pass_fds=passed,
            )
        except BaseException:
            os.close(rfd)
            raise
        finally:
            for fd in (wfd, *passed):
                with contextlib.suppress(OSError):
                    os.close(fd)
        shell = BackgroundShell(
            id=shell_id,
            command=command,
            description=description,
            log_path=log_path,
            proc=proc,
            cgroup=cgroup,
            end_group=end_group,
            on_exit=launch.on_exit if launch else None,
        )
        shell._copier = threading.Thread(target=shell.copy_output, args=(rfd,), name=f"{shell_id}-output", daemon=True)
        shell._copier.start()
        threading.Thread(target=shell.watch, name=f"{shell_id}-wait", daemon=True).start()
        with self._lock:
            self._shells[shell_id] = shell
        return shell

    def get(self, shell_id: str) -> BackgroundShell:
        with self._lock:
            shell = self._shells.get(shell_id.strip())
            known = ", ".join(self._shells) or "none"
        if shell is None:
            raise ToolError(
                f"No background command {shell_id!r} in this conversation (known: {known}). Start one with "
                "Bash and `run_in_background: true`; its result gives the id."
            )
        return shell

    def read(self, shell_id: str, pattern: str | None = None) -> Read:
        """The lines the command wrote since the last read (only those matching `pattern`,
        when given): the read position moves past every new line, matching or not."""
        shell = self.get(shell_id)
        try:
            wanted = re.compile(pattern) if pattern else None
        except re.error as e:
            raise ToolError(
                f"filter {pattern!r} is not a valid regular expression ({e}); fix it or leave it out"
            ) from e
        running = shell.running  # before reading: what a finished command wrote is all there
        with self._lock:
            start, end = shell.read_offset, shell.written
            lines, shown, text = read_new_lines(shell.log_path, start, end, wanted, complete_only=running)
            shell.read_offset = start + lines.consumed
        return Read(
            shell_id=shell.id,
            state=shell.state(),
            text=text,
            lines=lines.count,
            shown=shown,
            filtered=wanted is not None,
            log_path=str(shell.log_path),
        )

    def kill(self, shell_id: str) -> BackgroundShell:
        shell = self.get(shell_id)
        if shell.running:
            shell.killed = True
            stop_group(shell.proc.pid)
            shell.wait(_GONE_WAIT)
        return shell

    def tasks(self) -> list[BackgroundTask]:
        with self._lock:
            return [s.task() for s in self._shells.values()]

    def take_finished(self) -> list[BackgroundShell]:
        """Commands that ended on their own since the last call (each returned once)."""
        out = []
        with self._lock:
            for shell in self._shells.values():
                if not shell.running and not shell.announced:
                    shell.announced = True
                    if not shell.killed:
                        out.append(shell)
        return out

    def close(self) -> None:
        """Stop every command still running (the conversation is reset, or the kernel exits)."""
        with self._lock:
            shells = list(self._shells.values())
            self._shells.clear()
        for shell in shells:
            if shell.running:
                shell.killed = True
                stop_group(shell.proc.pid)
                shell.wait(_GONE_WAIT)

    def _own_dir(self) -> Path:
        if self._log_dir is None:
            self._log_dir = Path(tempfile.mkdtemp(prefix="ipy-agent-background-"))
        return self._log_dir


def started_any(session: dict[str, Any]) -> bool:
    """Whether this conversation has started a background command (without making the registry)."""
    shells = session.get(_SESSION_KEY)
    return isinstance(shells, BackgroundShells) and bool(shells.tasks())


def shells_of(session: dict[str, Any]) -> BackgroundShells:
    """This conversation's background commands (made at the first use)."""
    shells = session.get(_SESSION_KEY)
    if not isinstance(shells, BackgroundShells):
        shells = session[_SESSION_KEY] = BackgroundShells()
    return shells


async def start_background(
    command: str,
    cwd: Path,
    ctx: ToolContext,
    decision: CallDecision,
    *,
    description: str = "",
    unsandboxed: bool = False,
) -> BackgroundShell:
    """Start `command` in the background, contained as its approval requires (as in the
    foreground: a sandboxed command keeps the sandbox, and nothing it leaves outlives it)."""
    launch, cgroup = await contained_launch(command, cwd, ctx, decision, unsandboxed=unsandboxed)
    try:
        return await asyncio.to_thread(
            shells_of(ctx.session).start,
            command,
            cwd=cwd,
            log_dir=ctx.spill_dir,
            launch=launch,
            cgroup=cgroup,
            end_group=launch is not None or not decision.approved,
            description=description,
        )
    except BaseException:
        if cgroup is not None:
            with contextlib.suppress(OSError):
                cgroup.remove()
        if launch is not None and launch.on_exit is not None:
            launch.on_exit()  # never started: its placeholders go (releasing twice does nothing)
        raise


def finished_note(shell: BackgroundShell) -> str:
    """What the model is told at its next turn about a command that ended on its own."""
    unread = shell.written - shell.read_offset
    more = f" It wrote {unread:,} bytes you have not read: call BashOutput." if unread > 0 else ""
    what = shell.description or shell.command.splitlines()[0][:80]
    return f"Background command {shell.id} ({what}) {shell.state()}.{more}"


def stop_group(pgid: int, *, grace: float = _KILL_GRACE) -> None:
    """SIGTERM the group, give it `grace` seconds, SIGKILL the rest, and wait until it is gone."""
    if grace > 0 and group_alive(pgid):
        signal_group(pgid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and group_alive(pgid):
            time.sleep(0.02)
    signal_group(pgid, signal.SIGKILL)
    deadline = time.monotonic() + _GONE_WAIT
    while time.monotonic() < deadline and group_alive(pgid):
        time.sleep(0.02)


_ALL: weakref.WeakSet[BackgroundShells] = weakref.WeakSet()


@atexit.register
def _stop_all() -> None:
    """At exit, nothing a conversation started in the background goes on running."""
    for shells in list(_ALL):
        with contextlib.suppress(Exception):
            shells.close()
