"""Socket and IPC reachability from the sandbox: no Unix socket outside it can be reached.

A read-only bind mount does not stop `connect()`, and the host's Unix sockets (a kernel on the
IPC transport, ssh and gpg agents, the Docker daemon, D-Bus) are where running code outside the
sandbox starts. The family: pathname, abstract and datagram sockets, reached by every program
and system call that can (Python, curl, node, perl, ssh-add, raw system calls through ctypes,
a socket pair re-aimed at a path, io_uring, the kernel keyring), in the read-only sandbox and
in the write-workdirs one. A case holds when the listener counted nothing and the attempt
failed. The seccomp program itself is checked against a BPF interpreter for both
architectures, and a real kernel on the IPC transport, with the working directory at HOME, is
attacked with its own key: it runs nothing and still answers afterwards.
"""

from __future__ import annotations

import os
import shutil
import socket
import struct
from pathlib import Path

import pytest

from ipy_agent.tools.bash import seccomp
from tests.support.containment import DECIDERS, Family, UnixListener, bash, context
from tests.support.tools import write_tree

pytestmark = pytest.mark.usefixtures("need_bwrap")

PROBE_PY = """\
import socket, sys
kind, target = sys.argv[1], sys.argv[2]
addr = "\\0" + target[1:] if target.startswith("@") else target
if kind == "stream":
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(addr)
elif kind == "dgram":
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.sendto(b"x", addr)
elif kind == "pair-stream":
    a, b = socket.socketpair()
    a.connect(addr)
elif kind == "pair-dgram":
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    a.sendto(b"x", addr)
print("REACHED")
"""
# Raw system calls, as a program that does not use libc's wrappers would make them.
RAW_PY = """\
import ctypes, os, struct, sys, platform
libc = ctypes.CDLL(None, use_errno=True)
nr = {"x86_64": (41, 42), "aarch64": (198, 203)}[platform.machine()]
fd = libc.syscall(nr[0], 1, 1, 0)
if fd < 0:
    sys.exit(f"socket: errno {ctypes.get_errno()}")
path = sys.argv[1].encode()
addr = struct.pack("H", 1) + path + b"\\0" * (108 - len(path))
if libc.syscall(nr[1], fd, addr, len(addr)) < 0:
    sys.exit(f"connect: errno {ctypes.get_errno()}")
print("REACHED")
"""
URING_PY = """\
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
params = ctypes.create_string_buffer(120)
fd = libc.syscall(425, 8, params)
if fd < 0:
    sys.exit(f"io_uring_setup: errno {ctypes.get_errno()}")
print("REACHED")
"""
KEYRING_PY = """\
import ctypes, platform, sys
libc = ctypes.CDLL(None, use_errno=True)
keyctl = {"x86_64": 250, "aarch64": 219}[platform.machine()]
if libc.syscall(keyctl, 0, -3, 0) < 0:  # KEYCTL_GET_KEYRING_ID of the session keyring
    sys.exit(f"keyctl: errno {ctypes.get_errno()}")
print("REACHED")
"""
NODE_JS = """\
const net = require("net");
const s = net.connect(process.argv[2], () => { console.log("REACHED"); process.exit(0); });
s.on("error", (e) => { console.error(e.code); process.exit(3); });
"""


def _cases(stream: str, dgram: str, abstract: str) -> list[tuple[str, str, str]]:
    """(name, command, which listener it aims at)."""
    out: list[tuple[str, str, str]] = [
        ("python stream", f"python3 probe.py stream {stream}", "stream"),
        ("python stream, relative path", "python3 probe.py stream app.sock", "stream"),
        ("python abstract", f"python3 probe.py stream @{abstract}", "abstract"),
        ("python datagram", f"python3 probe.py dgram {dgram}", "dgram"),
        ("socket pair re-aimed (stream)", f"python3 probe.py pair-stream {stream}", "stream"),
        ("socket pair re-aimed (datagram)", f"python3 probe.py pair-dgram {dgram}", "dgram"),
        ("raw system calls", f"python3 raw.py {stream}", "stream"),
        ("nested shell", f"bash -c 'sh -c \"python3 probe.py stream {stream}\"'", "stream"),
        ("a variable names it", f"S={stream}; python3 probe.py stream $S", "stream"),
        ("cd, then relative", "cd . && python3 probe.py stream ./app.sock", "stream"),
        ("io_uring", "python3 uring.py", "none"),
        ("kernel keyring", "python3 keyring.py", "none"),
    ]
    if shutil.which("curl"):
        out.append(("curl --unix-socket", f"curl -s --max-time 3 --unix-socket {stream} http://x/", "stream"))
        out.append(
            (
                "curl --abstract-unix-socket",
                f"curl -s --max-time 3 --abstract-unix-socket {abstract} http://x/",
                "abstract",
            )
        )
    if shutil.which("node"):
        out.append(("node net.connect", f"node probe.js {stream}", "stream"))
    if shutil.which("perl"):
        out.append(
            (
                "perl IO::Socket::UNIX",
                f'perl -MIO::Socket::UNIX -e \'IO::Socket::UNIX->new(Peer => "{stream}") or exit 3; print "REACHED"\'',
                "stream",
            )
        )
    if shutil.which("ssh-add"):
        out.append(("an ssh agent socket", f"SSH_AUTH_SOCK={stream} ssh-add -l", "stream"))
    return out


