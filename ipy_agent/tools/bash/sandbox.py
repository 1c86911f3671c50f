"""The OS sandbox for shell commands that no person approved.

Bash runs a command without asking when its classifier judges it read-only; a permission rule,
a hook or a mode (bypassPermissions) runs others without asking either. A classifier always has
one more hole, a rule's prefix says nothing about what the rest of the line does, and a mode
approves everything, so on Linux all of these run under bubblewrap, where what the OS allows is
what the rules say:

- "read-only" (judged read-only by the classifier): the working directories, the system's
  program and library directories, the Python prefix and the git repository they are in,
  mounted read-only; HOME empty and read-only but for the person's toolchain (`toolchain`: a
  pyenv root, a conda prefix, `~/.local/bin`...); no network (a new network namespace has only
  its own loopback).
- "write-workdirs" (approved by a rule, a hook or a mode; and every approved command with the
  setting "always"): the whole filesystem read-only, the working directories (and their git
  repository) writable, except every protected surface in them (settings, `.mcp.json`, the
  person's own folders, git's hooks and config, sys.path entries: `surface_mounts`), the host's
  network.

Both: the files and directories Read deny rules cover are masked (`masks`: an empty file or an
empty read-only directory in their place, whatever name the command reaches them by); /tmp and
/dev/shm are private size-limited tmpfs; /dev is read-only; no capabilities; new user, pid, IPC
and UTS namespaces (whatever the command leaves in the background dies with it); a seccomp
filter refuses AF_UNIX sockets, io_uring and the kernel keyring (`seccomp`); memory and process
limits (`resources`); wall time is the call's timeout; `/proc/sys` and the other files that
change the host's kernel read-only; and never the host's root: a root kernel's sandbox runs as
an unprivileged user (`sandbox_user`).

Where no sandbox can be made (no bubblewrap, namespaces forbidden, macOS, an architecture with no
seccomp filter written, root without a cgroup, or the setting "off"), `sandbox_status()` says why,
and auto-allow shrinks to `core_read_only`: a few programs whose every argument form is known to
only read and print, written without any shell expansion.
"""

from __future__ import annotations

import functools
import os
import platform
import shutil
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ipy_agent.base.surfaces import Surface
from ipy_agent.contract.tool_context import ToolContext

from .masks import Mask, notice_file
from .resources import limits_status
from .sandbox_user import launcher_argv
from .seccomp import filter_spec, seccomp_fd
from .surface_mounts import Held, surface_mounts
from .toolchain import toolchain

__all__ = [
    "Access",
    "SandboxStatus",
    "bwrap_argv",
    "covered",
    "git_dirs",
    "sandbox_available",
    "sandbox_status",
    "sandbox_usable",
    "visible_roots",
]

Access = Literal["read-only", "write-workdirs"]

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
_PRIVATE = ("/tmp", "/dev", "/proc")  # the sandbox's own, not the host's
# Under the sandbox's own /proc, files that change the host's kernel (the kernel checks them by
# user, not capability): read-only whoever the sandbox's user is.
_KERNEL_SETTINGS = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs")
BWRAP = "bwrap"  # looked up on PATH, then /usr/bin and /bin


@dataclass(frozen=True, kw_only=True)
class SandboxStatus:
    available: bool
    reason: str  # why not, in words for the person ("" when available)
    program: str | None = None
    limits: str = ""  # how memory and process limits are enforced (`resources.LimitsStatus.how`)


@functools.cache
def sandbox_status() -> SandboxStatus:
    """Whether bubblewrap can make the sandbox here, probed once per process by making one
    (with the seccomp filter and a size-limited tmpfs), and whether its limits can hold."""
    if not sys.platform.startswith("linux"):
        return SandboxStatus(available=False, reason=f"no OS sandbox on {sys.platform} yet (bubblewrap is Linux only)")
    program = shutil.which(BWRAP, path=os.pathsep.join([os.environ.get("PATH", ""), "/usr/bin", "/bin"]))
    if program is None:
        return SandboxStatus(available=False, reason="bubblewrap is not installed (apt-get install bubblewrap)")
    if filter_spec() is None:
        return SandboxStatus(
            available=False, reason=f"no seccomp filter is written for this architecture ({platform.machine()})"
        )
    limits = limits_status()
    if not limits.ok:
        return SandboxStatus(available=False, reason=limits.reason)
    fd = seccomp_fd()
    assert fd is not None
    probe = launcher_argv(
        [
            program,
            *_namespace_args(network=False),
            "--ro-bind",
            "/",
            "/",
            "--size",
            str(1024**2),
            "--tmpfs",
            "/tmp",
            "--seccomp",
            str(fd),
            "--",
            "/bin/true",
        ],
        shown=(),
    )
    try:
        done = subprocess.run(probe, capture_output=True, timeout=20, text=True, pass_fds=(fd,))
    except (OSError, subprocess.TimeoutExpired) as e:
        return SandboxStatus(available=False, reason=f"bubblewrap could not start ({type(e).__name__}: {e})")
    finally:
        os.close(fd)
    if done.returncode != 0:
        why = (done.stderr or "").strip().splitlines()[-1:] or [f"exit {done.returncode}"]
        return SandboxStatus(available=False, reason=f"bubblewrap cannot make the sandbox here ({why[0]})")
    return SandboxStatus(available=True, reason="", program=program, limits=limits.how)


