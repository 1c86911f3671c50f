"""Background commands: `Bash(run_in_background)`, `BashOutput`, `KillShell`, `%agent_tasks`,
and that nothing they start outlives the conversation (reset) or the process (exit)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from ipy_agent import Agent, ScriptedModel
from ipy_agent.history.messages import history_problems
from ipy_agent.tools.bash import BashInput, BashOutputTool, BashTool, KillShellTool
from ipy_agent.tools.bash.background import shells_of
from ipy_agent.tools.bash.background_tools import BashOutputInput, KillShellInput
from ipy_agent.tools.bash.process import group_alive
from ipy_agent.ui.inspection import tasks_text
from tests.support.tools import DecidedContext, tool_ctx
from tests.support.transcript import all_results, result_text, use
from tests.support.waits import Deadline, timed_out, waiting_for

ROOT = Path(__file__).resolve().parents[3]


def _ctx(tmp_path: Path, **kw) -> DecidedContext:
    kw.setdefault("spill_dir", tmp_path / "spill")
    kw.setdefault("decided_by", "person")
    return tool_ctx(tmp_path, tool_use_id="toolu_1", **kw)


async def _start(ctx: DecidedContext, command: str) -> str:
    tool = BashTool()
    out = await tool.call(BashInput(command=command, run_in_background=True), ctx, ctx.decision)
    block = tool.map_result(out, "toolu_1")
    assert not block.get("is_error")
    assert block["content"].startswith(f"Command running in background with ID: {out.background_id}.")
    assert tool.summarize_result(out) == f"Started in the background as {out.background_id}"
    return str(out.background_id)


async def _output(ctx: DecidedContext, shell_id: str, pattern: str | None = None) -> str:
    tool = BashOutputTool()
    out = await tool.call(BashOutputInput(bash_id=shell_id, filter=pattern), ctx, ctx.decision)
    return result_text(tool.map_result(out, "toolu_2"))


def _until(check, what: str, seconds: float = 20) -> None:
    deadline = Deadline(seconds)
    with waiting_for(what):
        while not check():
            if deadline.passed():
                raise timed_out(what, seconds)
            time.sleep(0.02)


def _logged_lines(shell) -> int:
    """Lines in the log as a read sees them: the copier counts bytes (`written`) just after it
    writes them, so a read may lag the file by a moment; waiting on the file alone was flaky."""
    return shell.log_path.read_bytes()[: shell.written].count(b"\n")


def _wait_for_file(path: Path, what: str) -> str:
    _until(lambda: path.exists() and path.read_text().strip(), what)
    return path.read_text().strip()


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _pids_in_group(pgid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if fields[2] == str(pgid) and fields[0] != "Z":
                out.append(int(entry))
    return out


async def test_started_read_twice_with_a_filter_killed_and_its_group_gone(tmp_path):
    ctx = _ctx(tmp_path)
    go = tmp_path / "go"
    # Prints three lines, waits for a file, prints three more, then runs until stopped, with a
    # child of its own in the background (the group must go, not only the shell).
    command = (
        f"sleep 300 & echo $! > {tmp_path}/child; "
        "echo 'epoch 1 loss 0.9'; echo 'note: warming up'; echo 'epoch 2 loss 0.7'; "
        f"while [ ! -e {go} ]; do sleep 0.05; done; "
        "echo 'epoch 3 loss 0.5'; echo 'note: saved'; echo 'epoch 4 loss 0.4'; "
        "sleep 300"
    )
    shell_id = await _start(ctx, command)
    assert shell_id == "bash_1"
    child = int(_wait_for_file(tmp_path / "child", "the command's background child"))
    shell = shells_of(ctx.session).get(shell_id)
    _until(lambda: _logged_lines(shell) >= 3, "the first three lines in the log")

    first = await _output(ctx, shell_id, r"^epoch")
    assert first.splitlines()[0].startswith(f"[{shell_id}: running for ")
    assert "2 of 3 new lines matched the filter" in first
    assert "epoch 1 loss 0.9\nepoch 2 loss 0.7" in first and "note:" not in first

    go.touch()
    _until(lambda: _logged_lines(shell) >= 6, "the next three lines in the log")
    second = await _output(ctx, shell_id, r"^epoch")
    assert "epoch 3 loss 0.5\nepoch 4 loss 0.4" in second
    assert "epoch 1" not in second and "note:" not in second  # only what is new since the last read
    assert "(no new output)" in await _output(ctx, shell_id)

    listing = tasks_text(Agent(model=ScriptedModel([]), tools=[BashTool()], cwd=tmp_path))  # another conversation
    assert "Nothing runs in the background" in listing

    kill = KillShellTool()
    stopped = await kill.call(KillShellInput(shell_id=shell_id), ctx, ctx.decision)
    assert result_text(kill.map_result(stopped, "toolu_3")).startswith(f"Stopped {shell_id} and its process group")
    assert not group_alive(shell.proc.pid) and _pids_in_group(shell.proc.pid) == []
    assert child not in _pids_in_group(child) and not _running(child)
    assert (await _output(ctx, shell_id)).startswith(f"[{shell_id}: killed after ")
    again = await kill.call(KillShellInput(shell_id=shell_id), ctx, ctx.decision)
    assert "was no longer running: it killed after" in result_text(kill.map_result(again, "x"))


async def test_a_bad_id_or_filter_says_what_to_do(tmp_path):
    ctx = _ctx(tmp_path)
    with pytest.raises(Exception, match=r"No background command 'bash_9'.*known: none.*run_in_background"):
        await _output(ctx, "bash_9")
    shell_id = await _start(ctx, "echo hi")
    with pytest.raises(Exception, match=r"not a valid regular expression"):
        await _output(ctx, shell_id, "(")


async def test_output_past_the_limit_is_cut_with_the_logs_path(tmp_path):
    ctx = _ctx(tmp_path)
    shell_id = await _start(ctx, "seq 1 40000")
    shell = shells_of(ctx.session).get(shell_id)
    assert shell.wait(20)
    text = await _output(ctx, shell_id)
    assert len(text) < 33_000
    assert "cut from the middle" in text and str(shell.log_path) in text
    assert "\n1\n2\n3\n" in text and text.rstrip().splitlines()[-2] == "40000"
    assert shell.log_path.read_text().count("\n") == 40000


def test_background_asks_like_any_command_and_its_end_reaches_the_model(tmp_path):
    asked: list[str] = []
    model = ScriptedModel(
        [
            # It waits for `go`, made after the first run: its end cannot reach that run's last turn.
            [
                use(
                    "Bash",
                    "t1",
                    command="until [ -e go ]; do sleep 0.05; done; touch made-by-it; echo done-now",
                    run_in_background=True,
                )
            ],
            "started",
            "noted",
        ]
    )
    agent = Agent(
        model=model,
        tools=[BashTool(), BashOutputTool()],
        cwd=tmp_path,
        approver=lambda r: asked.append(r.tool_name) or "allow",
    )
    agent.run("start it")
    assert asked == ["Bash"]  # it writes: the person is asked, as in the foreground
    assert "bash_1" in result_text(all_results(agent.messages)["t1"])
    shell = shells_of(agent.session).get("bash_1")
    (tmp_path / "go").touch()
    assert shell.wait(20)
    assert "bash_1" in tasks_text(agent) and "exit 0" in tasks_text(agent)
    notices: list[str] = []
    agent.on_event(lambda e: notices.append(e.text) if getattr(e, "kind", "") == "notice" else None)
    agent.run("anything new?")
    prompt = model.requests[2]["messages"][-1]["content"]
    reminder = " ".join(b.get("text", "") for b in prompt if b.get("type") == "text")
    assert "Background command bash_1" in reminder and "exited with code 0" in reminder
    assert "BashOutput" in reminder  # it wrote output the model has not read
    assert any("Background command bash_1" in n for n in notices)  # and the person sees it too
    assert history_problems(agent.messages) == []
    agent.run("and now?")  # said once
    assert "Background command" not in str(model.requests[-1]["messages"][-1]["content"])


@pytest.mark.usefixtures("need_bwrap")
async def test_a_sandboxed_background_command_keeps_the_sandbox(tmp_path):
    # Read-only (the classifier's verdict): runs unasked, so in the read-only sandbox.
    ctx = _ctx(tmp_path, decided_by="tool")
    secret = tmp_path / "outside"
    shell_id = await _start(ctx, f"cat /etc/hostname > /dev/null; ls {tmp_path} && touch {secret}; echo exit=$?")
    shell = shells_of(ctx.session).get(shell_id)
    assert shell.wait(20)
    text = await _output(ctx, shell_id)
    assert "Read-only file system" in text or "Permission denied" in text
    assert not secret.exists()


async def test_reset_stops_background_commands(tmp_path):
    model = ScriptedModel(
        [[use("Bash", "t1", command=f"sleep 300 & echo $! > {tmp_path}/pid; wait", run_in_background=True)], "ok"]
    )
    agent = Agent(model=model, tools=[BashTool()], cwd=tmp_path, approver=lambda r: "allow")
    agent.run("go")
    child = int(_wait_for_file(tmp_path / "pid", "the background sleep's pid"))
    shell = shells_of(agent.session).get("bash_1")
    assert shell.running and group_alive(shell.proc.pid)
    agent.reset()
    assert not shell.running and shell.killed
    assert not group_alive(shell.proc.pid)
    assert _pids_in_group(shell.proc.pid) == [] and child not in _pids_in_group(shell.proc.pid)
    assert "Nothing runs in the background" in tasks_text(agent)


def test_process_exit_stops_background_commands(tmp_path):
    """A Python process (a kernel) that exits normally takes its background commands with it."""
    script = textwrap.dedent(
        f"""
        import asyncio, sys
        sys.path.insert(0, {str(ROOT)!r})
        from ipy_agent.tools.bash import BashInput, BashTool
        from tests.support.tools import tool_ctx
        from pathlib import Path
        ctx = tool_ctx(Path({str(tmp_path)!r}), decided_by="person", spill_dir=Path({str(tmp_path / "spill")!r}))
        out = asyncio.run(BashTool().call(BashInput(command="echo $$ > pgid; sleep 300", run_in_background=True), ctx, ctx.decision))
        import time
        while not Path({str(tmp_path / "pgid")!r}).read_text() if Path({str(tmp_path / "pgid")!r}).exists() else True:
            time.sleep(0.02)
        print("started", flush=True)
        """
    )
    run = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert "started" in run.stdout
    pgid = int((tmp_path / "pgid").read_text())
    assert not group_alive(pgid), "the background command outlived the process that started it"
