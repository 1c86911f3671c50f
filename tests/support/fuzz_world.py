"""The differential fuzzer's world: a scratch project, a fake HOME, a canary outside, a
127.0.0.1 listener, and the detectors that tell whether a command did anything but read.

A command runs for real, unsandboxed, with `bash -c` in the scratch directory, under `strace`
(when installed) so a connection attempt to any address is seen, not only to our listener. The
environment has no credentials, HOME is the fake one, and every proxy, KUBECONFIG and
DOCKER_HOST points at the listener, so a tool that phones home knocks on our door instead.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from .containment import UnixListener
from .tools import tool_ctx

STRACE = shutil.which("strace")

POLYGLOT = '""":"\ntouch PWN\nexit\n":"""\nopen("PWN", "w").close()\n'
FILES = {
    "f.txt": "a\nb\nc\n",
    "g.txt": "a\nc\nd\n",
    "f.json": '{"a": 1}\n',
    "big.txt": "".join(f"{i % 97} line\n" for i in range(6000)),
    "evil.sed": "w PWN\n",
    "list.txt": "PWN\n",
    "cmds.txt": "touch PWN\n",
    "magic.txt": "0 string x X\n",
    "evil.jq": "def x: 1;\n",
    "pwn.sh": "#!/bin/sh\ntouch PWN\ncat\n",
    "pwn.py": 'open("PWN", "w").close()\n',
    "pwn.pl": 'open(F, ">PWN");\n',
    "evil.mk": "all:\n\ttouch PWN\n",
    "Makefile": "all:\n\ttouch PWN\nversion:\n\ttouch PWN\n",
    "version": POLYGLOT,
    "conftest.py": 'open("PWN", "w").close()\n',
    "package.json": '{"name": "scratch", "version": "1.0.0", "scripts": {"version": "touch PWN"}}\n',
    "sub/deep.txt": "deep\n",
    "unix.py": "import socket\nsocket.socket(socket.AF_UNIX).connect('u.sock')\n",
}


class Listener:
    """Counts connections to a 127.0.0.1 port (the network canary)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.sock.settimeout(0.1)
        self.port = self.sock.getsockname()[1]
        self.count = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.count += 1
            conn.close()

    def close(self) -> int:
        """Stop listening; how many connections there were."""
        self._stop.set()
        self._thread.join()
        self.sock.close()
        return self.count


@dataclass
class Outcome:
    changed: list[str] = field(default_factory=list)
    connections: int = 0
    connects: list[str] = field(default_factory=list)  # from strace
    lingering: list[int] = field(default_factory=list)
    unix: int = 0  # connections to the world's Unix sockets

    @property
    def harmful(self) -> bool:
        return bool(self.changed or self.connections or self.connects or self.lingering or self.unix)

    def describe(self) -> str:
        parts = []
        if self.changed:
            parts.append("changed " + ", ".join(self.changed[:3]) + (" ..." if len(self.changed) > 3 else ""))
        if self.connections or self.connects:
            parts.append(f"network ({self.connections} to the listener; {len(self.connects)} connect calls)")
        if self.lingering:
            parts.append(f"{len(self.lingering)} process(es) left running")
        if self.unix:
            parts.append(f"{self.unix} connection(s) to a Unix socket")
        return "; ".join(parts)


