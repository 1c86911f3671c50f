"""What the model and the person are told about the sandbox: why a command failed in it, that
there is none here, that a working directory holds the home directory, and Bash's status line."""

from __future__ import annotations

import os

from ipy_agent.contract.tool_context import ToolContext

from .core import CORE_PROGRAMS
from .sandbox import Access, covered, sandbox_status, sandbox_usable
from .syntax import simple_commands
from .verdict import is_read_only_command

__all__ = ["availability_note", "exit_one_meaning", "home_note", "sandbox_note", "status_text", "stopped_by_sandbox"]

# What a command prints when the sandbox, not the command, was the obstacle.
_STOPPED = (
    ("Read-only file system", "writing a file ({where})"),
    ("No space left on device", "space in /tmp (the sandbox's temporary directories are size-limited)"),
    ("Network is unreachable", "a network connection (the sandbox has no network)"),
    ("Temporary failure in name resolution", "a network connection (the sandbox has no network)"),
    ("Could not resolve host", "a network connection (the sandbox has no network)"),
    ("Name or service not known", "a network connection (the sandbox has no network)"),
    ("Connection refused", "a network connection (the sandbox has no network: even 127.0.0.1 is its own)"),
    ("Operation not permitted", "an operation the sandbox forbids (Unix sockets among them)"),
    ("Permission denied", "a file the sandbox hides or keeps read-only"),
    ("Cannot allocate memory", "memory (the sandbox limits it)"),
    ("MemoryError", "memory (the sandbox limits it)"),
    ("Resource temporarily unavailable", "starting processes (the sandbox limits how many run at once)"),
)
_NETWORK = "a network connection"


def stopped_by_sandbox(output: str, exit_code: int | None, access: Access = "read-only") -> str | None:
    """What the sandbox seems to have stopped, for a failed sandboxed command; None otherwise."""
    if exit_code in (0, None):
        return None
    where = (
        "in the sandbox everything but a private /tmp is read-only"
        if access == "read-only"
        else "in the sandbox only the working directories and a private /tmp are writable"
    )
    for marker, what in _STOPPED:
        if marker in output and not (access == "write-workdirs" and what.startswith(_NETWORK)):
            return what.format(where=where)
    return None


def sandbox_note(what: str, access: Access = "read-only") -> str:
    if access == "read-only":
        return (
            f"[sandbox] This command ran without asking because it looked read-only, so it ran in the read-only "
            f"sandbox: no writes, no network, an empty private /tmp, an empty read-only HOME, only the working "
            f"directories and system directories visible, denied files masked. It seems to have failed on {what}. "
            f"If it really needs that, call Bash again with `dangerouslyDisableSandbox: true`: the person is then "
            f"asked to approve running it unsandboxed. Otherwise change the command so it only reads."
        )
    return (
        f"[sandbox] A rule or the permission mode let this command run without a person approving it, so it ran "
        f"in the sandbox: only the working directories and a private /tmp writable, no Unix sockets, denied files "
        f"masked, memory and processes limited. It seems to have failed on {what}. If it really needs that, call "
        f"Bash again with `dangerouslyDisableSandbox: true`: the person is then asked to approve running it "
        f"unsandboxed."
    )


def availability_note(ctx: ToolContext) -> str | None:
    """One line for the person when commands that no one approved cannot be sandboxed."""
    if sandbox_usable(ctx):
        return None
    why = "the sandbox setting is 'off'" if ctx.sandbox == "off" else sandbox_status().reason
    core = ", ".join(sorted(CORE_PROGRAMS - {"[", "true", "false"}))
    return (
        f"Bash has no OS sandbox: {why}. Only a small core of plain commands runs without asking ({core}); "
        "everything else asks first."
    )


def home_note(ctx: ToolContext) -> str | None:
    """One line for the person when a working directory is the home directory or above it."""
    home = os.path.realpath(os.path.expanduser("~"))
    wide = [str(d) for d in ctx.all_dirs() if covered(home, [os.path.realpath(d)])]
    if not wide:
        return None
    return (
        f"The working directory {', '.join(dict.fromkeys(wide))} holds your home directory: every tool may read "
        "what is in it. Credential stores stay hidden only as far as Read deny rules cover them (the sandbox "
        "masks what they cover); prefer a project directory."
    )


def status_text(ctx: ToolContext) -> tuple[str, bool]:
    """Bash's status: the sandbox and its limits (or why there is none), and a warning when a
    working directory holds the home directory; (text, whether it warns)."""
    note = availability_note(ctx)
    limits = ctx.sandbox_limits
    lines = [
        note
        or f"Bash sandbox: {ctx.sandbox} (commands no person approved run sandboxed: read-only when judged "
        "read-only, else writing the working directories only; denied files masked, no Unix sockets; "
        f"{_size(limits.memory)} memory, {limits.processes} processes, {_size(limits.tmp)} /tmp, "
        f"enforced by {sandbox_status().limits})."
    ]
    if (home := home_note(ctx)) is not None:
        lines.append(f"Warning: {home}")
    return "\n".join(lines), note is not None or home is not None


def _size(n: int) -> str:
    return f"{n / 1024**3:g} GiB" if n >= 1024**3 else f"{n / 1024**2:g} MiB"


# Exit status 1 of these, as the last command, answers a question ("no match", "they differ").
_EXIT_ONE_MEANS = {
    "grep": "no line matched",
    "egrep": "no line matched",
    "fgrep": "no line matched",
    "rg": "no line matched",
    "diff": "the inputs differ",
    "cmp": "the inputs differ",
    "find": "some paths could not be visited",
    "test": "the condition is false",
    "[": "the condition is false",
    "[[": "the condition is false",
}


def exit_one_meaning(command: str) -> str | None:
    """What exit status 1 of `command` answers ("no line matched"), when it is an answer, not a failure."""
    return _EXIT_ONE_MEANS.get(_last_program(command) or "")


def _last_program(command: str) -> str | None:
    cmds = simple_commands(command)
    if not cmds or cmds[-1].name is None:
        return None
    # With `a && b`, exit 1 may come from `a`; trust it only when everything before only reads.
    if any(not is_read_only_command(c.text) for c in cmds[:-1]):
        return None
    return cmds[-1].name.text
