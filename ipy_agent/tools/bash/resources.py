"""Memory and process limits for one sandboxed command, that hold when the kernel runs as root.

Two mechanisms, and which one binds where:

- A cgroup, where one can be made (root with a writable cgroup hierarchy, or a delegated v2
  subtree): a child of the kernel's own cgroup per command, with `memory.max` (v1:
  `memory.limit_in_bytes`, swap included where it is accounted) and `pids.max`. Every process
  of the command is in it, whatever its user id, and the kernel counts shared memory, tmpfs
  pages and page tables there too. The command joins it before bubblewrap starts (a root
  kernel's launcher joins it first, `sandbox_user`; elsewhere a tiny `/bin/sh` that writes its
  own pid into `cgroup.procs`, then execs bubblewrap), and the cgroup is emptied and removed
  when the command ends.
- Resource limits set inside the sandbox's user namespace, for everyone: RLIMIT_NPROC there
  counts the processes of that namespace only (the kernel keeps one count per user per
  namespace), so it is the command's own process limit, whatever else the user runs. It does
  not bind a process whose real user is root (the kernel exempts uid 0, in any namespace), which
  is why root needs the cgroup. Without a cgroup, memory is limited per process (RLIMIT_DATA:
  what a process allocates for itself; shared memory is not counted, tmpfs has its own size).
  Core dumps are off.

`limits_status()` says which applies here: root without a cgroup gets no sandbox (see
`sandbox.sandbox_status`), because then nothing would bound a fork bomb.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import resource
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ipy_agent.contract.tool_context import SandboxLimits

__all__ = ["Cgroup", "LimitsStatus", "limits_status", "make_cgroup", "shell_limits"]

_PREFIX = "ipy-agent-"
_COUNTER = itertools.count(1)
_EMPTY_WAIT = 5.0  # seconds to wait for a cgroup's processes to be gone before removing it


@dataclass(frozen=True)
class _Hierarchy:
    version: Literal[1, 2]
    dirs: tuple[str, ...]  # v2: our cgroup; v1: our memory cgroup and our pids cgroup


@dataclass(frozen=True)
class LimitsStatus:
    """How limits are enforced here: `cgroup` names the hierarchy ("v1", "v2") or is "";
    `ok` is False when nothing would bind (root without a cgroup), with `reason` in words."""

    ok: bool
    cgroup: str
    reason: str = ""

    @property
    def how(self) -> str:
        if self.cgroup:
            return f"a cgroup ({self.cgroup}) per command for memory and processes"
        return "resource limits in the sandbox's user namespace (memory per process)"


@functools.cache
def limits_status() -> LimitsStatus:
    hierarchy = _hierarchy()
    if hierarchy is not None:
        return LimitsStatus(ok=True, cgroup=f"v{hierarchy.version}")
    if os.getuid() == 0:
        return LimitsStatus(
            ok=False,
            cgroup="",
            reason="the kernel runs as root and no cgroup can be made here, so nothing would limit a sandboxed "
            "command's processes (RLIMIT_NPROC does not bind root)",
        )
    return LimitsStatus(ok=True, cgroup="")


def shell_limits(limits: SandboxLimits, *, cgroup: bool) -> str:
    """Bash text that sets the command's resource limits (soft and hard: they cannot be raised
    again without a privilege the sandbox drops), or stops with exit 125 if it cannot."""
    settings = [("-u", _capped(resource.RLIMIT_NPROC, limits.processes)), ("-c", 0)]
    if not cgroup:
        settings.append(("-d", _capped(resource.RLIMIT_DATA, limits.memory, unit=1024)))
    flags = " ".join(f"{flag} {value}" for flag, value in settings)
    return (
        f"ulimit -S -H {flags} 2>/dev/null || "
        "{ echo '[sandbox] the resource limits could not be set; the command did not run' >&2; exit 125; }; "
    )


def _capped(which: int, wanted: int, unit: int = 1) -> int:
    """`wanted` (in `unit`s), or lower if the hard limit already is: a limit is never raised."""
    _soft, hard = resource.getrlimit(which)
    if hard == resource.RLIM_INFINITY:
        return wanted // unit
    return min(wanted, hard) // unit


class Cgroup:
    """One command's cgroup: made with the limits set, joined by the command, removed after."""

    def __init__(self, hierarchy: _Hierarchy, name: str) -> None:
        self.version = hierarchy.version
        self.dirs = tuple(os.path.join(d, name) for d in hierarchy.dirs)

    def create(self, limits: SandboxLimits) -> None:
        made: list[str] = []
        try:
            for d in dict.fromkeys(self.dirs):
                os.mkdir(d, 0o755)
                made.append(d)
            self._set_limits(limits)
        except OSError:
            for d in reversed(made):
                with contextlib.suppress(OSError):
                    os.rmdir(d)
            raise

    def _set_limits(self, limits: SandboxLimits) -> None:
        if self.version == 2:
            d = self.dirs[0]
            _write(d, "memory.max", limits.memory)
            if os.path.exists(os.path.join(d, "memory.swap.max")):
                _write(d, "memory.swap.max", 0)
            _write(d, "pids.max", limits.processes)
            return
        memory, pids = self.dirs
        _write(memory, "memory.limit_in_bytes", limits.memory)
        if os.path.exists(os.path.join(memory, "memory.memsw.limit_in_bytes")):
            _write(memory, "memory.memsw.limit_in_bytes", limits.memory)  # no swapping past the limit
        _write(pids, "pids.max", limits.processes)

    def join_argv(self) -> list[str]:
        """argv that puts itself in this cgroup and execs what follows it (bubblewrap)."""
        joins = " && ".join(f'echo 0 > "${i + 1}/cgroup.procs"' for i in range(len(set(self.dirs))))
        script = (
            f"{joins} || {{ echo '[sandbox] could not join the cgroup of the command, so it did not run' >&2; exit 125; }}; "
            f'shift {len(set(self.dirs))}; exec "$@"'
        )
        return ["/bin/sh", "-c", script, "sh", *dict.fromkeys(self.dirs)]

    def stopped_by(self) -> str | None:
        """Which limit stopped something, read from the cgroup's event counters."""
        if self.version == 2:
            d = self.dirs[0]
            if _event(d, "memory.events", "oom_kill"):
                return "memory"
            return "processes" if _event(d, "pids.events", "max") else None
        memory, pids = self.dirs
        if _event(memory, "memory.oom_control", "oom_kill"):
            return "memory"
        return "processes" if _event(pids, "pids.events", "max") else None

    def remove(self) -> None:
        """Kill whatever is left in it, wait until it is empty, remove it (best effort)."""
        deadline = time.monotonic() + _EMPTY_WAIT
        for d in dict.fromkeys(self.dirs):
            while _kill_all(d) and time.monotonic() < deadline:
                time.sleep(0.01)
            with contextlib.suppress(OSError):
                os.rmdir(d)


