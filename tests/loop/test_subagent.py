"""Task subagents: a fresh context with fewer tools whose conclusion alone comes back; parallel
read-only Tasks; tools a type lacks; approvals in the parent's cell; usage and cost; interrupts;
hooks, depth and the nested trace."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from pathlib import Path

import pytest

from ipy_agent import Agent, ScriptedModel
from ipy_agent.history.messages import history_problems
from ipy_agent.loop.subagent import EXPLORE, SubagentType, TaskTool, make_child, stricter
from ipy_agent.runtime.registry import ToolRegistry
from ipy_agent.runtime.trace import nested_calls
from ipy_agent.tools import builtin_tools
from ipy_agent.ui.inspection import find_call, trace_text
from tests.support.run_view import make, next_prompt
from tests.support.tools import write_tree
from tests.support.transcript import all_results, result_text, use

FILES = {"src/config.py": "DEBUG = True\nPORT = 8080\n", "src/app.py": "from config import PORT\nprint(PORT)\n"}


def _explore(name: str, turns: list) -> SubagentType:
    """The built-in explore type with a script of its own (two of them may run at once)."""
    return SubagentType(
        name=name,
        description=EXPLORE.description,
        system_prompt=EXPLORE.system_prompt,
        tools=EXPLORE.tools,
        permission_mode=EXPLORE.permission_mode,
        read_only=True,
        model=ScriptedModel(turns),
    )


FIND_PORT = [
    [use("Grep", "c1", pattern="PORT", output_mode="files_with_matches")],
    [use("Read", "c2", file_path="src/config.py")],
    "PORT is 8080, set in src/config.py line 2.",
]


def _agent(tmp_path: Path, turns: list, types: list[SubagentType], **kw) -> tuple[Agent, ScriptedModel]:
    write_tree(tmp_path, FILES)
    model = ScriptedModel(turns)
    tools = [*builtin_tools(), TaskTool(types)]
    return Agent(model=model, tools=tools, cwd=tmp_path, **kw), model


def test_the_subagent_reads_and_greps_and_only_its_report_comes_back(tmp_path):
    task = use("Task", "t1", description="find the port", prompt="Where is the port set?", subagent_type="finder")
    agent, model = _agent(tmp_path, [[task], "The port is 8080."], [_explore("finder", FIND_PORT)])
    before = len(str(agent.messages))
    result = agent.run("what port does the app use?")

    assert result.text == "The port is 8080."
    assert result_text(all_results(agent.messages)["t1"]) == "PORT is 8080, set in src/config.py line 2."
    # The parent's context holds the Task and its report: not the subagent's Grep and Read.
    told = str(model.requests[-1]["messages"])
    assert "DEBUG = True" not in told and "c1" not in told and "c2" not in told
    assert len(str(agent.messages)) - before < 1000
    assert [r.tool_name for r in agent.trace] == ["Task"]
    inner = nested_calls(agent.session)["t1"]
    assert [(r.tool_name, r.status) for r in inner] == [("Grep", "done"), ("Read", "done")]
    # What the subagent read is not read by the parent: an edit still needs its own Read.
    assert agent.read_state.get(str(tmp_path / "src/config.py")) is None
    assert agent.trace[0].summary_result.startswith("3 turns, 2 calls,")  # Grep, Read, the report
    assert history_problems(agent.messages) == []


def test_two_read_only_tasks_in_one_message_run_in_one_batch(tmp_path):
    tasks = [
        use("Task", "t1", description="find the port", prompt="Where is PORT?", subagent_type="a"),
        use("Task", "t2", description="find debug", prompt="Where is DEBUG?", subagent_type="b"),
    ]
    find_debug = [[use("Grep", "d1", pattern="DEBUG")], "DEBUG is True in src/config.py line 1."]
    agent, _ = _agent(tmp_path, [tasks, "Both found."], [_explore("a", FIND_PORT), _explore("b", find_debug)])
    agent.run("find both")
    first, second = agent.trace
    assert first.concurrency_safe and second.concurrency_safe
    assert first.batch == second.batch  # scheduled together
    results = all_results(agent.messages)
    assert "8080" in result_text(results["t1"]) and "DEBUG is True" in result_text(results["t2"])


def test_a_subagent_cannot_use_a_tool_its_type_lacks(tmp_path):
    sneaky = [
        [use("Edit", "e1", file_path="src/config.py", old_string="8080", new_string="9090")],
        [use("Task", "e2", description="again", prompt="edit it", subagent_type="finder")],
        "Could not edit.",
    ]
    task = use("Task", "t1", description="change port", prompt="Set PORT to 9090", subagent_type="finder")
    agent, _ = _agent(tmp_path, [[task], "ok"], [_explore("finder", sneaky)], permission_mode="bypassPermissions")
    agent.run("go")
    inner = nested_calls(agent.session)["t1"]
    assert [r.tool_name for r in inner] == ["Edit", "Task"]
    assert all(r.is_error for r in inner)
    assert "No such tool available: 'Edit'" in result_text(inner[0].result)
    assert "No such tool available: 'Task'" in result_text(inner[1].result)  # no Task of its own
    assert (tmp_path / "src/config.py").read_text() == FILES["src/config.py"]


def test_mode_is_never_looser_than_the_parents():
    assert stricter("default", "bypassPermissions") == "default"
    assert stricter("bypassPermissions", "plan") == "plan"
    assert stricter("acceptEdits", None) == "acceptEdits"


async def test_a_subagents_approval_opens_in_the_parents_cell(tmp_path):
    worker = SubagentType(
        name="worker",
        description="does things",
        system_prompt="Do it.",
        tools=("Bash",),
        model=ScriptedModel([[use("Bash", "b1", command="touch made.txt", description="make a file")], "Made it."]),
    )
    task = use("Task", "t1", description="make the file", prompt="make made.txt", subagent_type="worker")
    agent, view, _ = make(tmp_path, [[task], "Done."])
    agent.registry = ToolRegistry([*builtin_tools(), TaskTool([worker])])
    run = asyncio.create_task(agent.arun("go"))
    prompt = await next_prompt(view, run)
    assert prompt.request.tool_name == "Bash"
    assert view.rows["b1"].name == "worker: make the file ▸ Bash"  # labelled with the Task's description
    assert not (tmp_path / "made.txt").exists()
    prompt.allow()
    result = await asyncio.wait_for(run, 30)
    assert result.text == "Done." and (tmp_path / "made.txt").exists()
    assert view.rows["b1"].status == "done"
    assert "Made it." in result_text(all_results(agent.messages)["t1"])


def test_usage_and_cost_of_the_subagent_join_the_parents(tmp_path):
    sub_model = ScriptedModel(["Nothing to find."])
    kind = SubagentType(name="solo", description="d", system_prompt="s", tools=("Read",), model=sub_model)
    task = use("Task", "t1", description="look", prompt="look around", subagent_type="solo")
    agent, _ = _agent(tmp_path, [[task], "ok"], [kind])
    result = agent.run("go")
    own = sum(t.usage.input_tokens + t.usage.output_tokens for t in agent.turns if t.usage)
    total = result.usage.input_tokens + result.usage.output_tokens
    assert total > own > 0  # the run's usage includes the subagent's
    summary = agent.trace[0].summary_result
    tokens = int(summary.split(", ")[2].split()[0].replace(",", ""))
    assert tokens == total - own  # and the Task's row says what the subagent spent


def test_an_interrupt_stops_the_subagent_and_the_histories_stay_valid(tmp_path):
    pid_file = tmp_path / "pid"
    slow = SubagentType(
        name="slow",
        description="d",
        system_prompt="s",
        tools=("Bash",),
        model=ScriptedModel([[use("Bash", "b1", command=f"echo $$ > {pid_file}; sleep 60")], "never"]),
    )
    task = use("Task", "t1", description="wait", prompt="wait", subagent_type="slow")
    # Unsandboxed, so the pid is the host's (tmp_path is outside a sandbox's private /tmp too).
    agent, _ = _agent(tmp_path, [[task]], [slow], allow=["Bash"], sandbox="off")

    def interrupt_when_running() -> None:
        deadline = time.monotonic() + 30
        while not (pid_file.exists() and pid_file.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.02)
        agent.interrupt()

    threading.Thread(target=interrupt_when_running, daemon=True).start()
    result = agent.run("go")
    assert result.stop_reason == "interrupted"
    assert history_problems(agent.messages) == []
    inner = nested_calls(agent.session)["t1"]
    assert [r.status for r in inner] == ["cancelled"]
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    agent.model.turns.append("fine")  # the agent goes on after the interrupt  # type: ignore[attr-defined]
    assert agent.run("again").text == "fine"


def test_hooks_hear_the_subagent_start_and_stop(tmp_path):
    heard = []
    task = use("Task", "t1", description="find the port", prompt="Where is the port set?", subagent_type="finder")
    agent, _ = _agent(tmp_path, [[task], "ok"], [_explore("finder", FIND_PORT)])
    agent.hooks.add("SubagentStart", lambda e: heard.append(("start", e.agent_type, e.prompt)))
    agent.hooks.add("SubagentStop", lambda e: heard.append(("stop", e.agent_type, e.last_message)))
    agent.run("go")
    assert heard == [
        ("start", "finder", "Where is the port set?"),
        ("stop", "finder", "PORT is 8080, set in src/config.py line 2."),
    ]


def test_a_type_that_may_delegate_gets_task_down_to_the_depth_limit(tmp_path):
    deep = SubagentType(name="deep", description="d", system_prompt="s", tools=("Read",), may_delegate=True)
    top = TaskTool([deep])
    agent, _ = _agent(tmp_path, ["x"], [deep])
    agent.registry = ToolRegistry([*builtin_tools(), top])
    child = make_child(agent, deep, top, "d")
    assert [t.name for t in child.tools] == ["Read", "Task"]
    grandchild = make_child(child, deep, child.tool("Task"), "d")  # type: ignore[arg-type]
    assert [t.name for t in grandchild.tools] == ["Read"]  # the limit: no Task below


def test_trace_and_inspect_show_the_nested_calls(tmp_path):
    task = use("Task", "t1", description="find the port", prompt="Where is the port set?", subagent_type="finder")
    agent, _ = _agent(tmp_path, [[task], "ok"], [_explore("finder", FIND_PORT)])
    agent.run("go")
    text = trace_text(agent)
    assert "Task finder: find the port" in text
    assert "↳ Grep" in text and "↳ Read" in text
    assert find_call(agent, "c2").tool_name == "Read"


def test_what_a_subagent_left_in_the_background_stops_with_its_task(tmp_path):
    pid_file = tmp_path / "bg.pid"
    starter = SubagentType(
        name="starter",
        description="d",
        system_prompt="s",
        tools=("Bash",),
        model=ScriptedModel(
            [
                [use("Bash", "b1", command=f"echo $$ > {pid_file}; sleep 300", run_in_background=True)],
                [use("Bash", "b2", command=f"while [ ! -s {pid_file} ]; do sleep 0.05; done")],  # it runs
                "Started.",
            ]
        ),
    )
    task = use("Task", "t1", description="start a server", prompt="start it", subagent_type="starter")
    agent, _ = _agent(tmp_path, [[task], "ok"], [starter], allow=["Bash"], sandbox="off")
    agent.run("go")
    assert "Started." in result_text(all_results(agent.messages)["t1"])
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
