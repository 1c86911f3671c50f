"""The OS sandbox for shell commands that run without anyone approving them.

Bash runs a command without asking when its classifier judges it read-only. A classifier always
has one more hole (a program whose arguments are code, a substitution the parser did not
report), so on Linux such a command also runs under bubblewrap, where the judgement no longer
matters: the working directories, the system's program and library directories, the Python
prefix and the git repository they are in are mounted read-only, /tmp is private and empty, HOME is empty and read-only, there is no network (a new
network namespace has only its own loopback), no capabilities, a new pid namespace (whatever
the command leaves in the background dies with it) and the files covered by Read deny rules are
masked (an empty file or an empty directory in their place).

Approved commands (a person, an allow rule, a mode, a hook) run as before, unsandboxed, unless
the setting is "always": then they run in a sandbox too, one that may write the working
directories and use the network, and nothing else.

Where no sandbox can be made (no bubblewrap, namespaces forbidden, macOS, or the setting "off"),
`sandbox_status()` says why, and auto-allow shrinks to `core_read_only`: a few programs whose
every argument form is known to only read and print, written without any shell expansion.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ipy_agent.contract.tool_context import ToolContext

__all__ = [
    "CORE_PROGRAMS",
    "SandboxStatus",
    "availability_note",
    "bwrap_argv",
    "core_read_only",
    "denied_mounts",
    "sandbox_available",
    "sandbox_note",
    "sandbox_status",
    "sandbox_usable",
    "stopped_by_sandbox",
]

Access = Literal["read-only", "write-workdirs"]

# Programs none of whose argument forms writes a file, runs a program or opens a connection,
# for every spelling of their options (GNU coreutils, grep, diff): what may still run without
# asking when there is no sandbox to catch a mistake. `sort` (-o, --compress-program), `uniq`
# (a second operand is written), `file` (-C), `tree` (-o), `date` (-s), `find`, `sed`, `awk`,
# `git`, `jq` and every interpreter are out on purpose.
CORE_PROGRAMS: frozenset[str] = frozenset(
    """cat head tail wc ls pwd echo basename dirname realpath readlink stat du df true false test [
    uname id whoami groups cmp diff nl cut tr comm od hexdump tac rev paste fold expand unexpand
    seq nproc md5sum sha1sum sha256sum sha512sum b2sum cksum base64 grep egrep fgrep cd""".split()
)
# Written without any expansion: no `$`, backquotes, backslashes, `~`, process substitution,
# here-documents or redirections (bar the two spellings of "discard errors").
_CORE_TEXT = re.compile(r"^[A-Za-z0-9 _\-./=:,+@%^*?\[\]'\"|&;]*$")
_DISCARD = re.compile(r"(?<!\S)[12]?>\s*/dev/null(?!\S)")

_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt/conda")
# Under /etc, readable by root yet nobody's business: masked even in a read-only sandbox.
_SYSTEM_MASKS = (
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/ssh",
    "/etc/ssl/private",
)
_MAX_WALK = 200_000  # entries walked to find denied files; past it the sandbox is not built
BWRAP = "bwrap"  # looked up on PATH, then /usr/bin and /bin


@dataclass(frozen=True, kw_only=True)
class SandboxStatus:
    available: bool
    reason: str  # why not, in words for the person ("" when available)
    program: str | None = None


@functools.cache
def sandbox_status() -> SandboxStatus:
    """Whether bubblewrap can make the sandbox here, probed once per process by making one."""
    if not sys.platform.startswith("linux"):
        return SandboxStatus(available=False, reason=f"no OS sandbox on {sys.platform} yet (bubblewrap is Linux only)")
    program = shutil.which(BWRAP, path=os.pathsep.join([os.environ.get("PATH", ""), "/usr/bin", "/bin"]))
    if program is None:
        return SandboxStatus(available=False, reason="bubblewrap is not installed (apt-get install bubblewrap)")
    probe = [program, *_namespace_args(network=False, pid=True), "--ro-bind", "/", "/", "--", "/bin/true"]
    try:
        done = subprocess.run(probe, capture_output=True, timeout=20, text=True)
    except (OSError, subprocess.TimeoutExpired) as e:
        return SandboxStatus(available=False, reason=f"bubblewrap could not start ({type(e).__name__}: {e})")
    if done.returncode != 0:
        why = (done.stderr or "").strip().splitlines()[-1:] or [f"exit {done.returncode}"]
        return SandboxStatus(available=False, reason=f"bubblewrap cannot create namespaces here ({why[0]})")
    return SandboxStatus(available=True, reason="", program=program)


def sandbox_available() -> bool:
    return sandbox_status().available


def sandbox_usable(ctx: ToolContext) -> bool:
    """A sandbox can be made and the setting lets commands that no one approved use it."""
    return ctx.sandbox != "off" and sandbox_available()


def core_read_only(command: str) -> bool:
    """The predicate auto-allow falls back to without a sandbox: only CORE_PROGRAMS, written
    without expansions, and read-only by the classifier's judgement too."""
    from .syntax import analyze  # the parser loads tree-sitter
    from .verdict import is_read_only_command

    if not _CORE_TEXT.match(_DISCARD.sub(" ", command)) or not is_read_only_command(command):
        return False
    try:
        a = analyze(command)
    except Exception:
        return False
    if a.line_problem or not a.everything:
        return False
    for cmd in a.everything:
        if cmd.name is None or cmd.name.text not in CORE_PROGRAMS or cmd.assignments:
            return False
        if any(w.text is None for w in cmd.args):
            return False
    return True


def _namespace_args(*, network: bool, pid: bool) -> list[str]:
    args = [
        "--unshare-user",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
    ]
    if pid:
        args.append("--unshare-pid")
    if not network:
        args.append("--unshare-net")
    return args


def _mount_system(args: list[str], mounted: set[str]) -> None:
    for d in _SYSTEM_DIRS:
        if os.path.islink(d):
            args += ["--symlink", os.readlink(d), d]
        elif os.path.isdir(d):
            args += ["--ro-bind", d, d]
            mounted.add(d)


def _program_dirs() -> list[str]:
    """PATH entries and the Python prefixes: where the programs a command names live."""
    home = os.path.realpath(os.path.expanduser("~"))
    out: list[str] = []
    for d in [*os.environ.get("PATH", "").split(os.pathsep), sys.prefix, sys.base_prefix, sys.exec_prefix]:
        if not d or not os.path.isabs(d) or not os.path.isdir(d):
            continue
        real = os.path.realpath(d)
        # Never a whole home, root or /tmp through a PATH entry: only program directories.
        if real in ("/", "/tmp") or home == real or home.startswith(real.rstrip("/") + "/"):
            continue
        out.append(real)
    return out


def _covered(path: str, mounted: Iterable[str]) -> bool:
    return any(path == m or path.startswith(m.rstrip("/") + "/") for m in mounted)


def bwrap_argv(
    *,
    ctx: ToolContext,
    cwd: str,
    access: Access,
    side_files: Iterable[str] = (),
    masks: Iterable[tuple[str, bool]] = (),
    env: dict[str, str] | None = None,
) -> list[str]:
    """The bubblewrap command line that runs a command (appended after it) inside the sandbox.

    `side_files` are files the caller reads back (the shell's final cwd), bound writable;
    `masks` are (path, is_dir) to hide. With "read-only" nothing outside the private /tmp can
    be written and there is no network; with "write-workdirs" the working directories (and a
    private TMPDIR) are writable and the network is the host's."""
    status = sandbox_status()
    assert status.program is not None, "bwrap_argv needs an available sandbox"
    read_only = access == "read-only"
    args = [status.program, *_namespace_args(network=not read_only, pid=read_only)]
    if not read_only:
        # An approved command sees the whole system as it is, and may write only the working dirs.
        args += ["--ro-bind", "/", "/"]
    # Read-only: a private, empty /tmp. Approved: the host's /tmp stays visible (read-only, like
    # everything outside the working directories) and TMPDIR is a private /var/tmp.
    tmp = "/tmp" if read_only else "/var/tmp"
    args += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", tmp]
    # HOME is there, empty and read-only, so `~/x` fails loudly instead of vanishing; program
    # directories and working directories inside it are mounted on top.
    home = os.path.realpath(os.path.expanduser("~"))
    private_home = read_only and home not in ("/", "/tmp") and not _covered(home, _SYSTEM_DIRS)
    if private_home:
        args += ["--tmpfs", home]
    mounted: set[str] = set() if read_only else {"/"}
    if read_only:
        _mount_system(args, mounted)
    for d in _program_dirs():
        if not _covered(d, mounted):
            args += ["--ro-bind", d, d]
            mounted.add(d)
    bind = "--ro-bind" if read_only else "--bind"
    if read_only:
        # git finds its repository above cwd (a subdirectory, a worktree): that, read-only.
        for d in git_dirs(ctx):
            if not _covered(d, mounted):
                args += ["--ro-bind", d, d]
    for d in dict.fromkeys(os.path.realpath(p) for p in ctx.all_dirs()):
        if os.path.isdir(d):
            args += [bind, d, d]
    if ctx.spill_dir is not None and os.path.isdir(ctx.spill_dir):
        spill = os.path.realpath(ctx.spill_dir)
        args += ["--ro-bind", spill, spill]
    for f in side_files:
        args += ["--bind", f, f]
    for path, is_dir in [*((p, os.path.isdir(p)) for p in _SYSTEM_MASKS if os.path.lexists(p)), *masks]:
        args += ["--tmpfs", path, "--remount-ro", path] if is_dir else ["--ro-bind", "/dev/null", path]
    if private_home:
        args += ["--remount-ro", home]
    args += ["--remount-ro", "/"]
    for key, value in (env or {}).items():
        args += ["--setenv", key, value]
    args += ["--setenv", "HOME", home, "--setenv", "TMPDIR", tmp, "--chdir", cwd, "--"]
    return args


def git_dirs(ctx: ToolContext) -> list[str]:
    """The repositories the working directories are in, when git would look outside them:
    the work tree's top above a working directory, and a worktree's git dir and common dir."""
    out: list[str] = []
    for start in dict.fromkeys(os.path.realpath(d) for d in ctx.all_dirs()):
        top = start
        while not os.path.lexists(os.path.join(top, ".git")):
            parent = os.path.dirname(top)
            if parent == top:
                break
            top = parent
        dot_git = os.path.join(top, ".git")
        if not os.path.lexists(dot_git):
            continue
        if top != start and top != "/":
            out.append(top)
        if os.path.isfile(dot_git):
            try:
                line = Path(dot_git).read_text(encoding="utf-8").strip()
            except OSError:
                continue
            if line.startswith("gitdir:"):
                gitdir = os.path.realpath(os.path.join(top, line.removeprefix("gitdir:").strip()))
                out.append(gitdir)
                try:
                    common = Path(gitdir, "commondir").read_text(encoding="utf-8").strip()
                    out.append(os.path.realpath(os.path.join(gitdir, common)))
                except OSError:
                    pass
    return [d for d in dict.fromkeys(out) if os.path.isdir(d)]


def denied_mounts(ctx: ToolContext) -> list[tuple[str, bool]] | None:
    """(path, is_dir) of what Read deny rules cover under the working directories: masked in
    the sandbox. None when there are too many entries to walk (the caller then asks)."""
    if not ctx.read_deny:
        return []
    out: list[tuple[str, bool]] = []
    seen = 0
    # The built-in rules name their paths (`~/.ssh`): no walk for them alone.
    walk = ctx.read_deny_needs_walk()
    tops = [
        d for d in git_dirs(ctx) if os.path.isdir(os.path.join(d, ".git")) or os.path.isfile(os.path.join(d, ".git"))
    ]
    for root in dict.fromkeys([*(os.path.realpath(d) for d in ctx.all_dirs()), *tops]) if walk else ():
        stack = [root]
        while stack:
            top = stack.pop()
            try:
                entries = list(os.scandir(top))
            except OSError:
                continue
            for entry in entries:
                seen += 1
                if seen > _MAX_WALK:
                    return None
                is_dir = entry.is_dir(follow_symlinks=False)
                if ctx.is_read_denied(entry.path, follow_links=not is_dir) is not None:
                    out.append((entry.path, entry.is_dir()))
                elif is_dir:
                    stack.append(entry.path)
    # Absolute rules name files anywhere (`Read(//etc/app/key)`, `Read(~/.aws/**)`): mask what exists.
    for spec in ctx.read_deny:
        plain = spec.rstrip("/").removesuffix("/**")
        if set(plain) & set("*?[]{}!\\"):
            continue
        path = (
            os.path.expanduser(plain[1:] if plain.startswith("//") else plain)
            if plain.startswith(("//", "~"))
            else None
        )
        if path and os.path.lexists(path):
            out.append((path, os.path.isdir(path)))
    return out


# What a command prints when the sandbox, not the command, was the obstacle.
_STOPPED = (
    ("Read-only file system", "writing a file (in the sandbox everything but a private /tmp is read-only)"),
    ("Network is unreachable", "a network connection (the sandbox has no network)"),
    ("Temporary failure in name resolution", "a network connection (the sandbox has no network)"),
    ("Could not resolve host", "a network connection (the sandbox has no network)"),
    ("Name or service not known", "a network connection (the sandbox has no network)"),
    ("Connection refused", "a network connection (the sandbox has no network: even 127.0.0.1 is its own)"),
    ("Operation not permitted", "an operation the sandbox forbids"),
    ("Permission denied", "a file the sandbox hides or keeps read-only"),
)


def stopped_by_sandbox(output: str, exit_code: int | None) -> str | None:
    """What the sandbox seems to have stopped, for a failed sandboxed command; None otherwise."""
    if exit_code in (0, None):
        return None
    for marker, what in _STOPPED:
        if marker in output:
            return what
    return None


def sandbox_note(what: str) -> str:
    return (
        f"[sandbox] This command ran without asking because it looked read-only, so it ran in the read-only "
        f"sandbox: no writes, no network, an empty private /tmp, an empty read-only HOME, only the working directories and "
        f"system directories visible, denied files masked. It seems to have failed on {what}. If it really "
        f"needs that, call Bash again with `dangerouslyDisableSandbox: true`: the person is then asked to "
        f"approve running it unsandboxed. Otherwise change the command so it only reads."
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
