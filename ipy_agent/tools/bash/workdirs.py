"""Where a read-only command reads: inside the working directories, or it asks.

A command the classifier calls read-only still asks when it goes (`cd`) or reads outside the
project's working directories: reading `~/.ssh/id_rsa` is a read, and not one to do unasked.
Every word that may be a path is resolved against the directory the shell is in at that point,
symlinks included; words are not skipped by how they look: an option's attached value
(`-f/etc/passwd`, `--file=x`) is a path too, and only a few named devices are not files.
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Sequence
from pathlib import Path

from ipy_agent.contract.tool_context import ToolContext

from .deny import NO_PATH_ARGS
from .options import PATTERN_FIRST, path_candidates, supplies_pattern
from .syntax import SimpleCommand, Word, analyze, simple_commands
from .wrappers import program_name, unwrap

__all__ = ["inside_working_dirs", "leaves_working_dirs", "start_cwd"]

# Arguments of these are not files they read, so they need no working-directory check.
# Wrappers (`command`, `env`, `xargs`...) are looked through first, see `wrappers`.
_NO_PATH_ARGS = NO_PATH_ARGS | {"realpath", "readlink"}
# Devices that read or write nothing anyone keeps (`/dev/tcp/...` is a socket, not here).
_MAX_GLOB_MATCHES = 1000
_DEVICES = frozenset(
    {"/dev/null", "/dev/zero", "/dev/random", "/dev/urandom", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/tty"}
)


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
    # With xargs in the line, the other commands' words (echo's too) become its operands.
    xargs = any("xargs" in unwrap([c.name, *c.args])[0] for c in cmds if c.name is not None)
    if xargs and (why := _xargs_names_unknown(cmds, command)):
        return why
    walk = _Walk(ctx, start, xargs)
    for cmd in cmds:
        if why := walk.command(cmd):
            return why
    for r in analyze(command).redirects:
        if r.op in ("<", "<>") and r.target is not None and r.target.text:
            # Judged from every directory the line visits: the redirect may come before a `cd`.
            for d in walk.visited:
                target = os.path.expanduser(r.target.text)
                if not _harmless_device(target) and not walk.inside(Path(d) / target):
                    return f"the command reads {r.target.text!r}, outside the working directories"
    return None


class _Walk:
    """A line's commands in order, from the directory each runs in (`cd` moves it)."""

    def __init__(self, ctx: ToolContext, start: Path, xargs: bool) -> None:
        self.ctx, self.xargs = ctx, xargs
        self.readable = (os.path.realpath(ctx.spill_dir),) if ctx.spill_dir else ()
        self.cur = str(start)
        self.visited = [self.cur]

    def inside(self, path: Path) -> bool:
        return inside_working_dirs(path, self.ctx, self.readable)

    def command(self, cmd: SimpleCommand) -> str | None:
        # `command cat /etc/x`, `env cat /etc/x`: judge the program that runs, not the wrapper.
        _wrappers, words = unwrap([cmd.name, *cmd.args] if cmd.name else [])
        name = program_name(words[0]) if words else None
        args = words[1:]
        if name == "cd":
            return self._cd(cmd, args)
        if name in _NO_PATH_ARGS and not self.xargs:
            return None
        # grep's pattern, sed's script, jq's filter: the first operand, unless an option gave it.
        skip = not self.xargs and name in PATTERN_FIRST and not any(supplies_pattern(a.text or "") for a in args)
        for a in cmd.args if self.xargs else args:
            why, skip = self._operand(cmd, a, skip)
            if why:
                return why
        return None

    def _cd(self, cmd: SimpleCommand, args: list[Word]) -> str | None:
        operands = [a for a in args if not (a.text or "").startswith("-") or "=" in (a.text or "")]
        target = operands[0].text if operands else None
        if target in (None, "-"):
            return f"{cmd.text!r} goes to a directory only known when the shell runs"
        self.cur = os.path.realpath(os.path.join(self.cur, os.path.expanduser(target)))
        if not inside_working_dirs(Path(self.cur), self.ctx):
            return f"{cmd.text!r} leaves the working directories"
        self.visited.append(self.cur)
        return None

    def _operand(self, cmd: SimpleCommand, a: Word, skip_pattern: bool) -> tuple[str | None, bool]:
        """Why operand `a` reads outside, if it does; and whether the pattern is still to come."""
        if a.glob:
            if (matches := _glob_matches(a.source, self.cur)) is None:
                return f"the pattern {a.source!r} may name files outside the working directories", skip_pattern
            outside = next((m for m in matches if not self.inside(Path(m))), None)
            if outside is not None:
                return f"{cmd.text!r} reads {outside!r} (from {a.source!r}), outside the working directories", False
            skip_pattern = False  # what a glob expands to is files, whatever comes first
            if a.text is None:
                return None, False  # no match leaves the word as written: a name that starts with `*`
        if a.text is None:
            return f"argument {a.source!r} is only known when the shell runs and may name any file", skip_pattern
        if skip_pattern and not a.text.startswith("-"):
            # Taken for the pattern; but if an option took it as its value, it is a file.
            taken = Path(self.cur) / os.path.expanduser(a.text)
            if os.path.lexists(taken) and not self.inside(taken):
                return f"{cmd.text!r} reads {a.text!r}, outside the working directories", False
            return None, False
        for value in path_candidates(a.text):
            # Every operand is resolved, symlinks included: `cat link` may read `/etc/x`.
            if not _harmless_device(value) and not self.inside(Path(self.cur) / os.path.expanduser(value)):
                return f"{cmd.text!r} reads {value!r}, outside the working directories", skip_pattern
        return None, skip_pattern


