"""The seccomp filter every sandboxed command runs under: no AF_UNIX sockets, no io_uring, no keys,
no set-user-ID or set-group-ID bits.

A read-only bind mount does not stop `connect()` on a Unix socket inside it, and the kernel's
own sockets (a Jupyter kernel on the IPC transport, an ssh or gpg agent, the Docker daemon, a
D-Bus session) are Unix sockets. So the sandbox forbids making one: `socket(AF_UNIX, ...)` fails
with EPERM, for pathname and abstract addresses alike. What still works:

- `socketpair(AF_UNIX, SOCK_STREAM | SOCK_SEQPACKET)`: a pair connected to each other and to
  nothing else (`connect()` on either fails with EISCONN). asyncio's self-pipe, multiprocessing
  pipes and many programs' worker channels are made this way, so forbidding it would break them
  for no gain. A datagram pair is forbidden: a datagram socket can `sendto()` any address.
- Internet sockets: the read-only sandbox has its own empty network namespace anyway.

Also refused (EPERM), each a way around the rule above or out of the sandbox: `io_uring_setup`
(io_uring opens sockets and connects without the system calls filtered here) and the kernel
keyring calls (`add_key`, `request_key`, `keyctl`: the session keyring is inherited from the
kernel and may hold credentials). Setting the set-user-ID or set-group-ID bit fails with EPERM
(`chmod`, `fchmod`, `fchmodat`, `fchmodat2`, and `open`, `openat`, `creat`, `mknod`, `mknodat`
with such a mode; `openat2`, whose mode the filter cannot read, fails with ENOSYS, which
programs take as an older kernel): a root kernel's sandbox writes the working directories
through idmapped mounts (`sandbox_user`), where a file it makes is root's on disk, so a
set-user-ID bit there would leave a root program behind for anyone to run outside the sandbox
(inside, every mount is nosuid). A system call of another ABI (32-bit x86 on x86_64, arm32 on
aarch64) kills the process, and an x32 call fails: this filter is written for the native table only.

The filter is classic BPF, built here for the machine's architecture (x86_64 and aarch64), and
handed to bubblewrap with `--seccomp FD`, which installs it just before the command starts.
"""

from __future__ import annotations

import functools
import os
import platform
import struct
from dataclasses import dataclass

__all__ = ["FilterSpec", "filter_program", "filter_spec", "seccomp_fd"]

# linux/filter.h and linux/seccomp.h
_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_ALU_AND_K = 0x54  # BPF_ALU | BPF_AND | BPF_K
_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_RET_K = 0x06  # BPF_RET | BPF_K
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_RET_KILL_PROCESS = 0x80000000
_EPERM = 1
_ENOSYS = 38
_SET_ID_BITS = 0o6000  # S_ISUID | S_ISGID
# struct seccomp_data: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6] (little endian)
_NR, _ARCH = 0, 4


def _arg(i: int) -> int:
    """Offset of the low 32 bits of argument i (every argument checked here is an int)."""
    return 16 + 8 * i


_AF_UNIX = 1
_SOCK_DGRAM = 2
_SOCK_TYPE_MASK = 0xF  # SOCK_NONBLOCK and SOCK_CLOEXEC ride in the high bits of `type`
_X32_SYSCALL_BIT = 0x40000000


@dataclass(frozen=True)
class FilterSpec:
    """One architecture's audit number and the system call numbers the filter names."""

    machine: str
    audit_arch: int
    socket: int
    socketpair: int
    refused: tuple[int, ...]  # io_uring_setup, add_key, request_key, keyctl
    x32: bool  # numbers with the x32 bit are another ABI on this architecture
    modes: tuple[tuple[int, int], ...] = ()  # (call, index of its mode argument): no set-id bits
    openat2: int = 437  # its mode is in a struct the filter cannot read: ENOSYS


_SPECS = {
    # arch/x86/entry/syscalls/syscall_64.tbl
    "x86_64": FilterSpec(
        machine="x86_64",
        audit_arch=0xC000003E,
        socket=41,
        socketpair=53,
        refused=(425, 248, 249, 250),
        x32=True,
        # chmod, fchmod, fchmodat, fchmodat2, open, creat, openat, mknod, mknodat
        modes=((90, 1), (91, 1), (268, 2), (452, 2), (2, 2), (85, 1), (257, 3), (133, 1), (259, 2)),
    ),
    # include/uapi/asm-generic/unistd.h
    "aarch64": FilterSpec(
        machine="aarch64",
        audit_arch=0xC00000B7,
        socket=198,
        socketpair=199,
        refused=(425, 217, 218, 219),
        x32=False,
        # fchmod, fchmodat, fchmodat2, openat, mknodat
        modes=((52, 1), (53, 2), (452, 2), (56, 3), (33, 2)),
    ),
}
_ALIASES = {"amd64": "x86_64", "arm64": "aarch64"}


