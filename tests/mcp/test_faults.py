"""A server that crashes, hangs or never starts: a clear error for the model, a valid history,
a notice for the person with the server's last stderr lines, a restart at the next call, and
no process left behind."""

from __future__ import annotations

import os
from pathlib import Path

import psutil

from ipy_agent import ScriptedModel
from ipy_agent.history.messages import history_problems
from ipy_agent.runtime.trace import NoticeEvent
from tests.support.mcp import BROKEN, stdio
from tests.support.transcript import all_results, result_text, use


def _children() -> set[int]:
    return {
        p.pid
        for p in psutil.Process(os.getpid()).children(recursive=True)
        if p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    }


def _notices(agent) -> list[str]:
    seen: list[str] = []
    agent.on_event(lambda e: seen.append(e.text) if isinstance(e, NoticeEvent) else None)
    return seen


def test_a_crash_mid_call_is_an_error_and_the_server_restarts_at_the_next_call(make_agent):
    model = ScriptedModel([[use("mcp__tb__crash", "1")], [use("mcp__tb__lookup", "2", key="k")], "done"])
    agent = make_agent(model=model, mcp_servers={"tb": stdio()}, allow=["mcp__tb"])
    notices = _notices(agent)
    result = agent.run("go")
    assert result.stop_reason == "end_turn"
    crash = all_results(agent.messages)["1"]
    assert crash["is_error"]
    assert "The MCP server 'tb' is down: it exited during the call" in result_text(crash)
    assert "toolbox: about to crash on purpose" in result_text(crash)  # its stderr, for the model too
    assert result_text(all_results(agent.messages)["2"]) == "value of k"  # started again
    assert agent.mcp.connection("tb").starts == 2
    assert any("MCP server 'tb' is down" in n and "about to crash" in n for n in notices)
    assert history_problems(agent.messages) == []


def test_a_hung_call_times_out_and_the_hung_server_is_stopped(make_agent):
    before = _children()
    model = ScriptedModel([[use("mcp__tb__hang", "1")], [use("mcp__tb__lookup", "2", key="k")], "done"])
    agent = make_agent(model=model, mcp_servers={"tb": stdio(timeout=1)}, allow=["mcp__tb"])
    agent.run("go")
    hung = all_results(agent.messages)["1"]
    assert hung["is_error"]
    assert "did not answer within 1 s" in result_text(hung) and "toolbox: hanging on purpose" in result_text(hung)
    assert result_text(all_results(agent.messages)["2"]) == "value of k"
    # Only the restarted server is left: the hung one was stopped, not abandoned.
    assert len(_children() - before) == 1
    assert history_problems(agent.messages) == []


def test_a_server_that_never_starts_is_reported_and_the_agent_runs_on(make_agent):
    model = ScriptedModel([[use("mcp__tb__lookup", "1", key="k"), use("mcp__bad__anything", "2")], "done"])
    agent = make_agent(
        model=model, mcp_servers={"tb": stdio(), "bad": stdio(BROKEN), "gone": {"command": "/nonexistent/mcp-server"}}
    )
    notices = _notices(agent)
    result = agent.run("go")
    assert result.stop_reason == "end_turn"
    assert result_text(all_results(agent.messages)["1"]) == "value of k"
    assert all_results(agent.messages)["2"]["is_error"]  # no such tool: it never listed any
    system = model.requests[0]["system"]
    assert "- bad: DOWN, it failed to start: it exited before answering" in system
    assert "broken: missing configuration: set TOOLBOX_TOKEN" in system  # the model is told why
    assert "- gone: DOWN, it failed to start: the command '/nonexistent/mcp-server' was not found" in system
    bad = [n for n in notices if "'bad'" in n]
    assert len(bad) == 1 and "set TOOLBOX_TOKEN" in bad[0]
    assert history_problems(agent.messages) == []
    # The next run tries once more, and says so again only if the reason changed.
    agent.run("again")
    assert agent.mcp.connection("bad").starts == 2
    assert len([n for n in notices if "'bad'" in n]) == 1