def sandbox_available() -> bool:
    return sandbox_status().available


def sandbox_usable(ctx: ToolContext) -> bool:
    """A sandbox can be made and the setting lets commands that no one approved use it."""
    return ctx.sandbox != "off" and sandbox_available()


def _namespace_args(*, network: bool) -> list[str]:
    args = [
        "--unshare-user",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-pid",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
    ]
    if not network:
        args.append("--unshare-net")
    return args


def _kernel_settings_read_only() -> list[str]:
    return [a for p in _KERNEL_SETTINGS if os.path.lexists(p) for a in ("--ro-bind", p, p)]


def _shown_as_owned(ctx: ToolContext, home: str) -> list[str]:
    """What a sandbox of a root kernel reads and writes as root does (`sandbox_user`): the home
    directory, working directories, their repositories, program directories and the spill
    folder; the system directories are for every user already."""
    dirs = [home, *(str(d) for d in ctx.all_dirs()), *git_dirs(ctx), *_program_dirs()]
    if ctx.spill_dir is not None:
        dirs.append(str(ctx.spill_dir))
    return [d for d in dirs if d not in ("/", "/tmp") and not covered(os.path.realpath(d), _SYSTEM_DIRS)]


def _mount_system(args: list[str], mounted: set[str]) -> None:
    for d in _SYSTEM_DIRS:
        if os.path.islink(d):
            args += ["--symlink", os.readlink(d), d]
        elif os.path.isdir(d):
            args += ["--ro-bind", d, d]
            mounted.add(d)


def _program_dirs() -> list[str]:
    """Where the programs a command names live, the system's directories aside: PATH entries,
    what the person's shims and launchers under HOME run, the Python prefixes (`toolchain`)."""
    return list(toolchain(_SYSTEM_DIRS).dirs)


def covered(path: str, mounted: Iterable[str]) -> bool:
    return any(path == m or path.startswith(m.rstrip("/") + "/") for m in mounted)


def visible_roots(ctx: ToolContext, access: Access) -> list[str] | None:
    """The host directories the sandbox shows (what masks are looked for in); None: all."""
    if access == "write-workdirs":
        return None
    roots = [d for d in _SYSTEM_DIRS if os.path.isdir(d) and not os.path.islink(d)]
    roots += _program_dirs() + git_dirs(ctx)
    roots += [os.path.realpath(p) for p in ctx.all_dirs() if os.path.isdir(p)]
    if ctx.spill_dir is not None and os.path.isdir(ctx.spill_dir):
        roots.append(os.path.realpath(ctx.spill_dir))
    return list(dict.fromkeys(roots))


def bwrap_argv(
    *,
    ctx: ToolContext,
    cwd: str,
    access: Access,
    masks: Iterable[Mask] = (),
    seccomp: int,
    env: dict[str, str] | None = None,
    held: Held | None = None,
) -> list[str]:
    """The bubblewrap command line that runs a command (appended after it) inside the sandbox.

    `masks` are what to hide (`masks.mask_paths`); `seccomp` is the file descriptor
    of the filter (`seccomp.seccomp_fd`), which the caller passes to the child. With
    "read-only" nothing outside the private /tmp can be written and there is no network; with
    "write-workdirs" the working directories are writable and the network is the host's, and
    every protected surface under them read-only: the placeholders made for the missing ones are
    kept in `held`, which the caller releases once the command ended (`surface_mounts`; without
    `held` none are made, since nothing would remove them)."""
    status = sandbox_status()
    assert status.program is not None, "bwrap_argv needs an available sandbox"
    read_only = access == "read-only"
    tmp_size = str(ctx.sandbox_limits.tmp)
    args = [status.program, *_namespace_args(network=not read_only)]
    if not read_only:
        # An approved command sees the whole system as it is, and may write only the working dirs.
        args += ["--ro-bind", "/", "/"]
    args += ["--dev", "/dev", "--size", tmp_size, "--tmpfs", "/dev/shm", "--remount-ro", "/dev", "--proc", "/proc"]
    args += _kernel_settings_read_only()
    args += ["--size", tmp_size, "--tmpfs", "/tmp"]
    # HOME is there, empty and read-only, so `~/x` fails loudly instead of vanishing; program
    # directories and working directories inside it are mounted on top.
    home = os.path.realpath(os.path.expanduser("~"))
    private_home = read_only and home not in ("/", "/tmp") and not covered(home, _SYSTEM_DIRS)
    if private_home:
        args += ["--tmpfs", home]
    mounted: set[str] = set() if read_only else {"/"}
    if read_only:
        _mount_system(args, mounted)
    # The person's programs (a pyenv root, a conda prefix, ~/.local/bin...), read-only; the
    # rest of HOME stays hidden. Under /tmp they are bound again over the private /tmp.
    programs = toolchain(_SYSTEM_DIRS)
    for d in programs.dirs:
        if not covered(d, mounted) or covered(d, _PRIVATE):
            args += ["--ro-bind", d, d]
            mounted.add(d)
    for link, target in programs.links:
        if not covered(link, mounted) or covered(link, _PRIVATE):
            args += ["--symlink", target, link]
    args += _workdir_mounts(ctx, read_only, mounted, held)
    if ctx.spill_dir is not None and os.path.isdir(ctx.spill_dir):
        spill = os.path.realpath(ctx.spill_dir)
        args += ["--ro-bind", spill, spill]
    shown = [*(os.path.realpath(p) for p in ctx.all_dirs()), *programs.dirs]
    system = [Mask(p, "dir" if os.path.isdir(p) else "sealed") for p in _SYSTEM_MASKS if os.path.lexists(p)]
    for mask in [*system, *masks]:
        if covered(mask.path, _PRIVATE) and not covered(mask.path, shown):
            continue  # the sandbox has its own /tmp, /dev and /proc: the host's file is not there
        if mask.kind == "dir":
            args += ["--tmpfs", mask.path, "--remount-ro", mask.path]
        else:
            args += ["--ro-bind", notice_file() if mask.kind == "file" else "/dev/null", mask.path]
    if private_home:
        args += ["--remount-ro", home]
    args += ["--remount-ro", "/", "--seccomp", str(seccomp)]
    for key, value in (env or {}).items():
        args += ["--setenv", key, value]
    args += ["--setenv", "HOME", home, "--setenv", "TMPDIR", "/tmp", "--chdir", cwd, "--"]
    return launcher_argv(args, _shown_as_owned(ctx, home))


