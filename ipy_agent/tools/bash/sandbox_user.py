"""The sandbox's user on the host: never root.

bubblewrap run by root maps the sandbox's user to the host's root (`--uid` only renames it
inside), and the kernel checks the files that change the host by that user, whatever
capabilities were dropped: `/proc/sys/kernel/core_pattern` (a pipe handler there runs as real
root), `/proc/sys/kernel/modprobe`, and the like. So when the kernel runs as root, a sandboxed
command starts through a launcher (`sandbox_launcher`, run as a script: `launcher_argv`), which,
as root:

1. makes a private mount namespace (nothing it mounts is seen by the host);
2. shows the directories the sandbox needs to read or write as the person does (the home
   directory, the working directories and their repositories, program directories, the
   spill folder) through *idmapped mounts*: on them, the host's uid/gid 0 reads as the
   sandbox's user (`SANDBOX_UID`), so what root may read and write there, the sandbox may
   too, and what the sandbox creates is stored on disk as root's, usable as before;
3. drops to `SANDBOX_UID`/`SANDBOX_GID` (no groups, no capabilities) and runs bubblewrap, which
   then makes its own user namespace as any user's (the command sees itself as uid 0 there,
   which is the host's `SANDBOX_UID`).

Elsewhere the sandbox's processes are what they are on the host: an unprivileged user. A
directory whose filesystem has no idmapped mounts is shown as it is (root's private files there
read "Permission denied"), and the launcher says so on stderr. bubblewrap then needs user
namespaces for unprivileged users; where the system forbids them, the sandbox status says so.
When the kernel does not run as root nothing changes: bubblewrap runs as the kernel's user.

The user namespace that holds the idmap (host 0 as `SANDBOX_UID`) is the same for every
command, so the kernel makes it once (`mapping_namespace`: the launcher with `--hold`, whose
maps the kernel writes) and hands each launcher a file descriptor of it (`pass_mapping`); the
launcher closes it before bubblewrap starts. Where the kernel could not make one, each launcher
makes its own, as it always could.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from collections.abc import Iterable

from . import sandbox_launcher
from .sandbox_launcher import id_map

__all__ = [
    "SANDBOX_GID",
    "SANDBOX_UID",
    "join_in_launcher",
    "launcher_argv",
    "mapping_namespace",
    "pass_mapping",
    "runs_as_root",
]

SANDBOX_UID = 65534  # nobody: owns nothing, and `ps` on the host names it
SANDBOX_GID = 65534  # nogroup


def runs_as_root() -> bool:
    return os.getuid() == 0 or os.geteuid() == 0


def launcher_argv(bwrap: list[str], shown: Iterable[str]) -> list[str]:
    """`bwrap` (its program first), started so that its processes are never root: unchanged
    unless the kernel runs as root; then this script first, with the directories to show as
    root's (`shown`, absolute) through idmapped mounts."""
    if not runs_as_root():
        return bwrap
    return [
        sys.executable,
        "-I",
        "-S",
        _SCRIPT,
        str(SANDBOX_UID),
        str(SANDBOX_GID),
        _NO_MAPPING,  # the mapping namespace's fd, filled in by `pass_mapping`
        *_outermost(shown),
        "--",
        bwrap[0],
        "--uid",
        "0",
        "--gid",
        "0",
        *bwrap[1:],
    ]


def pass_mapping(argv: list[str]) -> tuple[int, ...]:
    """For a launcher's argv (`launcher_argv`) that shows directories: a new descriptor of the
    kernel's mapping namespace, written into `argv`, for the caller to pass to the launcher and
    close; () when there is none (the launcher then makes its own)."""
    if not _is_launcher(argv) or not any(a.startswith("/") for a in argv[_MAPPING_ARG + 1 : argv.index("--")]):
        return ()
    held = mapping_namespace()
    if held is None:
        return ()
    fd = os.dup(held)
    argv[_MAPPING_ARG] = str(fd)
    return (fd,)


def join_in_launcher(argv: list[str], cgroups: Iterable[str]) -> bool:
    """Have a launcher's argv (`launcher_argv`) join `cgroups` first, before it does anything
    else (one process start fewer than a shell that joins them); False if `argv` is no
    launcher's."""
    if not _is_launcher(argv):
        return False
    argv[_MAPPING_ARG + 1 : _MAPPING_ARG + 1] = [f"--cgroup={d}" for d in dict.fromkeys(cgroups)]
    return True


def _is_launcher(argv: list[str]) -> bool:
    return len(argv) > _MAPPING_ARG and argv[3] == _SCRIPT and "--" in argv


_SCRIPT = os.path.abspath(sandbox_launcher.__file__)
_NO_MAPPING = "-1"
_MAPPING_ARG = 6  # python -I -S script uid gid FD
_MAPPING: list[int | None] = []
_MAPPING_LOCK = threading.Lock()


def mapping_namespace() -> int | None:
    """A descriptor of one user namespace with `id_map(SANDBOX_UID)` and its gid twin, made
    once per process (None where it cannot be: then each launcher makes its own)."""
    with _MAPPING_LOCK:
        if not _MAPPING:
            _MAPPING.append(_make_mapping_namespace())
        return _MAPPING[0]


def _make_mapping_namespace() -> int | None:
    try:
        holder = subprocess.Popen(
            [sys.executable, "-I", "-S", _SCRIPT, "--hold"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
    except OSError:
        return None
    assert holder.stdin is not None and holder.stdout is not None
    try:
        if holder.stdout.read(1) != b"1":
            return None
        for name, text in (("uid_map", id_map(SANDBOX_UID)), ("setgroups", "deny"), ("gid_map", id_map(SANDBOX_GID))):
            with open(f"/proc/{holder.pid}/{name}", "w", encoding="ascii") as f:
                f.write(text)
        return os.open(f"/proc/{holder.pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    finally:
        holder.stdin.close()  # the holder exits; the namespace lives on in the descriptor
        try:
            holder.wait(timeout=10)
        except subprocess.TimeoutExpired:
            holder.kill()
            holder.wait()
        holder.stdout.close()


def _outermost(paths: Iterable[str]) -> list[str]:
    """Existing directories, each from the highest directory above it that only root may enter
    (the sandbox's user must reach it: `/root` is 0700), none inside another of them (an
    idmapped mount covers its tree)."""
    out: list[str] = []
    for p in sorted({_from_closed_ancestor(os.path.realpath(p)) for p in paths if os.path.isdir(p)}, key=len):
        if p != "/" and not any(p.startswith(o.rstrip("/") + "/") for o in out):
            out.append(p)
    return out


def _from_closed_ancestor(path: str) -> str:
    parts = path.split("/")
    for i in range(2, len(parts)):
        d = "/".join(parts[:i])
        try:
            if not os.stat(d).st_mode & stat.S_IXOTH:
                return d
        except OSError:
            break
    return path