def test_no_server_process_is_left_after_close(make_agent):
    before = _children()
    model = ScriptedModel([[use("mcp__one__lookup", "1", key="k"), use("mcp__two__lookup", "2", key="k")], "done"])
    agent = make_agent(model=model, mcp_servers={"one": stdio(), "two": stdio()})
    agent.run("go")
    started = _children() - before
    assert len(started) == 2
    procs = [psutil.Process(pid) for pid in started]
    agent.close()
    assert not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in procs)
    assert _children() - before == set()
    assert not agent.mcp._loop.running  # the background loop's thread is gone too
    # A new run starts them again, lazily.
    agent.run("again")
    assert len(_children() - before) == 2


def test_servers_are_closed_when_the_interpreter_exits(tmp_path):
    """A kernel shutting down runs atexit: the servers go with it, even without close(). The
    server here outlives its stdin (a shell that goes on after the server ends and ignores
    SIGTERM), so only the manager's own shutdown (TERM, then KILL to the group) ends it."""
    import subprocess
    import sys

    from tests.support.mcp import TOOLBOX

    server = {"command": "sh", "args": ["-c", f"trap '' TERM; {sys.executable} {TOOLBOX}; sleep 120"]}
    code = (
        "import psutil\n"
        "from ipy_agent import Agent, ScriptedModel\n"
        f"a = Agent(model=ScriptedModel(['done']), cwd={str(tmp_path)!r}, tools=[], mcp_servers={{'tb': {server!r}}})\n"
        "a.run('go')\n"
        "print(*[p.pid for p in psutil.Process().children(recursive=True)])\n"
    )
    root = str(Path(__file__).resolve().parents[2])
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root, timeout=300)
    assert out.returncode == 0, out.stderr
    pids = [int(p) for p in out.stdout.split()]
    assert len(pids) == 2  # the shell and the server under it
    alive = [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
    assert alive == []


def test_garbage_from_the_server_is_a_clear_error_and_the_server_goes_on(make_agent):
    model = ScriptedModel([[use("mcp__tb__garbage", "1")], [use("mcp__tb__lookup", "2", key="k")], "done"])
    agent = make_agent(model=model, mcp_servers={"tb": stdio()})
    agent.run("go")
    bad = all_results(agent.messages)["1"]
    assert bad["is_error"]
    assert result_text(bad).startswith(
        "The MCP tool 'garbage' of server 'tb' failed: its answer is not a valid MCP tool result"
    )
    assert result_text(all_results(agent.messages)["2"]) == "value of k"
    assert agent.mcp.connection("tb").starts == 1
    assert history_problems(agent.messages) == []


def test_an_interrupt_during_a_call_keeps_the_history_valid_and_the_server_up(make_agent):
    import threading
    import time

    model = ScriptedModel([[use("mcp__tb__hang", "1")], [use("mcp__tb__lookup", "2", key="k")], "done"])
    agent = make_agent(model=model, mcp_servers={"tb": stdio()}, allow=["mcp__tb"])
    box: dict = {}
    worker = threading.Thread(target=lambda: box.setdefault("result", agent.run("go")))
    worker.start()
    deadline = time.monotonic() + 120
    while "hanging on purpose" not in (((c := agent.mcp.connection("tb")) and c.stderr_tail()) or ""):
        assert time.monotonic() < deadline, "the hang tool never started"
        time.sleep(0.05)
    agent.interrupt()
    worker.join(60)
    assert box["result"].stop_reason == "interrupted"
    assert all_results(agent.messages)["1"]["is_error"]
    assert history_problems(agent.messages) == []
    agent.run("go on")
    assert result_text(all_results(agent.messages)["2"]) == "value of k"
    assert agent.mcp.connection("tb").starts == 1  # a cancelled call is not a server fault
