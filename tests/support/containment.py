"""Shared by the OS-containment suites: run a Bash call as the lifecycle would after a decision,
listen on Unix sockets and count who knocks, and report a family's figures.

A family is a list of cases; each case is one attack, tried in each sandbox it applies to, and
"held" when the sandbox stopped it (the suite says how it knows). The figures are printed as
`[family] cases tried: N; held: M`, and the test fails on any case that did not hold.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from dataclasses import dataclass, field
from pathlib import Path

from ipy_agent.contract.decision import DecisionSource
from ipy_agent.contract.tool_context import SandboxLimits
from ipy_agent.tools.bash import BashInput, BashTool

from .tools import DecidedContext, tool_ctx

# Who let a call run, and the sandbox that gets: "tool" (judged read-only) -> read-only;
# "rule" / "mode" -> write-workdirs.
DECIDERS = ("tool", "mode")


def context(cwd: Path, decided_by: DecisionSource = "tool", **kw) -> DecidedContext:
    kw.setdefault("spill_dir", cwd.parent / f"spill-{cwd.name}")
    return tool_ctx(cwd, tool_use_id="toolu_c", decided_by=decided_by, **kw)


async def bash(ctx: DecidedContext, command: str, timeout_ms: int = 30_000) -> dict:
    tool = BashTool()
    out = await tool.call(BashInput(command=command, timeout=timeout_ms), ctx, ctx.decision)
    return tool.map_result(out, "toolu_c")


def small_limits() -> SandboxLimits:
    """Limits small enough that a bomb reaches them in a moment on a 2-core machine."""
    return SandboxLimits(memory=256 * 1024**2, processes=48, tmp=16 * 1024**2)


class UnixListener:
    """A Unix socket (pathname, or abstract when `path` starts with NUL) counting connections
    (stream) or datagrams (dgram)."""

    def __init__(self, path: str, kind: int = socket.SOCK_STREAM) -> None:
        self.path = path
        self.kind = kind
        self.sock = socket.socket(socket.AF_UNIX, kind)
        self.sock.bind(path)
        if kind == socket.SOCK_STREAM:
            self.sock.listen(16)
        self.sock.settimeout(0.1)
        self.count = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                if self.kind == socket.SOCK_STREAM:
                    conn, _ = self.sock.accept()
                    conn.close()
                else:
                    self.sock.recv(4096)
            except OSError:
                continue
            self.count += 1

    def close(self) -> int:
        self._stop.set()
        self._thread.join()
        self.sock.close()
        if not self.path.startswith("\0"):
            with contextlib.suppress(OSError):
                os.unlink(self.path)
        return self.count


@dataclass
class Family:
    """Cases tried and held, printed at the end of the test (`report`)."""

    name: str
    tried: int = 0
    failed: list[str] = field(default_factory=list)

    def record(self, case: str, held: bool, why: str = "") -> None:
        self.tried += 1
        if not held:
            self.failed.append(f"{case}: {why}")

    def report(self) -> None:
        print(f"\n[{self.name}] cases tried: {self.tried}; held: {self.tried - len(self.failed)}")
        for line in self.failed:
            print(f"[{self.name}]   did not hold: {line}")
        assert not self.failed, f"{len(self.failed)} of {self.tried} cases did not hold:\n" + "\n".join(self.failed)
