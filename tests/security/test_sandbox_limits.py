"""Resource bombs under the sandbox's limits: memory, processes, temporary space, wall time.

Each case is a bomb a command could be (some of them judged read-only and so run unasked:
`sort /dev/zero` holds all of an endless input in memory), run with small limits in the
sandbox it would get. A sampler watches the machine meanwhile and counts, per sandbox (a pid
namespace whose processes carry this test's mark), the processes that ran at once. A case holds
when the bomb was stopped at its limit (the count stayed within it, the memory was refused, the
write failed past the size, the time ran out) and nothing of it is left afterwards.

Then the same limits through a real kernel, run as root and as an unprivileged user (`setpriv`
to uid 65534): the limits bite in both (a cgroup for root where one can be made, resource limits
in the user namespace otherwise), and the kernel still answers.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from pathlib import Path

import pytest

from ipy_agent.tools.bash.resources import limits_status
from tests.support.containment import Family, bash, context, small_limits

pytestmark = pytest.mark.usefixtures("need_bwrap")

MARK = "IPY_LIMITS_MARK"
MIB = 1024**2


class Sampler:
    """Counts, every few milliseconds, the processes of each pid namespace (sandboxes: not ours)
    that carry `mark` in their environment; `most` is the largest count seen in any one."""

    def __init__(self, mark: str) -> None:
        self.mark = f"{MARK}={mark}".encode()
        self.most = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.most = max(self.most, max(self.count().values(), default=0))
            self._stop.wait(0.005)

    def count(self) -> dict[str, int]:
        per_ns: dict[str, int] = {}
        ours = os.readlink("/proc/self/ns/pid")
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                if self.mark not in Path(f"/proc/{pid}/environ").read_bytes():
                    continue
                ns = os.readlink(f"/proc/{pid}/ns/pid")
            except OSError:
                continue
            if ns == ours:
                continue
            per_ns[ns] = per_ns.get(ns, 0) + 1
        return per_ns


@pytest.fixture
def marked(monkeypatch) -> str:
    mark = uuid.uuid4().hex
    monkeypatch.setenv(MARK, mark)  # commands inherit it (it names no secret)
    return mark


@pytest.fixture
def project(tmp_path: Path) -> Path:
    p = tmp_path / "proj"
    p.mkdir()
    (p / "fork.py").write_text(
        # Every child lives until the parent ends (it reads a pipe only the parent holds open),
        # so all of them are alive at once however slowly a loaded machine forks them.
        "import os, sys, time\n"
        "r, w = os.pipe()\n"
        "n = 0\n"
        "try:\n"
        "    for _ in range(int(sys.argv[1])):\n"
        "        if os.fork() == 0:\n"
        "            os.close(w)\n"
        "            os.read(r, 1)\n"
        "            os._exit(0)\n"
        "        n += 1\n"
        "except OSError as e:\n"
        "    print('refused after', n, e.strerror)\n"
        "print('started', n, flush=True)\n"
        "time.sleep(3)\n"
    )
    (p / "hog.py").write_text(  # hog.py N [HOLD]: N x 16 MiB, held HOLD seconds before it says so
        "import sys, time\n"
        "blocks = []\n"
        "for _ in range(int(sys.argv[1])):\n"
        "    blocks.append(bytearray(16 * 1024 * 1024))\n"
        "time.sleep(float(sys.argv[2]) if len(sys.argv) > 2 else 0)\n"
        "print('GOT ALL', len(blocks) * 16, 'MiB')\n"
    )
    (p / "memfd.py").write_text(
        "import os, sys\n"
        "fd = os.memfd_create('x')\n"
        "for _ in range(int(sys.argv[1])):\n"
        "    os.write(fd, b'x' * 16 * 1024 * 1024)\n"
        "print('GOT ALL')\n"
    )
    return p


def _bombs(cgroup: bool) -> list[tuple[str, str, str, str]]:
    """(name, who decided, command, what shows it held). Limits: 256 MiB, 48 processes, 16 MiB."""
    out = [
        ("memory: one process", "mode", "python3 hog.py 40", "no GOT ALL"),
        ("memory: judged read-only, sort /dev/zero", "tool", "sort /dev/zero", "failed"),
        ("memory or time: judged read-only, grep an endless line", "tool", "grep -c x /dev/zero", "stopped"),
        ("processes: a fork loop", "mode", "python3 fork.py 500", "within"),
        ("processes: a shell fork bomb", "mode", ":(){ :|:& };:", "within"),
        ("processes: xargs fan-out", "mode", "seq 500 | xargs -P0 -n1 sleep 3", "within"),
        ("processes: background loop", "mode", "for i in $(seq 500); do sleep 3 & done; wait", "within"),
        ("tmpfs: /tmp", "mode", "head -c 64M /dev/zero > /tmp/x", "No space"),
        ("tmpfs: /dev/shm", "mode", "head -c 64M /dev/zero > /dev/shm/x", "No space"),
        ("tmpfs: /tmp, judged read-only", "tool", "sort -T /tmp -S 1M /dev/zero", "failed"),
        ("time: sleep", "mode", "sleep 600", "timed out"),
        ("time: ignores SIGTERM, new session", "mode", "setsid sh -c \"trap '' TERM; sleep 600\" & wait", "timed out"),
    ]
    if cgroup:
        # Without a cgroup memory is limited per process: these two are what only a cgroup stops.
        out += [
            # Each holds its 64 MiB for 3 s, so all six are alive at once (384 MiB against 256 MiB)
            # however the machine schedules them: without the hold, a loaded machine once ran them
            # nearly one after another, and each got its 64 MiB within the limit.
            ("memory: many processes", "mode", "for i in 1 2 3 4 5 6; do python3 hog.py 4 3 & done; wait", "killed"),
            ("memory: a memfd", "mode", "python3 memfd.py 40", "no GOT ALL"),
        ]
    return out


@pytest.mark.slow
async def test_resource_bombs_stop_at_the_limits(project, marked):
    cgroup = bool(limits_status().cgroup)
    limits = small_limits()
    family = Family("bombs")
    for name, decided_by, command, sign in _bombs(cgroup):
        start = time.monotonic()
        with Sampler(marked) as sampler:
            timeout_ms = 3_000 if sign in ("timed out", "stopped") else 8_000
            block = await bash(context(project, decided_by, sandbox_limits=limits), command, timeout_ms=timeout_ms)
        elapsed = time.monotonic() - start
        text = block["content"]
        left = sum(Sampler(marked).count().values())
        held = {
            "no GOT ALL": "GOT ALL" not in text and bool(block.get("is_error")),
            "failed": bool(block.get("is_error")) and not text.startswith("Timed out"),
            "within": sampler.most <= limits.processes + 2,  # the shell and bubblewrap's init
            "No space": "No space left on device" in text,
            "timed out": text.startswith("Timed out") and elapsed < 30,
            "stopped": bool(block.get("is_error")) and elapsed < 30,
            "killed": "Killed" in text or "MemoryError" in text or "[sandbox]" in text,
        }[sign]
        why = f"{text[:300]!r}; most processes at once {sampler.most}; {elapsed:.1f} s; left {left}"
        family.record(f"{name} ({decided_by})", held=held and left == 0, why=why)
    print(f"[bombs] limits enforced by: {limits_status().how}")
    family.report()


async def test_the_sampler_sees_what_it_must(project, marked):
    """The detector itself: unlimited, a fan-out does go past the count the limit allows."""
    from ipy_agent.contract.tool_context import SandboxLimits

    roomy = SandboxLimits(memory=2 * 1024**3, processes=4096, tmp=16 * MIB)
    with Sampler(marked) as sampler:
        await bash(context(project, "mode", sandbox_limits=roomy), "python3 fork.py 120", timeout_ms=20_000)
    assert sampler.most > small_limits().processes + 2, sampler.most


# --- through a real kernel, as root and as an unprivileged user -----------------------------------

KERNEL_CELL = """
import json
from ipy_agent import Agent, ScriptedModel
from ipy_agent.tools import builtin_tools

