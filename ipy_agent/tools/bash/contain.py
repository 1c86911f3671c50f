"""Which containment one Bash call gets, decided by why it runs.

- No one approved it (it was judged read-only, or the caller did not say): the read-only
  sandbox, and nothing it starts outlives the call. Without a sandbox only `core_read_only`
  commands run (the permission check already asked for anything else; this is the last line
  for callers that skipped it), and their process group is killed at the end.
- Approved (a person, an allow rule, a mode, a hook): as before, unsandboxed, and a background
  `cmd &` the person approved keeps running after the call, as the tool's description promises.
  With `Agent(sandbox="always")` the sandbox may write the working directories only.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from ipy_agent.contract.tool import ToolError
from ipy_agent.contract.tool_context import ToolContext

from .process import RunResult, run_command
from .sandbox import (
    availability_note,
    bwrap_argv,
    core_read_only,
    denied_mounts,
    sandbox_available,
    sandbox_note,
    sandbox_usable,
    stopped_by_sandbox,
)

__all__ = ["contained_run"]


async def contained_run(
    command: str,
    cwd: Path,
    timeout_s: float,
    spill: Path | None,
    ctx: ToolContext,
    *,
    unsandboxed: bool = False,
) -> tuple[RunResult, list[str]]:
    """Run `command` contained as its approval requires; (result, notes for the model)."""
    notes: list[str] = []
    if not ctx.approved:
        if not sandbox_usable(ctx):
            if not core_read_only(command):
                raise ToolError(
                    "Not run: no one approved this command and it cannot be sandboxed here. "
                    f"{availability_note(ctx)} Ask the person, or use Read, Grep and Glob instead."
                )
            return await run_command(command, str(cwd), timeout_s, spill, end_group=True), notes
        found = await asyncio.to_thread(denied_mounts, ctx)
        if found is None:
            raise ToolError(
                "Not run: the working directories hold too many files to mask the ones your Read deny rules cover, "
                "so this command cannot be sandboxed. Call Bash again with `dangerouslyDisableSandbox: true` "
                "to ask the person, or use Read, Grep and Glob instead."
            )
        run = await run_command(
            command,
            str(cwd),
            timeout_s,
            spill,
            end_group=True,
            wrap=lambda side: bwrap_argv(ctx=ctx, cwd=str(cwd), access="read-only", side_files=[side], masks=found),
        )
        if (what := stopped_by_sandbox(run.output, run.exit_code)) is not None:
            notes.append(sandbox_note(what))
        return run, notes
    if ctx.sandbox == "always" and not unsandboxed and sandbox_available():
        masks = await asyncio.to_thread(denied_mounts, ctx)
        if masks is not None:
            hidden = masks
            return await run_command(
                command,
                str(cwd),
                timeout_s,
                spill,
                wrap=lambda side: bwrap_argv(
                    ctx=ctx, cwd=str(cwd), access="write-workdirs", side_files=[side], masks=hidden
                ),
            ), notes
    return await run_command(command, str(cwd), timeout_s, spill), notes
