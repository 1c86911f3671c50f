"""Which containment one Bash call gets, decided by who let it run.

- No one approved it (the classifier judged it read-only, or the caller did not say): the
  read-only sandbox.
- A rule, a hook or a mode (bypassPermissions, acceptEdits) approved it, but no person looked
  at this call: the write-workdirs sandbox (writes to the working directories only, the host's
  network). A rule's prefix says nothing about the rest of the line, and a mode approves
  everything, so the OS keeps what the rules say: denied files are masked, Unix sockets refused.
- A person approved this very call: as before, unsandboxed, and a background `cmd &` keeps
  running after the call, as the tool's description promises. With `Agent(sandbox="always")`
  the write-workdirs sandbox, unless the person approved leaving it
  (`dangerouslyDisableSandbox`).

Every sandbox gets the masks, the seccomp filter and the limits; nothing it starts outlives the
call. Where no sandbox can be made (or the setting is "off"), what no one approved runs only if
it is `core_read_only` (the permission check already asked for anything else; this is the last
line for callers that skipped it), and what someone approved runs unsandboxed.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from ipy_agent.contract.decision import CallDecision
from ipy_agent.contract.tool import ToolError
from ipy_agent.contract.tool_context import ToolContext

from .core import core_read_only
from .masks import mask_paths
from .notes import availability_note, sandbox_note, stopped_by_sandbox
from .process import Launch, RunResult, run_command
from .resources import Cgroup, make_cgroup, shell_limits
from .sandbox import Access, bwrap_argv, sandbox_usable, visible_roots
from .sandbox_user import join_in_launcher, pass_mapping
from .seccomp import seccomp_fd
from .surface_mounts import Held

__all__ = ["contained_launch", "contained_run", "containment", "finish_cgroup", "limit_note"]


def containment(ctx: ToolContext, decision: CallDecision, *, unsandboxed: bool = False) -> Access | None:
    """The sandbox a call gets by who approved it (None: none), where one can be made."""
    if decision.by_person:
        return "write-workdirs" if ctx.sandbox == "always" and not unsandboxed else None
    if decision.approved:
        return "write-workdirs"  # a rule, a hook or a mode: no person saw this call
    return "read-only"


async def contained_launch(
    command: str, cwd: Path, ctx: ToolContext, decision: CallDecision, *, unsandboxed: bool = False
) -> tuple[Launch | None, Cgroup | None]:
    """How `command` must start, as its approval requires: inside the sandbox (a `Launch`, and
    the cgroup it joins, which the caller removes with `finish_cgroup`), or unsandboxed (None).
    Raises ToolError where it may not run at all."""
    access = containment(ctx, decision, unsandboxed=unsandboxed)
    if access is None or not sandbox_usable(ctx):
        if not decision.approved and not core_read_only(command):
            raise ToolError(
                "Not run: no one approved this command and it cannot be sandboxed here. "
                f"{availability_note(ctx)} Ask the person, or use Read, Grep and Glob instead."
            )
        return None, None
    masks = await asyncio.to_thread(mask_paths, ctx, visible_roots(ctx, access))
    if masks is None:
        raise ToolError(
            "Not run: your Read deny rules cover more files than the sandbox can mask (or it would have to "
            "walk too many to find them), so this command cannot be sandboxed. Call Bash again with "
            "`dangerouslyDisableSandbox: true` to ask the person, or use Read, Grep and Glob instead."
        )
    try:
        cgroup = await asyncio.to_thread(make_cgroup, ctx.sandbox_limits)
    except OSError as e:
        raise ToolError(
            f"Not run: the sandbox's cgroup (its memory and process limits) could not be made ({e}). "
            "Call Bash again with `dangerouslyDisableSandbox: true` to ask the person."
        ) from e
    held = Held()  # the placeholders for missing protected surfaces, removed when the command ends
    try:
        # A bubblewrap command line first: the filter's pipe is opened only once nothing is left to fail.
        sandbox_argv = await asyncio.to_thread(
            bwrap_argv, ctx=ctx, cwd=str(cwd), access=access, masks=masks, seccomp=-1, held=held
        )
        fd = seccomp_fd()
        assert fd is not None, "sandbox_usable implies a seccomp filter"
        sandbox_argv[sandbox_argv.index("--seccomp") + 1] = str(fd)
        passed = (fd, *pass_mapping(sandbox_argv))  # a root kernel's launcher: the id maps, made once
    except BaseException:
        held.release()
        await asyncio.to_thread(finish_cgroup, cgroup)
        raise
    argv = sandbox_argv
    if cgroup is not None and not join_in_launcher(sandbox_argv, cgroup.dirs):
        argv = [*cgroup.join_argv(), *sandbox_argv]  # no launcher (the kernel is not root): a shell joins it
    return Launch(
        argv=argv,
        script_prefix=shell_limits(ctx.sandbox_limits, cgroup=cgroup is not None),
        pass_fds=passed,
        on_exit=held.release,
    ), cgroup


async def contained_run(
    command: str,
    cwd: Path,
    timeout_s: float,
    spill: Path | None,
    ctx: ToolContext,
    decision: CallDecision,
    *,
    unsandboxed: bool = False,
) -> tuple[RunResult, list[str]]:
    """Run `command` contained as its approval requires; (result, notes for the model)."""
    launch, cgroup = await contained_launch(command, cwd, ctx, decision, unsandboxed=unsandboxed)
    if launch is None:
        # Unsandboxed: what no one approved is a core command, and nothing it starts outlives it.
        return await run_command(command, str(cwd), timeout_s, spill, end_group=not decision.approved), []
    try:
        run = await run_command(command, str(cwd), timeout_s, spill, launch=launch, end_group=True)
    finally:
        if launch.on_exit is not None:
            launch.on_exit()
        limit = await asyncio.to_thread(finish_cgroup, cgroup)
    access = containment(ctx, decision, unsandboxed=unsandboxed) or "read-only"
    notes = []
    if limit is not None:
        notes.append(limit_note(limit, ctx))
    elif (what := stopped_by_sandbox(run.output, run.exit_code, access)) is not None:
        notes.append(sandbox_note(what, access))
    return run, notes


def finish_cgroup(cgroup: Cgroup | None) -> str | None:
    """Which cgroup limit stopped something, and the cgroup removed."""
    if cgroup is None:
        return None
    try:
        return cgroup.stopped_by()
    finally:
        cgroup.remove()


def limit_note(limit: str, ctx: ToolContext) -> str:
    limits = ctx.sandbox_limits
    amount = (
        f"{limits.memory / 1024**3:g} GiB of memory for all its processes"
        if limit == "memory"
        else f"{limits.processes} processes at once"
    )
    return (
        f"[sandbox] The command reached the sandbox's limit of {amount}; a process was refused or stopped. "
        "Make it use less (smaller inputs, fewer parallel jobs); the person can raise the limit with "
        "`Agent(sandbox_limits=...)`."
    )