def use(tid, command, timeout=8000):
    return {{"type": "tool_use", "id": tid, "name": "Bash", "input": {{"command": command, "timeout": timeout}}}}

commands = {commands!r}
turns = [*([use(f"t{{i}}", c)] for i, c in enumerate(commands)), "done"]
agent = Agent(ScriptedModel(turns), cwd={cwd!r}, tools=builtin_tools(), permission_mode="bypassPermissions",
              sandbox_limits={{"memory": 256 * 1024**2, "processes": 48, "tmp": 16 * 1024**2}}, max_concurrency=1)
agent.run("go")
results = {{b["tool_use_id"]: b["content"] for m in agent.messages if isinstance(m["content"], list)
           for b in m["content"] if b.get("type") == "tool_result"}}
from ipy_agent.tools.bash.sandbox import sandbox_status
print(json.dumps({{"results": results, "how": sandbox_status().limits, "uid": __import__("os").getuid()}}))
"""

KERNEL_BOMBS = [
    ("memory", "python3 hog.py 40"),
    ("processes", "python3 fork.py 500"),
    ("tmpfs", "head -c 64M /dev/zero > /tmp/x"),
    ("time", "sleep 600"),
]


@pytest.mark.kernel
@pytest.mark.parametrize("user", ["root", "unprivileged"])
def test_limits_bite_through_a_real_kernel_that_stays_responsive(project, marked, user, request):
    import json
    import shutil
    import tempfile

    from tests.security import unprivileged
    from tests.support.kernel import PROJECT_ROOT

    launcher: tuple[str, ...] = ()
    env: dict[str, str] = {}
    kernel_args: dict[str, str] = {}
    from tests.support.fixtures import require_root

    if user == "unprivileged":
        require_root("the test starts a kernel as another user")
        if (why := unprivileged.available()) and os.environ.get("CI") == "true":
            pytest.fail(why)
        if why:
            pytest.skip(why)
        # Out of pytest's temp tree (only root may enter it): a directory the user can reach.
        base = Path(tempfile.mkdtemp(prefix="ipy_agent_nobody_", dir="/tmp"))
        request.addfinalizer(lambda: shutil.rmtree(base, ignore_errors=True))
        base.chmod(0o755)
        project = Path(shutil.copytree(project, base / "proj"))
        shared = base / "shared"
        shared.mkdir()
        (base / "stage").mkdir()
        for d in (project, shared):
            d.chmod(0o777)
        launcher = tuple(unprivileged.launcher(unprivileged.needed_paths(PROJECT_ROOT), base / "stage"))
        env = {"HOME": str(shared), "IPYTHONDIR": str(shared / "ipython"), "JUPYTER_RUNTIME_DIR": str(shared)}
        kernel_args = {"ip": str(shared / "k"), "connection_file": str(shared / "kernel.json")}
    else:
        require_root("the root case starts a root kernel")
    from tests.support.kernel import Kernel

    commands = [c for _, c in KERNEL_BOMBS]
    with Kernel(project, env=env, launcher=launcher, **kernel_args) as kernel:
        out = kernel.check(KERNEL_CELL.format(commands=commands, cwd=str(project)), timeout=240)
        report = json.loads(out.strip().splitlines()[-1])
        assert report["uid"] == (0 if user == "root" else unprivileged.NOBODY), report
        results = report["results"]
        print(f"\n[limits/{user}] uid {report['uid']}, enforced by {report['how']}")
        shown = {}
        for i, (kind, _command) in enumerate(KERNEL_BOMBS):
            text = results[f"t{i}"]
            shown[kind] = text
            print(f"[limits/{user}]   {kind}: {text.splitlines()[0][:100] if text else ''}")
        assert "GOT ALL" not in shown["memory"] and ("Killed" in shown["memory"] or "MemoryError" in shown["memory"])
        refused = [line for line in shown["processes"].splitlines() if line.startswith("refused after")]
        assert refused and int(refused[0].split()[2]) < 48, shown["processes"]
        assert "No space left on device" in shown["tmpfs"]
        assert shown["time"].startswith("Timed out")
        # The kernel is alive and answers, and nothing of the bombs is left.
        assert kernel.check("print(6 * 7)").strip() == "42"
        assert not Sampler(marked).count(), "processes of the bombs are left"
