"""A sandboxed command's start-up overhead, against running the same command bare.

`true` (or another command) is run by the Bash tool's own runner (`process.run_command`: a new session, the output
pipe, the final-cwd pipe) bare, and through `contain.contained_run` in each sandbox: the masks
looked for, the cgroup made and removed (root), the seccomp filter, bubblewrap and its mounts,
and, when the kernel runs as root, the launcher that drops the sandbox to an unprivileged user
(`sandbox_user`: a private mount namespace, the idmapped mounts). What is left over is what the
sandbox costs a command, whatever the command.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from ipy_agent.contract.decision import CallDecision, DecisionSource
from ipy_agent.contract.read_state import ReadState
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.permissions.rules import builtin_read_denies, read_deny_specs
from ipy_agent.tools.bash import contain, sandbox
from ipy_agent.tools.bash.process import run_command

__all__ = ["available", "bare_seconds", "sandboxed_seconds", "without_launcher"]

CWD = Path(tempfile.mkdtemp(prefix="ipy-agent-bench-sandbox-"))
(CWD / "notes.txt").write_text("hello\n")
DECIDED_BY: dict[str, DecisionSource] = {"read-only": "tool", "write-workdirs": "rule"}


def available() -> str | None:
    """Why no sandbox can be measured here, or None."""
    status = sandbox.sandbox_status()
    return None if status.available else status.reason


def _ctx(access: str, builtin_rules: bool = False) -> ToolContext:
    """No Read deny rules (as the peer is set up), or an Agent's built-in ones (`.env*` and the
    credential stores under HOME: the masks are then looked for in every shown directory)."""
    if not builtin_rules:
        return ToolContext(cwd=CWD, read_state=ReadState())
    deny = read_deny_specs(builtin_read_denies(), [], CWD, [CWD])
    return ToolContext(cwd=CWD, read_state=ReadState(), read_deny=deny)


def bare_seconds(calls: int, command: str = "true") -> float:
    async def go() -> None:
        for _ in range(calls):
            result = await run_command(command, str(CWD), 30, None, end_group=True)
            assert result.exit_code == 0, result.output

    start = time.perf_counter()
    asyncio.run(go())
    return (time.perf_counter() - start) / calls


def sandboxed_seconds(access: str, calls: int, command: str = "true", *, builtin_rules: bool = False) -> float:
    ctx, decision = _ctx(access, builtin_rules), CallDecision(source=DECIDED_BY[access])

    async def go() -> None:
        for _ in range(calls):
            result, _notes = await contain.contained_run(command, CWD, 30, None, ctx, decision)
            assert result.exit_code == 0, result.output

    start = time.perf_counter()
    asyncio.run(go())
    return (time.perf_counter() - start) / calls


@contextlib.contextmanager
def without_launcher() -> Iterator[None]:
    """bubblewrap started by the kernel's user itself, as before the launcher (as root: the
    launcher's own share of the overhead)."""
    saved = sandbox.launcher_argv
    sandbox.launcher_argv = lambda argv, shown: argv  # type: ignore[assignment]
    try:
        yield
    finally:
        sandbox.launcher_argv = saved  # type: ignore[assignment]