def _repository(start: str) -> tuple[str | None, list[str]]:
    """The work tree top at or above `start` and its git directories (`.git`, or a worktree's
    git dir and common dir); (None, []) outside any repository."""
    top = start
    while not os.path.lexists(os.path.join(top, ".git")):
        parent = os.path.dirname(top)
        if parent == top:
            return None, []
        top = parent
    dot_git = os.path.join(top, ".git")
    gits = [dot_git] if os.path.isdir(dot_git) else git_dirs_of(top)
    return top, [os.path.realpath(g) for g in gits if os.path.isdir(g)]


def _workdir_mounts(ctx: ToolContext, read_only: bool, mounted: set[str], held: Held | None) -> list[str]:
    args: list[str] = []
    workdirs = [d for d in dict.fromkeys(os.path.realpath(p) for p in ctx.all_dirs()) if os.path.isdir(d)]
    if read_only:
        # git finds its repository above cwd (a subdirectory, a worktree): that, read-only.
        for d in git_dirs(ctx):
            if not covered(d, mounted):
                args += ["--ro-bind", d, d]
        for d in workdirs:
            args += ["--ro-bind", d, d]
        return args
    # Their repositories' metadata too (above a subdirectory, or a worktree's git dir
    # elsewhere), but not what git runs or is told to run: hooks and config stay read-only.
    metadata = list(dict.fromkeys(g for d in workdirs for g in _repository(d)[1]))
    writable = [*workdirs, *(g for g in metadata if not covered(g, workdirs))]
    for d in writable:
        args += ["--bind", d, d]
    # Then every protected surface under them read-only (placeholders for the missing ones).
    why = "git runs what its hooks and config name"
    git = [
        Surface(os.path.join(g, name), why, "dir" if name == "hooks" else "file", "dir" if name == "hooks" else None)
        for g in metadata
        for name in ("hooks", "config", "config.worktree")
    ]
    return args + surface_mounts(ctx, writable, git, held=held)


def git_dirs_of(top: str) -> list[str]:
    """A worktree's git dir and its common dir, read from `top/.git` (a file), or []."""
    try:
        line = Path(top, ".git").read_text(encoding="utf-8").strip()
    except OSError:
        return []
    if not line.startswith("gitdir:"):
        return []
    gitdir = os.path.realpath(os.path.join(top, line.removeprefix("gitdir:").strip()))
    out = [gitdir]
    try:
        common = Path(gitdir, "commondir").read_text(encoding="utf-8").strip()
        out.append(os.path.realpath(os.path.join(gitdir, common)))
    except OSError:
        pass
    return out


def git_dirs(ctx: ToolContext) -> list[str]:
    """The repositories the working directories are in, when git would look outside them:
    the work tree's top above a working directory, and a worktree's git dir and common dir."""
    out: list[str] = []
    for start in dict.fromkeys(os.path.realpath(d) for d in ctx.all_dirs()):
        top, gits = _repository(start)
        if top is None:
            continue
        if top != start and top != "/":
            out.append(top)
        if os.path.isfile(os.path.join(top, ".git")):
            out += gits
    return [d for d in dict.fromkeys(out) if os.path.isdir(d)]