def make_cgroup(limits: SandboxLimits) -> Cgroup | None:
    """A new cgroup with `limits`, or None where none can be made (`limits_status`)."""
    hierarchy = _hierarchy()
    if hierarchy is None:
        return None
    group = Cgroup(hierarchy, f"{_PREFIX}{os.getpid()}-{next(_COUNTER)}")
    group.create(limits)
    return group


# --- finding a place for our cgroups -------------------------------------------------------------


@functools.cache
def _hierarchy() -> _Hierarchy | None:
    """Where children of our own cgroup can be made with both memory and pids limits; probed
    once by making one. v2 first (one tree, every controller), then v1 (memory and pids trees)."""
    for candidate in _candidates():
        _remove_stale(candidate)
        probe = Cgroup(candidate, f"{_PREFIX}{os.getpid()}-probe")
        try:
            probe.create(SandboxLimits())
        except OSError:
            continue
        probe.remove()
        return candidate
    return None


def _candidates() -> Iterator[_Hierarchy]:
    mounts = _cgroup_mounts()
    mine = _own_cgroups()
    if "" in mine:  # the v2 line: "0::/path"
        for root, point in mounts.get("cgroup2", []):
            d = _inside(point, root, mine[""])
            if d and _v2_ready(d):
                yield _Hierarchy(version=2, dirs=(d,))
    dirs: dict[str, str] = {}
    for controller in ("memory", "pids"):
        for root, point in mounts.get(controller, []):
            if controller in mine and (d := _inside(point, root, mine[controller])):
                dirs[controller] = d
    if len(dirs) == 2:
        yield _Hierarchy(version=1, dirs=(dirs["memory"], dirs["pids"]))


