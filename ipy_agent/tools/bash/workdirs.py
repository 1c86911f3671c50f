"""Where a read-only command reads: inside the working directories, or it asks.

A command the classifier calls read-only still asks when it goes (`cd`) or reads outside the
project's working directories: reading `~/.ssh/id_rsa` is a read, and not one to do unasked.
Every word that may be a path is resolved against the directory the shell is in at that point,
symlinks included; words are not skipped by how they look: an option's attached value
(`-f/etc/passwd`, `--file=x`) is a path too, and only a few named devices are not files.
"""

from __future__ import annotations

import os
from pathlib import Path

from ...runtime.tool import ToolContext
from .deny import NO_PATH_ARGS
from .options import path_candidates
from .syntax import analyze, simple_commands
from .wrappers import program_name, unwrap

__all__ = ["inside_working_dirs", "start_cwd", "leaves_working_dirs"]

# Arguments of these are not files they read, so they need no working-directory check.
# Wrappers (`command`, `env`, `xargs`...) are looked through first, see `wrappers`.
_NO_PATH_ARGS = NO_PATH_ARGS | {"realpath", "readlink"}
# Devices that read or write nothing anyone keeps (`/dev/tcp/...` is a socket, not here).
_DEVICES = frozenset({"/dev/null", "/dev/zero", "/dev/random", "/dev/urandom", "/dev/stdin", "/dev/stdout",
                      "/dev/stderr", "/dev/tty"})


def _real_dirs(ctx: ToolContext) -> list[str]:
    dirs = [os.path.realpath(d) for d in ctx.all_dirs()]
    return dirs + [os.path.normpath(str(d)) for d in ctx.all_dirs()]


def inside_working_dirs(path: Path, ctx: ToolContext, extra: tuple[str, ...] = ()) -> bool:
    p = os.path.realpath(path)
    return any(p == d or p.startswith(d.rstrip(os.sep) + os.sep) for d in (*_real_dirs(ctx), *extra))


def start_cwd(ctx: ToolContext) -> Path:
    saved = ctx.session.get("bash_cwd")
    if saved and os.path.isdir(saved) and inside_working_dirs(Path(saved), ctx):
        return Path(saved)
    return Path(ctx.cwd)


def leaves_working_dirs(command: str, start: Path, ctx: ToolContext) -> str | None:
    """Why a read-only command needs a look: it goes or reads outside the working dirs."""
    cmds = simple_commands(command)
    if cmds is None:
        return "the command could not be split into simple commands"
    readable = (os.path.realpath(ctx.spill_dir),) if ctx.spill_dir else ()
    # With xargs in the line, the other commands' words (echo's too) become its operands.
    xargs = any("xargs" in unwrap([c.name, *c.args])[0] for c in cmds if c.name is not None)
    cur = str(start)
    visited = [cur]
    for cmd in cmds:
        # `command cat /etc/x`, `env cat /etc/x`: judge the program that runs, not the wrapper.
        _wrappers, words = unwrap([cmd.name, *cmd.args] if cmd.name else [])
        name = program_name(words[0]) if words else None
        args = words[1:]
        if name == "cd":
            operands = [a for a in args if not (a.text or "").startswith("-") or "=" in (a.text or "")]
            target = operands[0].text if operands else None
            if target in (None, "-"):
                return f"{cmd.text!r} goes to a directory only known when the shell runs"
            cur = os.path.realpath(os.path.join(cur, os.path.expanduser(target)))
            if not inside_working_dirs(Path(cur), ctx):
                return f"{cmd.text!r} leaves the working directories"
            visited.append(cur)
            continue
        if name in _NO_PATH_ARGS and not xargs:
            continue
        for a in (cmd.args if xargs else args):
            if a.text is None:
                return f"argument {a.source!r} is only known when the shell runs and may name any file"
            for value in path_candidates(a.text):
                # Every operand is resolved, symlinks included: `cat link` may read `/etc/x`.
                if not _harmless_device(value) and not inside_working_dirs(Path(cur) / os.path.expanduser(value), ctx, readable):
                    return f"{cmd.text!r} reads {value!r}, outside the working directories"
    for r in analyze(command).redirects:
        if r.op in ("<", "<>") and r.target is not None and r.target.text:
            # Judged from every directory the line visits: the redirect may come before a `cd`.
            for d in visited:
                target = os.path.expanduser(r.target.text)
                if not _harmless_device(target) and not inside_working_dirs(Path(d) / target, ctx, readable):
                    return f"the command reads {r.target.text!r}, outside the working directories"
    return None


def _harmless_device(value: str) -> bool:
    return os.path.normpath(value) in _DEVICES