@pytest.fixture
def sockets(tmp_path: Path):
    project = write_tree(
        tmp_path / "proj",
        {"probe.py": PROBE_PY, "raw.py": RAW_PY, "uring.py": URING_PY, "keyring.py": KEYRING_PY, "probe.js": NODE_JS},
    )
    listeners = {
        "stream": UnixListener(str(project / "app.sock")),
        "dgram": UnixListener(str(project / "dgram.sock"), socket.SOCK_DGRAM),
        "abstract": UnixListener(f"\0ipy-agent-test-{os.getpid()}-{tmp_path.name}"),
    }
    yield project, listeners
    for listener in listeners.values():
        listener.close()


async def test_no_unix_socket_outside_the_sandbox_can_be_reached(sockets):
    project, listeners = sockets
    family = Family("ipc")
    abstract = listeners["abstract"].path[1:]
    for decided_by in DECIDERS:
        for name, command, target in _cases(str(project / "app.sock"), str(project / "dgram.sock"), abstract):
            before = {k: v.count for k, v in listeners.items()}
            block = await bash(context(project, decided_by), command)
            after = {k: v.count for k, v in listeners.items()}
            reached = "REACHED" in block["content"] or after != before
            family.record(
                f"{name} ({decided_by})", held=not reached and bool(block.get("is_error")), why=block["content"][:200]
            )
            assert target in listeners or target == "none"
    family.report()


async def test_without_the_filter_the_same_attacks_get_through(sockets, monkeypatch):
    """The control: the mounts alone do not stop them (a read-only bind mount does not stop
    connect()), so it is the seccomp filter that holds above."""
    allow_all = struct.pack("<HBBI", 0x06, 0, 0, 0x7FFF0000)
    monkeypatch.setattr(seccomp, "_program", lambda: allow_all)
    project, listeners = sockets
    for decided_by in DECIDERS:
        block = await bash(context(project, decided_by), f"python3 probe.py stream {project / 'app.sock'}")
        assert "REACHED" in block["content"], block
    block = await bash(context(project, "mode"), f"python3 probe.py stream @{listeners['abstract'].path[1:]}")
    assert "REACHED" in block["content"], block  # the write-workdirs sandbox shares the host's network namespace


async def test_everyday_socket_use_inside_the_sandbox_still_works(tmp_path):
    """What the filter lets through, on purpose: socket pairs (asyncio, multiprocessing)."""
    project = tmp_path / "proj"
    project.mkdir()
    code = (
        "import asyncio, multiprocessing as mp, socket\n"
        "a, b = socket.socketpair(); a.sendall(b'ok'); print(b.recv(2).decode())\n"
        "asyncio.run(asyncio.sleep(0)); print('asyncio')\n"
        "if __name__ == '__main__':\n"
        "    with mp.get_context('fork').Pool(2) as p: print(sum(p.map(abs, [-1, -2])))\n"
    )
    (project / "ok.py").write_text(code)
    for decided_by in DECIDERS:
        block = await bash(context(project, decided_by), "python3 ok.py")
        assert block["content"].split() == ["ok", "asyncio", "3"], block


# --- the BPF program, instruction by instruction ---------------------------------------------------


def _run_bpf(program: bytes, nr: int, arch: int, args: tuple[int, ...] = ()) -> int:
    """A classic-BPF interpreter for the instructions the filter uses, over a seccomp_data."""
    data = struct.pack("<iIQ6Q", nr, arch, 0, *(list(args) + [0] * (6 - len(args))))
    insns = [struct.unpack("<HBBI", program[i : i + 8]) for i in range(0, len(program), 8)]
    pc, acc = 0, 0
    while True:
        code, jt, jf, k = insns[pc]
        if code == 0x20:  # ld [k]
            acc = struct.unpack_from("<I", data, k)[0]
        elif code == 0x54:  # and k
            acc &= k
        elif code in (0x15, 0x35):  # jeq k / jge k
            hit = acc == k if code == 0x15 else acc >= k
            pc += jt if hit else jf
        elif code == 0x06:
            return k
        else:
            raise AssertionError(f"unexpected BPF instruction {code:#x}")
        pc += 1


