"""The launcher of a root kernel's sandbox, run as a script (`sandbox_user` says why and starts it).

`python -I -S sandbox_launcher.py uid gid mapping-fd [--cgroup=DIR]... dir... -- bwrap ...`, as
root: the command's cgroups joined, a private mount namespace, each `dir` shown through an idmapped mount (host 0 as `uid`), then down to
`uid`/`gid` and exec bubblewrap. It runs before every sandboxed command of a root kernel, so its
start is part of every command's start: it imports C modules only (`posix`, `_struct`, and
`_ctypes` for the system calls Python 3.11 has no function for), not `os` or ctypes' Python
part, which would add a third to its start.
"""

import _ctypes
import _struct
import posix as os  # `os` without its Python part: the functions used here are all posix's
import sys

__all__ = ["id_map", "main"]

_MAX_ID = 2**32 - 1
# Linux syscall numbers from 5.1 on are the same on every architecture (the generic table).
_SYS_OPEN_TREE, _SYS_MOVE_MOUNT, _SYS_MOUNT_SETATTR = 428, 429, 442
_OPEN_TREE_CLONE, _OPEN_TREE_CLOEXEC = 1, os.O_CLOEXEC
_AT_FDCWD, _AT_EMPTY_PATH, _AT_RECURSIVE = -100, 0x1000, 0x8000
_MOVE_MOUNT_F_EMPTY_PATH = 0x4
_MOUNT_ATTR_IDMAP = 0x100000
_CLONE_NEWNS, _CLONE_NEWUSER = 0x20000, 0x10000000
_MS_REC, _MS_PRIVATE = 0x4000, 1 << 18


def id_map(uid: int) -> str:
    """Host 0 <-> `uid`; every other id to itself (`uid` itself is left unmapped)."""
    lines = [f"0 {uid} 1"]
    if uid > 1:
        lines.append(f"1 1 {uid - 1}")
    if uid < _MAX_ID - 1:
        lines.append(f"{uid + 1} {uid + 1} {_MAX_ID - uid - 1}")
    return "\n".join(lines) + "\n"


class _Int(_ctypes._SimpleCData):  # type: ignore[type-arg]  # ctypes.c_int
    _type_ = "i"


class _Long(_ctypes._SimpleCData):  # type: ignore[type-arg]  # ctypes.c_long
    _type_ = "l"


class _IntFunction(_ctypes.CFuncPtr):
    _flags_ = _ctypes.FUNCFLAG_CDECL | _ctypes.FUNCFLAG_USE_ERRNO
    _restype_ = _Int


class _LongFunction(_ctypes.CFuncPtr):
    _flags_ = _ctypes.FUNCFLAG_CDECL | _ctypes.FUNCFLAG_USE_ERRNO
    _restype_ = _Long


class _Libc:
    """The C library's `unshare`, `mount` and `syscall`, as `ctypes.CDLL(None, use_errno=True)`
    gives them (an int argument is a C int, bytes a char pointer, None NULL)."""

    def __init__(self) -> None:
        # The process itself (libc is loaded); a function is looked up by name in `self._handle`,
        # as a CDLL's is (the stubs know only CDLL and a named library).
        self._handle = _ctypes.dlopen(None, 0)  # type: ignore[arg-type]
        self.unshare = _IntFunction(("unshare", self))  # type: ignore[arg-type]
        self.mount = _IntFunction(("mount", self))  # type: ignore[arg-type]
        self.syscall = _LongFunction(("syscall", self))  # type: ignore[arg-type]


def _check(result: int) -> int:
    if result < 0:
        errno = _ctypes.get_errno()
        raise OSError(errno, os.strerror(errno))
    return result


def _path(path: str) -> bytes:
    return path.encode(sys.getfilesystemencoding(), "surrogateescape")


def _mapping_namespace(libc: _Libc, uid: int, gid: int) -> int:
    """A user namespace (its fd) whose maps are `id_map`: held by a child that waits for it."""
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
        for name, text in (("uid_map", id_map(uid)), ("setgroups", "deny"), ("gid_map", id_map(gid))):
            with open(f"/proc/{pid}/{name}", "w", encoding="ascii") as f:
                f.write(text)
        return os.open(f"/proc/{pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        os.close(done_w)
        os.close(ready_r)
        os.waitpid(pid, 0)


def _show_as_root(libc: _Libc, path: str, userns: int) -> None:
    """Put an idmapped copy of the mount tree at `path` over it (in our mount namespace)."""
    syscall = libc.syscall
    flags = _OPEN_TREE_CLONE | _OPEN_TREE_CLOEXEC | _AT_RECURSIVE
    tree = _check(syscall(_SYS_OPEN_TREE, _AT_FDCWD, _path(path), flags))
    try:
        attr = _struct.pack("QQQQ", _MOUNT_ATTR_IDMAP, 0, 0, userns)  # struct mount_attr, read by the kernel
        _check(syscall(_SYS_MOUNT_SETATTR, tree, b"", _AT_EMPTY_PATH | _AT_RECURSIVE, attr, len(attr)))
        _check(syscall(_SYS_MOVE_MOUNT, tree, b"", _AT_FDCWD, _path(path), _MOVE_MOUNT_F_EMPTY_PATH))
    finally:
        os.close(tree)


def _hold(libc: _Libc) -> None:
    """`--hold`: a user namespace of its own, kept until stdin closes (`mapping_namespace`)."""
    try:
        _check(libc.unshare(_CLONE_NEWUSER))
    except OSError:
        sys.exit(1)
    os.write(1, b"1")
    while os.read(0, 1):
        pass


def main(argv: list[str]) -> None:
    """`uid gid mapping-fd [--cgroup=DIR]... dir... -- bwrap ...`: as described above; exits 125
    when it cannot join or drop. `mapping-fd` is a descriptor of a namespace with the id maps,
    or -1."""
    libc = _Libc()
    if argv == ["--hold"]:
        _hold(libc)
        return
    split = argv.index("--")
    uid, gid, mapping, command = int(argv[0]), int(argv[1]), int(argv[2]), argv[split + 1 :]
    cgroups = [a.removeprefix("--cgroup=") for a in argv[3:split] if a.startswith("--cgroup=")]
    shown = [a for a in argv[3:split] if not a.startswith("--cgroup=")]
    for cgroup in cgroups:  # first: everything after, and all the command starts, is limited
        try:
            with open(cgroup + "/cgroup.procs", "w", encoding="ascii") as f:
                f.write("0")
        except OSError as e:
            sys.stderr.write(f"[sandbox] could not join the cgroup of the command ({e}), so it did not run\n")
            sys.exit(125)
    try:
        _check(libc.unshare(_CLONE_NEWNS))
        _check(libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None))
    except OSError as e:
        sys.stderr.write(f"[sandbox] could not make the sandbox's mount namespace ({e}); the command did not run\n")
        sys.exit(125)
    if shown:
        try:
            userns = mapping if mapping >= 0 else _mapping_namespace(libc, uid, gid)
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
    if mapping >= 0:
        os.close(mapping)  # bubblewrap and the command never hold it
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