# With xargs, these may feed it names (what they print are paths under the directories named,
# which are checked), and these filters pass names through when they read no file themselves.
_NAME_PRODUCERS = frozenset({"find", "ls", "fd", "echo", "printf"})
_NAME_LISTING_FLAGS = re.compile(r"^-[a-zA-Z]*[lL][a-zA-Z]*$|^--files(-with-matches|-without-match)?$")
_FILTERS = {
    "head": 0,
    "tail": 0,
    "sort": 0,
    "uniq": 0,
    "cut": 0,
    "tr": 2,
    "grep": 1,
    "egrep": 1,
    "fgrep": 1,
    "rg": 1,
    "sed": 1,
    "awk": 1,
    "wc": 0,
}


def _xargs_names_unknown(cmds: Sequence[SimpleCommand], command: str) -> str | None:
    """Why xargs may be handed names no check sees: read from a file (`xargs cat < list`,
    `cat list | xargs cat`) rather than listed by a program that only prints names."""
    feeds = [c for c in cmds if c.name is not None and "xargs" in unwrap([c.name, *c.args])[0]]
    if any(r.op == "<" for r in analyze(command).redirects) or any(
        (w.text or "")[:2] == "-a" or (w.text or "").startswith("--arg-file") for c in feeds for w in c.args
    ):
        return "xargs reads names from a file, which may name any file"
    for cmd in cmds:
        wrappers, words = unwrap([cmd.name, *cmd.args] if cmd.name else [])
        if "xargs" in wrappers or not words:
            continue
        name = program_name(words[0]) or ""
        args = [w.text or "" for w in words[1:]]
        if name in _NAME_PRODUCERS or name in ("cd", "true", "pwd"):
            continue
        if name == "git" and any(a in ("ls-files", "ls-tree", "--name-only", "--name-status") for a in args):
            continue
        if name in ("grep", "egrep", "fgrep", "rg") and any(_NAME_LISTING_FLAGS.match(a) for a in args):
            continue
        operands = [a for a in args if not a.startswith("-")]
        if name in _FILTERS and len(operands) <= _FILTERS[name]:
            continue
        return f"xargs may get names from what {name!r} prints, which may name any file"
    return None


def _glob_matches(source: str, cwd: str) -> list[str] | None:
    """What a plain glob (`*.py`, `src/*`) names, as bash would expand it in `cwd`; None when the
    word holds more than a glob (quotes, expansions, braces) or matches too much to check."""
    if any(c in source for c in "'\"$`\\{~"):
        return None
    if any(part.startswith(".") and any(c in part for c in "*?[") for part in source.split("/")):
        return None  # `.*` matches `..` in bash versions without globskipdots
    matches = []
    for m in glob.iglob(os.path.join(cwd, source)):  # like bash: `*` skips dot files
        matches.append(m)
        if len(matches) > _MAX_GLOB_MATCHES:
            return None
    return matches


def _harmless_device(value: str) -> bool:
    return os.path.normpath(value) in _DEVICES