def filter_spec(machine: str | None = None) -> FilterSpec | None:
    """The filter's numbers for `machine` (default: this one), None for an architecture not
    written here (the sandbox is then not made: see `sandbox.sandbox_status`)."""
    name = (machine or platform.machine()).lower()
    return _SPECS.get(_ALIASES.get(name, name))


def filter_program(spec: FilterSpec) -> bytes:
    """The BPF program, as `struct sock_filter` records (u16 code, u8 jt, u8 jf, u32 k)."""
    # Labels are resolved to relative jumps below; each entry is (code, k, jump-if-true label,
    # jump-if-false label) with None meaning "the next instruction".
    prog: list[tuple[int, int, str | None, str | None]] = []
    labels: dict[str, int] = {}

    def at(label: str) -> None:
        labels[label] = len(prog)

    prog.append((_LD_W_ABS, _ARCH, None, None))
    prog.append((_JEQ_K, spec.audit_arch, None, "kill"))
    prog.append((_LD_W_ABS, _NR, None, None))
    if spec.x32:
        prog.append((_JGE_K, _X32_SYSCALL_BIT, "eperm", None))
    prog.append((_JEQ_K, spec.socket, "socket", None))
    prog.append((_JEQ_K, spec.socketpair, "socketpair", None))
    for nr in spec.refused:
        prog.append((_JEQ_K, nr, "eperm", None))
    for nr, index in spec.modes:
        prog.append((_JEQ_K, nr, f"mode{index}", None))
    prog.append((_JEQ_K, spec.openat2, "enosys", None))
    prog.append((_RET_K, _RET_ALLOW, None, None))
    for index in sorted({i for _, i in spec.modes}):
        at(f"mode{index}")
        prog.append((_LD_W_ABS, _arg(index), None, None))
        prog.append((_ALU_AND_K, _SET_ID_BITS, None, None))
        prog.append((_JEQ_K, 0, "allow", "eperm"))
    at("socket")
    prog.append((_LD_W_ABS, _arg(0), None, None))
    prog.append((_JEQ_K, _AF_UNIX, "eperm", "allow"))
    at("socketpair")
    prog.append((_LD_W_ABS, _arg(0), None, None))
    prog.append((_JEQ_K, _AF_UNIX, None, "allow"))
    prog.append((_LD_W_ABS, _arg(1), None, None))
    prog.append((_ALU_AND_K, _SOCK_TYPE_MASK, None, None))
    prog.append((_JEQ_K, _SOCK_DGRAM, "eperm", "allow"))
    at("allow")
    prog.append((_RET_K, _RET_ALLOW, None, None))
    at("eperm")
    prog.append((_RET_K, _RET_ERRNO | _EPERM, None, None))
    at("enosys")
    prog.append((_RET_K, _RET_ERRNO | _ENOSYS, None, None))
    at("kill")
    prog.append((_RET_K, _RET_KILL_PROCESS, None, None))

    out = bytearray()
    for i, (code, k, jt, jf) in enumerate(prog):
        out += struct.pack("<HBBI", code, _offset(labels, jt, i), _offset(labels, jf, i), k)
    return bytes(out)


def _offset(labels: dict[str, int], label: str | None, i: int) -> int:
    if label is None:
        return 0
    jump = labels[label] - i - 1
    assert 0 <= jump < 256, "a BPF jump goes forward, at most 255 instructions"
    return jump


@functools.cache
def _program() -> bytes | None:
    spec = filter_spec()
    return filter_program(spec) if spec is not None else None


def seccomp_fd() -> int | None:
    """A pipe's read end holding this machine's filter, for `bwrap --seccomp FD` (the caller
    passes it to the child and closes it); None where no filter is written for this machine."""
    program = _program()
    if program is None:
        return None
    r, w = os.pipe()
    try:
        os.write(w, program)  # a few hundred bytes: far below a pipe's buffer
    finally:
        os.close(w)
    return r
