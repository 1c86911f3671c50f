"""The sandbox's user on the host: never root.

bubblewrap run by root maps the sandbox's user to the host's root (`--uid` only renames it
inside), and the kernel checks the files that change the host by that user, whatever
capabilities were dropped: `/proc/sys/kernel/core_pattern` (a pipe handler there runs as real
root), `/proc/sys/kernel/modprobe`, and the like. So when the kernel runs as root, a sandboxed
command starts through this module run as a script (`launcher_argv`), which, as root:

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

The script part imports the standard library only, and runs with `python -I -S`.
"""

from __future__ import annotations

import ctypes
import os
import stat
import struct
import sys
from collections.abc import Iterable

__all__ = ["SANDBOX_GID", "SANDBOX_UID", "launcher_argv", "runs_as_root"]

SANDBOX_UID = 65534  # nobody: owns nothing, and `ps` on the host names it
SANDBOX_GID = 65534  # nogroup

_MAX_ID = 2**32 - 1
# Linux syscall numbers from 5.1 on are the same on every architecture (the generic table).
_SYS_OPEN_TREE, _SYS_MOVE_MOUNT, _SYS_MOUNT_SETATTR = 428, 429, 442
_OPEN_TREE_CLONE, _OPEN_TREE_CLOEXEC = 1, os.O_CLOEXEC
_AT_FDCWD, _AT_EMPTY_PATH, _AT_RECURSIVE = -100, 0x1000, 0x8000
_MOVE_MOUNT_F_EMPTY_PATH = 0x4
_MOUNT_ATTR_IDMAP = 0x100000
_CLONE_NEWNS, _CLONE_NEWUSER = 0x20000, 0x10000000
_MS_REC, _MS_PRIVATE = 0x4000, 1 << 18


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
        os.path.abspath(__file__),
        str(SANDBOX_UID),
        str(SANDBOX_GID),
        *_outermost(shown),
        "--",
        bwrap[0],
        "--uid",
        "0",
        "--gid",
        "0",
        *bwrap[1:],
    ]


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


# --- the launcher, as a script ----------------------------------------------------------------------


def _id_map(uid: int) -> str:
    """Host 0 <-> `uid`; every other id to itself (`uid` itself is left unmapped)."""
    lines = [f"0 {uid} 1"]
    if uid > 1:
        lines.append(f"1 1 {uid - 1}")
    if uid < _MAX_ID - 1:
        lines.append(f"{uid + 1} {uid + 1} {_MAX_ID - uid - 1}")
    return "\n".join(lines) + "\n"


def _check(result: int) -> int:
    if result < 0:
        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno))
    return result


def _mapping_namespace(libc: ctypes.CDLL, uid: int, gid: int) -> int:
    """A user namespace (its fd) whose maps are `_id_map`: held by a child that waits for it."""
    ready_r, ready_w = os.pipe()
    done_r, done_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child)
        try:
            os.close(ready_r)
            os.close(done_w)
            _check(libc.unshare(_CLONE_NEWUSER))
            os.write(ready_w, b"1")
            os.read(done_r, 1)
        finally:
            os._exit(0)
    os.close(ready_w)
    os.close(done_r)
    try:
        if os.read(ready_r, 1) != b"1":
            raise OSError("could not make a user namespace for the idmapped mounts")
        for name, text in (("uid_map", _id_map(uid)), ("setgroups", "deny"), ("gid_map", _id_map(gid))):
            with open(f"/proc/{pid}/{name}", "w", encoding="ascii") as f:
                f.write(text)
        return os.open(f"/proc/{pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        os.close(done_w)
        os.close(ready_r)
        os.waitpid(pid, 0)


def _show_as_root(libc: ctypes.CDLL, path: str, userns: int) -> None:
    """Put an idmapped copy of the mount tree at `path` over it (in our mount namespace)."""
    syscall = libc.syscall
    syscall.restype = ctypes.c_long
    flags = _OPEN_TREE_CLONE | _OPEN_TREE_CLOEXEC | _AT_RECURSIVE
    tree = _check(syscall(_SYS_OPEN_TREE, _AT_FDCWD, path.encode(), flags))
    try:
        attr = ctypes.create_string_buffer(struct.pack("QQQQ", _MOUNT_ATTR_IDMAP, 0, 0, userns), 32)
        _check(syscall(_SYS_MOUNT_SETATTR, tree, b"", _AT_EMPTY_PATH | _AT_RECURSIVE, attr, 32))
        _check(syscall(_SYS_MOVE_MOUNT, tree, b"", _AT_FDCWD, path.encode(), _MOVE_MOUNT_F_EMPTY_PATH))
    finally:
        os.close(tree)


def main(argv: list[str]) -> None:
    """`uid gid dir... -- bwrap ...`: as described above; exits 125 when it cannot drop."""
    split = argv.index("--")
    uid, gid, shown, command = int(argv[0]), int(argv[1]), argv[2:split], argv[split + 1 :]
    libc = ctypes.CDLL(None, use_errno=True)
    try:
        _check(libc.unshare(_CLONE_NEWNS))
        _check(libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None))
    except OSError as e:
        sys.stderr.write(f"[sandbox] could not make the sandbox's mount namespace ({e}); the command did not run\n")
        sys.exit(125)
    if shown:
        try:
            userns = _mapping_namespace(libc, uid, gid)
        except OSError as e:
            userns = -1
            sys.stderr.write(
                f"[sandbox] no idmapped mounts here ({e}): root's private files read 'Permission denied'\n"
            )
        for path in shown if userns >= 0 else ():
            try:
                _show_as_root(libc, path, userns)
            except OSError as e:
                sys.stderr.write(
                    f"[sandbox] {path} is shown to the sandbox's unprivileged user as it is on disk ({e.strerror}): "
                    "what only root may read or write there reads 'Permission denied'\n"
                )
    try:
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)  # from root to a user: every capability goes
    except OSError as e:
        sys.stderr.write(f"[sandbox] could not drop to user {uid} ({e}); the command did not run\n")
        sys.exit(125)
    os.execv(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