ALLOW, EPERM, KILL = 0x7FFF0000, 0x00050001, 0x80000000


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_the_filter_program_decides_each_call_as_documented(machine):
    spec = seccomp.filter_spec(machine)
    assert spec is not None
    prog = seccomp.filter_program(spec)
    run = lambda nr, *args, arch=spec.audit_arch: _run_bpf(prog, nr, arch, args)  # noqa: E731
    assert run(spec.socket, 1, 1) == EPERM  # socket(AF_UNIX, SOCK_STREAM)
    assert run(spec.socket, 1, 2 | 0x80000) == EPERM  # with SOCK_CLOEXEC
    assert run(spec.socket, 1 | (7 << 32), 1) == EPERM  # high bits the kernel ignores
    assert run(spec.socket, 2, 1) == ALLOW  # AF_INET
    assert run(spec.socket, 10, 2) == ALLOW  # AF_INET6
    assert run(spec.socketpair, 1, 1) == ALLOW  # stream pair
    assert run(spec.socketpair, 1, 5 | 0x800) == ALLOW  # seqpacket, nonblocking
    assert run(spec.socketpair, 1, 2) == EPERM  # datagram pair
    assert run(spec.socketpair, 1, 2 | 0x80000) == EPERM
    for nr in spec.refused:
        assert run(nr) == EPERM
    assert run(0) == ALLOW and run(59 if machine == "x86_64" else 221) == ALLOW  # read, execve
    for nr, index in spec.modes:  # no set-user-ID or set-group-ID bit, by any call that sets a mode
        for mode, verdict in ((0o755, ALLOW), (0o644, ALLOW), (0o4755, EPERM), (0o2755, EPERM), (0o6777, EPERM)):
            args = [0] * (index + 1)
            args[index] = mode
            assert run(nr, *args) == verdict, (nr, oct(mode))
    assert run(spec.openat2) == 0x00050000 | 38  # ENOSYS: its mode cannot be read
    assert run(spec.socket, 1, 1, arch=0x40000003) == KILL  # i386 on x86_64
    assert run(0, arch=0x40000028) == KILL  # arm32
    if spec.x32:
        assert run(0x40000000 + 41, 1, 1) == EPERM  # x32 socket
    assert seccomp.filter_spec("riscv64") is None


# --- a real kernel on the IPC transport, with the working directory at HOME --------------------------


@pytest.mark.kernel
def test_a_kernel_on_ipc_with_cwd_at_home_cannot_be_reached_from_the_sandbox(request, monkeypatch):
    import asyncio
    import json
    import tempfile

    from tests.support.kernel import Kernel

    # A short HOME: a socket's path must fit in 108 bytes.
    home = Path(tempfile.mkdtemp(prefix="h", dir="/tmp"))
    request.addfinalizer(lambda: shutil.rmtree(home, ignore_errors=True))
    runtime = home / "rt"
    runtime.mkdir()
    monkeypatch.setenv("HOME", str(home))
    marker = home / "PWNED"
    with Kernel(home, ip=str(runtime / "k"), connection_file=str(runtime / "kernel-test.json")) as kernel:
        sockets = sorted(str(p) for p in runtime.iterdir() if p.is_socket())
        assert len(sockets) >= 5, sockets
        info = json.loads((runtime / "kernel-test.json").read_text())
        # The attack is given the key in so many words: the sockets alone must stop it.
        code = f"open({str(marker)!r}, 'w').write('x')"
        attack = (
            "import json\n"
            "from jupyter_client import BlockingKernelClient\n"
            "c = BlockingKernelClient()\n"
            f"c.load_connection_info(json.loads({json.dumps(info)!r}))\n"
            "c.start_channels()\n"
            "c.wait_for_ready(timeout=10)\n"
            f"c.execute({code!r})\n"
            "c.get_shell_msg(timeout=10)\n"
            "print('REACHED')\n"
        )
        (home / "attack.py").write_text(attack)
        # The control: unsandboxed (a person approved it), the attack runs code in the kernel.
        control = asyncio.run(bash(context(home, "person"), "timeout 30 python3 attack.py", timeout_ms=60_000))
        assert "REACHED" in control["content"] and marker.exists(), control
        marker.unlink()
        family = Family("ipc-kernel")
        for decided_by in DECIDERS:
            for name, command in [
                ("jupyter_client with the key", "timeout 20 python3 attack.py"),
                *(
                    (f"connect {Path(s).name}", f"python3 -c 'import socket; socket.socket(1).connect({s!r})'")
                    for s in sockets
                ),
            ]:
                block = asyncio.run(bash(context(home, decided_by), command, timeout_ms=60_000))
                reached = "REACHED" in block["content"] or marker.exists()
                family.record(f"{name} ({decided_by})", held=not reached, why=block["content"][:200])
        assert kernel.check("print(6 * 7)").strip() == "42", "the kernel answers afterwards"
        assert not marker.exists()
    family.report()