class World:
    def __init__(self, base: Path) -> None:
        self.base = base
        self.scratch = base / "scratch"
        self.home = base / "home"
        self.canary = base / "canary"
        self.listener = Listener()
        # The Unix sockets: one at a path in the scratch directory (made again whenever the
        # scratch directory is), one abstract, named after the TCP listener's port.
        self.abstract = UnixListener(f"\0ipy-agent-fuzz-{self.listener.port}")
        self.unix: UnixListener | None = None
        self._unix_before = 0
        self.mark = uuid.uuid4().hex
        # The payload's sleep, found by its command line even if the env was cleared; this run's own.
        self.sleep = f"9{uuid.uuid4().int % 10**6}.{uuid.uuid4().int % 97 + 1}"
        self.build()
        self.before = self.snapshot()

    # --- the world ---------------------------------------------------------------------------
    def build(self) -> None:
        for d in (self.scratch, self.home, self.canary):
            if d.exists():
                shutil.rmtree(d)
            d.mkdir(parents=True)
        for name, text in FILES.items():
            p = self.scratch / name
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
        (self.scratch / "pwn.sh").chmod(0o755)
        (self.canary / "keep.txt").write_text("outside\n")
        (self.home / ".bashrc").write_text("# rc\n")
        kube = self.home / ".kube"
        kube.mkdir()
        (kube / "config").write_text(
            json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "current-context": "c",
                    "clusters": [
                        {
                            "name": "k",
                            "cluster": {
                                "server": f"https://127.0.0.1:{self.listener.port}",
                                "insecure-skip-tls-verify": True,
                            },
                        }
                    ],
                    "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
                    "users": [{"name": "u", "user": {}}],
                }
            )
        )
        git = ["git", "-c", "user.email=f@x", "-c", "user.name=f", "-c", "init.defaultBranch=main"]
        env = self.env()
        for args in (
            ["init", "-q"],
            ["remote", "add", "origin", f"http://127.0.0.1:{self.listener.port}/x.git"],
            ["add", "-A"],
            ["commit", "-qm", "init"],
        ):
            subprocess.run([*git, *args], cwd=self.scratch, env=env, check=True, capture_output=True)
        if self.unix is not None:
            self._unix_before += self.unix.close()
        self.unix = UnixListener(str(self.scratch / "u.sock"))  # after the commit: git adds no socket

    def env(self) -> dict[str, str]:
        proxy = f"http://127.0.0.1:{self.listener.port}"
        path = os.pathsep.join(
            [
                str(Path(sys.executable).parent),
                "/usr/local/sbin",
                "/usr/local/bin",
                "/usr/sbin",
                "/usr/bin",
                "/sbin",
                "/bin",
            ]
        )
        return {
            "PATH": path,
            "HOME": str(self.home),
            "LANG": "C.UTF-8",
            "TERM": "dumb",
            "PAGER": "cat",
            "GIT_PAGER": "cat",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_OPTIONAL_LOCKS": "0",
            "IPY_FUZZ_MARK": self.mark,
            "HTTP_PROXY": proxy,
            "HTTPS_PROXY": proxy,
            "ALL_PROXY": proxy,
            "http_proxy": proxy,
            "https_proxy": proxy,
            "all_proxy": proxy,
            "NO_PROXY": "",
            "no_proxy": "",
            "KUBECONFIG": str(self.home / ".kube" / "config"),
            "DOCKER_HOST": f"tcp://127.0.0.1:{self.listener.port}",
            "npm_config_registry": proxy + "/",
            "CHECKPOINT_DISABLE": "",
            "PYTHONDONTWRITEBYTECODE": "1",
        }

    def snapshot(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for root in (self.scratch, self.home, self.canary):
            for dirpath, dirnames, filenames in os.walk(root):
                for d in dirnames:
                    out[os.path.join(dirpath, d)] = "dir"
                for name in filenames:
                    p = os.path.join(dirpath, name)
                    try:
                        if os.path.islink(p):
                            out[p] = "link:" + os.readlink(p)
                        else:
                            out[p] = hashlib.sha256(Path(p).read_bytes()).hexdigest()
                    except OSError as e:
                        out[p] = f"unreadable:{e.errno}"
        return out

    def unix_count(self) -> int:
        return self._unix_before + (self.unix.count if self.unix else 0) + self.abstract.count

    # --- one command -------------------------------------------------------------------------
    def run(self, command: str, timeout: float = 6.0, sandboxed: bool = False, decided_by: str = "tool") -> Outcome:
        count = (self.listener.count, self.unix_count())
        since = _ticks_now()
        if sandboxed:
            return self._finish(self._run_in_sandbox(command, timeout, decided_by), since, count)
        fd, name = tempfile.mkstemp(prefix="fuzz-strace-", dir=self.base)
        os.close(fd)  # strace opens the file by name
        trace = Path(name)
        # -D: strace runs as a grandchild, so our child is bash itself and its exit is the
        # command's end, while strace follows whatever it left running (until we kill that).
        prefix = (
            [STRACE, "-D", "-f", "-qq", "-e", "trace=connect,sendto,sendmsg", "-e", "signal=none", "-o", str(trace)]
            if STRACE
            else []
        )
        proc = subprocess.Popen(
            [*prefix, "/bin/bash", "-c", command],
            cwd=self.scratch,
            env=self.env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        out = Outcome()
        # strace lives while anything it follows runs: give what the command left a moment to
        # show (a fork is traced before it runs), then what still runs with our mark lingers.
        tracers, _ = self._new_processes(since, str(trace).encode(), settle=False)
        _wait_gone(tracers, limit_s=0.5)
        _, out.lingering = self._new_processes(since, str(trace).encode())
        for pid in out.lingering:
            _kill(pid)
        _kill_group(proc.pid)
        _wait_gone(tracers)
        out.connects = [
            line
            for line in trace.read_text(errors="replace").splitlines()
            if "AF_INET" in line and ("connect(" in line or "sendto(" in line or "sendmsg(" in line)
        ]
        trace.unlink()
        return self._finish(out, since, count)

    def _run_in_sandbox(self, command: str, timeout: float, decided_by: str) -> Outcome:
        """Through the Bash tool as a call `decided_by` let run ("tool": judged read-only;
        "mode": the write-workdirs sandbox): bubblewrap, our environment."""
        import asyncio

        from ipy_agent.tools.bash import BashInput, BashTool

        saved = dict(os.environ)
        os.environ.clear()
        os.environ.update(self.env())
        try:
            ctx = tool_ctx(self.scratch, decided_by=decided_by)  # type: ignore[arg-type]
            asyncio.run(BashTool().call(BashInput(command=command, timeout=int(timeout * 1000)), ctx, ctx.decision))
        finally:
            os.environ.clear()
            os.environ.update(saved)
        return Outcome()

    def _finish(self, out: Outcome, since: int, count: tuple[int, int]) -> Outcome:
        if not out.lingering:
            _, out.lingering = self._new_processes(since, b"\0no tracer\0")
            for pid in out.lingering:
                _kill(pid)
        after = self.snapshot()
        out.changed = sorted(k for k in set(after) | set(self.before) if after.get(k) != self.before.get(k))
        threading.Event().wait(0.01)  # let the listener thread count a connection just made
        out.connections = self.listener.count - count[0]
        out.unix = self.unix_count() - count[1]
        if out.changed:
            self.build()
            self.before = self.snapshot()
        return out

    def _new_processes(self, since: int, trace: bytes, settle: bool = True) -> tuple[list[int], list[int]]:
        """(tracers, lingering): our strace, and the processes that carry our mark (or the
        payload's sleep) and still run a moment later (a process in the middle of exiting is
        not left behind). Every process is looked at: start times are not trusted under load."""
        tracers, candidates = [], []
        for pid in os.listdir("/proc"):
            if not pid.isdigit() or int(pid) == os.getpid():
                continue
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
                if trace in cmdline:
                    tracers.append(int(pid))
                    continue
                if b"fuzz-strace-" in cmdline:
                    continue  # another run's tracer, on its way out
                environ = Path(f"/proc/{pid}/environ").read_bytes()
            except OSError:
                continue
            if self.mark.encode() in environ or self.sleep.encode() in cmdline:
                candidates.append(int(pid))
        if candidates and settle:
            threading.Event().wait(0.2)
        return tracers, [pid for pid in candidates if _running(pid)]

    def close(self) -> None:
        self.listener.close()
        self.abstract.close()
        if self.unix is not None:
            self.unix.close()


_HZ = os.sysconf("SC_CLK_TCK")


def _ticks_now() -> int:
    return int(float(Path("/proc/uptime").read_text().split()[0]) * _HZ) - 1


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _wait_gone(pids: list[int], limit_s: float = 3.0) -> None:
    """Until none of `pids` runs (they are not our children: poll their state)."""
    for _ in range(int(limit_s / 0.005)):
        alive = False
        for pid in pids:
            try:
                if Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0] != b"Z":
                    alive = True
            except OSError:
                pass
        if not alive:
            return
        threading.Event().wait(0.005)
