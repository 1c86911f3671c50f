"""Failure paths found in review: each once let a run break its history, escape, or fail open."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator

from pydantic import BaseModel

from ipy_agent import Agent, HookOutcome, ModelError, ScriptedModel, build_tool
from ipy_agent.history.messages import history_problems
from ipy_agent.models.base import BlockComplete, ModelRequest
from ipy_agent.runtime.trace import RunEndEvent
from tests.support.transcript import results_of, use


class FailsAfterATool:
    """Streams a tool_use that starts running, then the API fails."""

    name = "failing"

    async def stream(self, request: ModelRequest) -> AsyncIterator:
        yield BlockComplete(block=use("R", "t1", text="slow", sleep=5), index=0)
        await asyncio.sleep(0)
        raise ModelError("overloaded", kind="overloaded")


async def test_an_interrupt_while_a_model_error_waits_for_started_tools_keeps_one_tool_use(tmp_path, rec):
    agent = Agent(model=FailsAfterATool(), tools=[rec.tool("R", read_only=True)], cwd=tmp_path)
    task = asyncio.ensure_future(agent.arun("go"))
    while not agent.trace or agent.trace[0].status != "running":
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)  # the model has failed; the run now waits for the started tool
    agent.interrupt()
    result = await asyncio.wait_for(task, 10)
    assert result.stop_reason == "interrupted"
    assert history_problems(agent.messages) == []
    assert [b["id"] for b in agent.messages[1]["content"] if b["type"] == "tool_use"] == ["t1"]


def test_a_hook_stop_keeps_the_rest_of_the_message_from_running(tmp_path, rec):
    asked: list[str] = []
    blocks = [use("R", "1", text="first"), use("Act", "2", text="second"), use("R", "3", text="third")]
    agent = Agent(
        model=ScriptedModel([blocks, "never"]),
        tools=[rec.tool("R", read_only=True), rec.tool("Act")],
        cwd=tmp_path,
        approver=lambda r: asked.append(r.tool_name) or "allow",
    )
    agent.hooks.add("PostToolUse", lambda e: HookOutcome(stop=True, reason="quota used up"), matcher="R")
    result = agent.run("go")
    assert result.stop_reason == "stopped_by_hook"
    assert [c[1] for c in rec.calls] == ["first"] and asked == []
    res = results_of(agent.messages[2])
    assert "a hook stopped the run (quota used up)" in res["2"]["content"] and res["3"]["is_error"]
    assert history_problems(agent.messages) == []


def test_a_spill_that_cannot_be_written_cuts_the_result_and_the_run_goes_on(tmp_path, rec):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the spill directory should be")

    class N(BaseModel):
        n: int

    big = build_tool(
        name="Big",
        input_model=N,
        description="d",
        is_read_only=True,
        max_result_chars=1000,
        call=lambda a, c: "line\n" * a.n,
    )
    agent = Agent(
        model=ScriptedModel([[use("Big", "b", n=5000)], "done"]), tools=[big], cwd=tmp_path, spill_dir=blocker / "spill"
    )
    result = agent.run("go")
    assert result.stop_reason == "end_turn" and history_problems(agent.messages) == []
    content = results_of(agent.messages[2])["b"]["content"]
    assert "could not be saved" in content and len(content) < 10_000


def test_symlinks_out_of_the_project_are_outside(tmp_path):
    from ipy_agent.tools.files.read import ReadTool
    from ipy_agent.tools.files.write import WriteTool

    project, outside = tmp_path / "project", tmp_path / "outside"
    project.mkdir()
    outside.mkdir()
    (outside / "id_rsa").write_text("PRIVATE")
    os.symlink(outside / "id_rsa", project / "notes.txt")
    os.symlink(outside, project / "ext")
    asked: list[str] = []
    model = ScriptedModel(
        [[use("Read", "r", file_path="notes.txt")], [use("Write", "w", file_path="ext/new.txt", content="x")], "done"]
    )
    agent = Agent(
        model=model,
        tools=[ReadTool(), WriteTool()],
        cwd=project,
        permission_mode="acceptEdits",
        approver=lambda req: asked.append(req.tool_name) or "deny",
    )
    agent.run("go")
    assert asked == ["Read", "Write"]
    assert "PRIVATE" not in str(model.requests[1]["messages"]) and not (outside / "new.txt").exists()


def test_a_stop_hook_that_raises_ends_the_run(tmp_path):
    def broken(e):
        raise KeyError("missing config")

    model = ScriptedModel(["first", "second", "third"])
    agent = Agent(model=model, tools=[], cwd=tmp_path, max_turns=5)
    agent.hooks.add("Stop", broken)
    result = agent.run("go")
    assert result.stop_reason == "end_turn" and len(model.requests) == 1
    assert "missing config" not in str(agent.messages)


def test_a_tool_whose_description_fails_is_hidden_not_fatal(tmp_path, rec):
    def bad_description(ctx):
        raise AttributeError("no such attribute")

    class N(BaseModel):
        n: int

    broken = build_tool(name="Broken", input_model=N, description=bad_description, call=lambda a, c: "x")
    model = ScriptedModel(["ok"])
    agent = Agent(model=model, tools=[broken, rec.tool("R", read_only=True)], cwd=tmp_path)
    assert agent.run("go").stop_reason == "end_turn"
    assert [t["name"] for t in model.requests[0]["tools"]] == ["R"]
    assert "description failed" in agent.turns[0].hidden["Broken"]


async def test_a_second_interrupt_during_cleanup_still_ends_the_run_cleanly(tmp_path):
    class N(BaseModel):
        n: int

    async def stubborn(a, ctx):
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            await asyncio.sleep(0.3)  # cleanup that takes a while (killing a process group)
            raise

    tool = build_tool(name="Slow", input_model=N, description="d", call=stubborn, is_read_only=True)
    ends: list[object] = []
    agent = Agent(model=ScriptedModel([[use("Slow", "s", n=1)]]), tools=[tool], cwd=tmp_path)
    agent.on_event(lambda e: ends.append(e) if isinstance(e, RunEndEvent) else None)
    task = asyncio.ensure_future(agent.arun("go"))
    while not agent.trace or agent.trace[0].status != "running":
        await asyncio.sleep(0.01)
    agent.interrupt()
    await asyncio.sleep(0.1)
    agent.interrupt()
    result = await asyncio.wait_for(task, 10)
    assert result.stop_reason == "interrupted" and history_problems(agent.messages) == []
    assert len(ends) == 1 and not agent.running


def test_after_always_a_waiting_prompt_that_the_new_rule_covers_is_not_asked(tmp_path):
    from ipy_agent import PermissionAnswer
    from ipy_agent.tools.files.read import ReadTool

    outside = tmp_path / "outside"
    outside.mkdir()
    for name in ("a.txt", "b.txt"):
        (outside / name).write_text(name)
    project = tmp_path / "p"
    project.mkdir()
    asked: list[str] = []

    def approver(req):
        asked.append(req.input["file_path"])
        return PermissionAnswer(behavior="always", rule=f"Read(/{outside}/**)")

    blocks = [use("Read", "1", file_path=str(outside / "a.txt")), use("Read", "2", file_path=str(outside / "b.txt"))]
    agent = Agent(model=ScriptedModel([blocks, "done"]), tools=[ReadTool()], cwd=project, approver=approver)
    agent.run("go")
    assert asked == [str(outside / "a.txt")]
    assert agent.trace[1].decision.source == "rule"