def _v2_ready(d: str) -> bool:
    """Children of `d` get memory and pids limits: both enabled for its subtree, or enabled now
    (which the kernel refuses in a non-root cgroup that has processes: ours is left as it is)."""
    try:
        enabled = Path(d, "cgroup.subtree_control").read_text().split()
        if {"memory", "pids"} <= set(enabled):
            return True
        available = Path(d, "cgroup.controllers").read_text().split()
        if not {"memory", "pids"} <= set(available):
            return False
        Path(d, "cgroup.subtree_control").write_text("+memory +pids")
        return True
    except OSError:
        return False


def _cgroup_mounts() -> dict[str, list[tuple[str, str]]]:
    """controller (or "cgroup2") -> [(root inside the hierarchy, mount point)]."""
    out: dict[str, list[tuple[str, str]]] = {}
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, rest = left.split(), right.split()
        if len(fields) < 5 or len(rest) < 3:
            continue
        root, point = _unescape(fields[3]), _unescape(fields[4])
        if rest[0] == "cgroup2":
            out.setdefault("cgroup2", []).append((root, point))
        elif rest[0] == "cgroup":
            for option in rest[2].split(","):
                if option in ("memory", "pids"):
                    out.setdefault(option, []).append((root, point))
    return out


def _own_cgroups() -> dict[str, str]:
    """controller -> our cgroup's path in its hierarchy ("" is the v2 tree)."""
    out: dict[str, str] = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        for controller in parts[1].split(",") if parts[1] else [""]:
            out[controller] = parts[2]
    return out


def _inside(point: str, root: str, path: str) -> str | None:
    """Our cgroup's directory under a mount of its hierarchy, if the mount shows it."""
    rel = os.path.relpath(path, root) if root != "/" else path.lstrip("/")
    if rel.startswith(".."):
        return None
    d = os.path.normpath(os.path.join(point, rel))
    return d if os.path.isdir(d) else None


def _unescape(field: str) -> str:
    return field.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\")


def _remove_stale(hierarchy: _Hierarchy) -> None:
    """Empty cgroups left by kernels that died mid-command (their pid is gone)."""
    for d in dict.fromkeys(hierarchy.dirs):
        try:
            names = [n for n in os.listdir(d) if n.startswith(_PREFIX)]
        except OSError:
            continue
        for name in names:
            pid = name[len(_PREFIX) :].split("-", 1)[0]
            if pid.isdigit() and not _pid_alive(int(pid)):
                with contextlib.suppress(OSError):
                    os.rmdir(os.path.join(d, name))


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# --- small file helpers --------------------------------------------------------------------------


def _write(d: str, name: str, value: int) -> None:
    with open(os.path.join(d, name), "w", encoding="ascii") as f:
        f.write(str(value))


def _event(d: str, name: str, key: str) -> int:
    """A counter from a flat-keyed file (`memory.events`, `pids.events`, `memory.oom_control`)."""
    try:
        for line in Path(d, name).read_text().splitlines():
            k, _, v = line.partition(" ")
            if k == key and v.strip().isdigit():
                return int(v)
    except OSError:
        pass
    return 0


def _kill_all(d: str) -> bool:
    """SIGKILL every process in cgroup `d`; whether any was there."""
    kill_file = os.path.join(d, "cgroup.kill")
    try:
        pids = [int(p) for p in Path(d, "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return False
    if not pids:
        return False
    if os.path.exists(kill_file):
        with contextlib.suppress(OSError):
            _write(d, "cgroup.kill", 1)
    else:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
    return True
