"""The OS sandbox, by attack: what runs because it was judged read-only cannot write, connect,
read a denied file or leave a process behind; what a person or a rule approved still works.

Tool-level cases set `decided_by` as the lifecycle does ("tool" = judged read-only by Bash
itself); the agent-level cases go through the real lifecycle and permission decision, so they
also prove the decision reaches the tool.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

import ipy_agent.loop.tool_session as tool_session
from ipy_agent import Agent, ScriptedModel
from ipy_agent.tools.bash import BashInput, BashTool
from ipy_agent.tools.bash import sandbox as sandbox_mod
from ipy_agent.tools.bash.core import CORE_PROGRAMS, core_read_only
from tests.support.fuzz_world import Listener
from tests.support.tools import DecidedContext, tool_ctx, write_tree
from tests.support.transcript import results_of, use

pytestmark = pytest.mark.usefixtures("need_bwrap")

STOPPED = "dangerouslyDisableSandbox"  # the clear message names the way out


def _ctx(cwd: Path, decided_by: str | None = "tool", **kw) -> DecidedContext:
    return tool_ctx(
        cwd,
        tool_use_id="toolu_1",
        spill_dir=cwd.parent / "spill",
        decided_by=decided_by,
        **kw,
    )  # type: ignore[arg-type]


async def _bash(ctx: DecidedContext, command: str) -> dict:
    tool = BashTool()
    return tool.map_result(await tool.call(BashInput(command=command), ctx, ctx.decision), "toolu_1")


def _snapshot(*roots: Path) -> dict[str, bytes | None]:
    out: dict[str, bytes | None] = {}
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            for name in dirnames:
                out[os.path.join(dirpath, name)] = None
            for name in filenames:
                p = os.path.join(dirpath, name)
                out[p] = Path(p).read_bytes() if not os.path.islink(p) else os.readlink(p).encode()
    return out


@pytest.fixture(autouse=True)
def fake_home(tmp_path: Path, monkeypatch) -> Path:
    """A HOME of our own: the real one is shared with other programs that write to it."""
    home = write_tree(tmp_path / "home", {".bashrc": "# rc\n", ".config/app/settings": "x\n"})
    monkeypatch.setenv("HOME", str(home))
    return home


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write_tree(
        tmp_path / "proj",
        {
            "notes.txt": "hello\n",
            ".env": "API=s3cr3t-value\n",
            "secrets/key.pem": "PRIVATE\n",
            "src/a.py": "print(1)\n",
        },
    )


@pytest.fixture
def outside():
    """A directory outside the working directories and outside /tmp (the sandbox has its own
    /tmp, so a write there would vanish rather than fail)."""
    import shutil
    import tempfile

    d = Path(tempfile.mkdtemp(prefix="ipy_agent_outside_", dir="/var/tmp"))
    yield d
    shutil.rmtree(d)


@pytest.fixture
def listener():
    lst = Listener()
    yield lst
    lst.close()


# --- what the sandbox stops --------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "echo pwned > notes.txt",
        "rm -f notes.txt",
        "mkdir newdir",
        "touch src/new.py",
        "echo pwned >> ~/.bashrc",
        "touch ~/.ipy_agent_sandbox_canary",
        "mkdir -p ~/.config/ipy_agent_canary",
        'python3 -c \'open("notes.txt", "w").write("x")\'',
    ],
)
async def test_a_read_only_judged_write_is_stopped_and_changes_nothing(project, command):
    before = _snapshot(project, Path.home())
    block = await _bash(_ctx(project), command)
    assert block.get("is_error"), block
    assert "Read-only file system" in block["content"]
    assert STOPPED in block["content"] and "sandbox" in block["content"]
    assert _snapshot(project, Path.home()) == before
    assert (project / "notes.txt").read_text() == "hello\n"


@pytest.mark.parametrize(
    "how",
    [
        "exec 3<>/dev/tcp/127.0.0.1/{port}",
        "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), timeout=2)'",
        "curl -s --max-time 2 http://127.0.0.1:{port}/ || exit 7",
    ],
)
async def test_a_read_only_judged_connection_never_reaches_a_local_listener(project, listener, how):
    if how.startswith("curl") and not any(os.access(os.path.join(d, "curl"), os.X_OK) for d in ("/usr/bin", "/bin")):
        pytest.skip("curl is not installed")
    block = await _bash(_ctx(project), how.format(port=listener.port))
    assert block.get("is_error")
    assert listener.close() == 0  # nothing connected
    if not how.startswith("curl"):
        assert "Connection refused" in block["content"] and STOPPED in block["content"]


@pytest.mark.parametrize("rules", [(".env", "secrets/**"), ("**/.env", "secrets/*.pem"), ("/.env", "*.pem")])
async def test_denied_files_are_masked(project, rules):
    ctx = _ctx(project, read_deny=rules)
    block = await _bash(ctx, "cat .env; cat secrets/key.pem; grep -r s3cr3t .; grep -r PRIVATE .")
    assert "s3cr3t" not in block["content"] and "PRIVATE" not in block["content"]


async def test_a_denied_directory_is_masked_whole(project):
    ctx = _ctx(project, read_deny=("secrets",))
    block = await _bash(ctx, "ls -A secrets | wc -l; cat secrets/key.pem")
    assert block["content"].splitlines()[:2] == ["Exit code 1", "0"] and "PRIVATE" not in block["content"]
    # Not denied: readable as usual.
    assert (await _bash(ctx, "cat notes.txt"))["content"] == "hello"


async def test_home_is_empty_and_tmp_is_private(project):
    marker = Path("/tmp") / f"ipy_agent_canary_{os.getpid()}"
    marker.write_text("outside")
    try:
        block = await _bash(_ctx(project), f"ls -A ~ | grep -c . ; cat {marker}; echo inside > {marker}; cat {marker}")
    finally:
        assert marker.read_text() == "outside"  # the private /tmp took the write
        marker.unlink()
    assert "outside" not in block["content"]
    assert block["content"].rstrip().endswith("inside")


async def test_a_background_process_does_not_outlive_a_sandboxed_call(project):
    tag = "31.4159"
    block = await _bash(_ctx(project), f"sleep {tag} & echo started")
    assert block["content"] == "started"
    assert not _still_running(tag)


async def test_a_person_approved_write_still_works_and_may_keep_a_background_process(project):
    block = await _bash(_ctx(project, decided_by="person"), "echo new > made.txt && cat made.txt")
    assert block["content"] == "new" and (project / "made.txt").read_text() == "new\n"
    tag = "27.1828"
    await _bash(_ctx(project, decided_by="person"), f"sleep {tag} > /dev/null 2>&1 &")
    try:
        assert _processes_with(tag), "a background run a person approved keeps running, as the description promises"
    finally:
        for pid in _processes_with(tag):
            os.kill(pid, 9)


@pytest.mark.parametrize("decided_by", ["rule", "mode", "hook"])
async def test_a_rule_or_mode_approved_command_writes_the_working_dirs_only_and_leaves_nothing(
    project, outside, decided_by
):
    canary = outside / "canary"
    tag = "26.1828"
    block = await _bash(
        _ctx(project, decided_by=decided_by),
        f"echo new > made.txt && cat made.txt && (sleep {tag} > /dev/null 2>&1 &) && echo bad > {canary}",
    )
    assert (project / "made.txt").read_text() == "new\n" and not canary.exists()
    assert block.get("is_error") and "dangerouslyDisableSandbox" in block["content"], block
    assert not _still_running(tag), "nothing a sandboxed command starts outlives the call"


async def test_sandbox_always_limits_approved_writes_to_the_working_dirs(project):
    ctx = _ctx(project, decided_by="person", sandbox="always")
    block = await _bash(ctx, f"echo ok > inside.txt && echo bad > {Path.home()}/.ipy_agent_always_canary")
    assert (project / "inside.txt").read_text() == "ok\n"
    assert not (Path.home() / ".ipy_agent_always_canary").exists()
    # HOME is read-only there; this test's HOME is under /tmp, which the sandbox has its own of.
    assert "Read-only file system" in block["content"] or "No such file" in block["content"]


async def test_an_unknown_decision_is_sandboxed(project):
    block = await _bash(_ctx(project, decided_by=None), "echo x > notes.txt")
    assert "Read-only file system" in block["content"]
    assert (project / "notes.txt").read_text() == "hello\n"


def _still_running(text: str, seconds: float = 5.0) -> list[int]:
    """The processes running `text` once the kernel had up to `seconds` to finish killing them.
    Without a cgroup (a kernel that is not root) the call ends when bubblewrap reports the
    command's exit, and the end of the sandbox's pid namespace kills what is left a moment
    later: a process it left running would still be there (the tags sleep for 26 s and more)."""
    from tests.support.waits import Deadline

    deadline = Deadline(seconds)
    while (left := _processes_with(text)) and not deadline.passed():
        time.sleep(0.02)
    return left


def _processes_with(text: str) -> list[int]:
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if text in cmd and "sleep" in cmd and state != "Z":
            found.append(int(pid))
    return found


# --- through the agent: the decision reaches the tool --------------------------------------------


def _agent(cwd: Path, turns: list, **kw) -> Agent:
    from ipy_agent.tools import builtin_tools

    return Agent(model=ScriptedModel(turns), cwd=cwd, tools=builtin_tools(), **kw)


def test_through_the_agent_a_read_only_command_runs_sandboxed_and_an_allowed_one_does_not(project):
    # The probe must itself run unasked: a read-only command on a file inside the project (`ls
    # /dev/` now asks, as any path outside the working directories does). In the sandbox the
    # project is mounted read-only, so the same file that is writable outside is not inside.
    probe = "test -w notes.txt && echo writable || echo read-only"
    assert os.access(project / "notes.txt", os.W_OK), "precondition: the file is writable outside the sandbox"
    agent = _agent(
        project,
        [[use("Bash", "t1", command=probe)], [use("Bash", "t2", command="touch made.txt")], "done"],
        allow=["Bash(touch:*)"],
    )
    agent.run("go")
    assert results_of(agent.messages[2])["t1"]["content"] == "read-only"
    assert agent.trace[0].decision.source == "tool"  # judged read-only by Bash: sandboxed
    assert agent.trace[1].decision.source == "rule" and (project / "made.txt").exists()


def test_leaving_the_sandbox_asks_the_person(project):
    asked = []

    def approver(request):
        asked.append(request.input["command"])
        return "allow"

    agent = _agent(
        project,
        [[use("Bash", "t1", command="cat notes.txt", dangerouslyDisableSandbox=True)], "done"],
        approver=approver,
    )
    agent.run("go")
    assert asked == ["cat notes.txt"]
    assert results_of(agent.messages[2])["t1"]["content"] == "hello"


# --- without a sandbox: said once, and only the core runs unasked --------------------------------


@pytest.fixture
def no_bwrap(monkeypatch):
    monkeypatch.setattr(sandbox_mod, "BWRAP", "no-such-bwrap-ipy-agent")
    monkeypatch.setattr(tool_session, "_SAID", set())  # what tools warned about, said once per kernel
    sandbox_mod.sandbox_status.cache_clear()
    yield
    sandbox_mod.sandbox_status.cache_clear()


def test_without_bubblewrap_only_core_commands_run_unasked_and_it_is_said_once(project, no_bwrap):
    from ipy_agent.runtime.trace import NoticeEvent
    from ipy_agent.ui.inspection import tools_text

    notices: list[str] = []
    turns = [[use("Bash", "t1", command="ls -la src"), use("Bash", "t2", command="git status")], "ok"]
    agent = _agent(project, turns)
    agent.on_event(lambda e: notices.append(e.text) if isinstance(e, NoticeEvent) else None)
    agent.run("go")
    res = results_of(agent.messages[2])
    assert "a.py" in res["t1"]["content"] and not res["t1"].get("is_error")
    assert res["t2"].get("is_error") and "no OS sandbox" in res["t2"]["content"]
    assert "bubblewrap is not installed" in tools_text(agent)
    agent2 = _agent(project, ["again"])
    agent2.on_event(lambda e: notices.append(e.text) if isinstance(e, NoticeEvent) else None)
    agent2.run("go")
    assert sum("no OS sandbox" in n for n in notices) == 1


def test_sandbox_off_is_the_same_as_no_bubblewrap(project):
    agent = _agent(project, [[use("Bash", "t1", command="git status")], "ok"], sandbox="off")
    agent.run("go")
    assert "the sandbox setting is 'off'" in results_of(agent.messages[2])["t1"]["content"]


@pytest.mark.parametrize(
    "command",
    [
        "ls -la",
        "cat notes.txt | grep -c l",
        "wc -l src/a.py 2>/dev/null",
        "head -n 3 notes.txt",
        "cd src && ls",
        "grep -rn hello .",
        "diff notes.txt src/a.py",
    ],
)
def test_core_commands(command):
    assert core_read_only(command)


@pytest.mark.parametrize(
    "command",
    [
        "git status",
        "sort -o out notes.txt",
        "cat $HOME/x",
        "cat ~/x",
        "cat `echo x`",
        "cat <(ls)",
        "ls > out",
        "cat <<EOF\n$(touch x)\nEOF",
        "echo \\$(id)",
        "env cat x",
        "find . -name x",
        "sed -n 1p notes.txt",
        "LANG=C ls",
        "uniq a b",
        "cat notes.txt\ntouch x",
    ],
)
def test_not_core_commands(command):
    assert not core_read_only(command)


def test_core_programs_are_a_small_closed_set():
    assert len(CORE_PROGRAMS) < 60
    assert not CORE_PROGRAMS & {
        "sort",
        "uniq",
        "file",
        "tree",
        "date",
        "find",
        "sed",
        "awk",
        "git",
        "jq",
        "xargs",
        "env",
    }


async def test_concurrent_sandboxed_calls_do_not_share_tmp(project):
    a, b = await asyncio.gather(
        _bash(_ctx(project), "echo a > /tmp/x; sleep 0.3; cat /tmp/x"),
        _bash(_ctx(project), "echo b > /tmp/x; sleep 0.3; cat /tmp/x"),
    )
    assert (a["content"], b["content"]) == ("a", "b")


def test_the_description_promises_the_sandbox_only_where_there_is_one(project, no_bwrap):
    from ipy_agent.tools.bash import BashTool

    without = BashTool().description(_ctx(project))
    assert "read-only sandbox" not in without and "no OS sandbox here" in without
    sandbox_mod.sandbox_status.cache_clear()


def test_agent_tools_names_the_sandbox_setting(project):
    from ipy_agent.ui.inspection import tools_text

    assert "Bash sandbox: always" in tools_text(_agent(project, [], sandbox="always"))
    with pytest.raises(ValueError, match="sandbox 'maybe'"):
        _agent(project, [], sandbox="maybe")


async def test_git_works_sandboxed_in_a_subdirectory_and_a_worktree(tmp_path):
    import subprocess

    repo = write_tree(tmp_path / "repo", {"top.txt": "t\n", "pkg/mod.py": "x = 1\n"})
    git = ["git", "-c", "user.email=a@b", "-c", "user.name=a"]
    for args in (
        ["init", "-q"],
        ["add", "-A"],
        ["commit", "-qm", "first"],
        ["worktree", "add", "-q", str(tmp_path / "wt")],
    ):
        subprocess.run([*git, *args], cwd=repo, check=True, capture_output=True)
    (repo / "pkg" / "mod.py").write_text("x = 2\n")
    sub = await _bash(_ctx(repo / "pkg"), "git status --short && git log --oneline | wc -l")
    assert sub["content"].split() == ["M", "mod.py", "1"], sub  # git prints paths relative to cwd
    wt = await _bash(_ctx(tmp_path / "wt"), "git log --oneline | wc -l && git status --short | wc -l")
    assert wt["content"].split() == ["1", "0"], wt
    # Still read-only: the repository above is visible, not writable.
    block = await _bash(_ctx(repo / "pkg"), "touch ../top2.txt")
    assert "Read-only file system" in block["content"] and not (repo / "top2.txt").exists()


async def test_an_ordinary_failure_gets_no_sandbox_note(project):
    block = await _bash(_ctx(project), "ls no-such-file")
    assert block.get("is_error") and "No such file" in block["content"] and STOPPED not in block["content"]


@pytest.mark.parametrize("decided_by", ["tool", "mode"])
async def test_a_denied_file_that_appears_between_commands_is_masked_in_the_next(project, decided_by):
    """Walks are reused while directories are unchanged: a new file changes its directory."""
    import time

    deep = project / "a" / "b" / "c"
    deep.mkdir(parents=True)
    ctx = _ctx(project, decided_by=decided_by, read_deny=("**/.env", "**/*.pem"))
    assert (await _bash(ctx, "cat a/b/c/x 2>&1; true"))["content"].endswith("No such file or directory")
    time.sleep(2.1)  # past the window in which a directory's listing is never reused
    assert (await _bash(ctx, "ls a/b/c | wc -l"))["content"] == "0"  # the walk above is now reusable
    (deep / ".env").write_text("NEW=s3cr3t-late\n")
    (deep / "late.pem").write_text("LATE PRIVATE\n")
    block = await _bash(ctx, "cat a/b/c/.env a/b/c/late.pem; grep -r s3cr3t-late .; grep -r 'LATE PRIVATE' .")
    assert "s3cr3t-late" not in block["content"] and "LATE PRIVATE" not in block["content"], block
