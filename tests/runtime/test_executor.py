"""Concurrency, order, sibling cancellation and interrupts, judged from recorded call times."""

from __future__ import annotations

import asyncio
import threading
import time

from ipy_agent import Agent, ScriptedModel
from ipy_agent.history.messages import history_problems
from tests.support.transcript import results_of, use


def _overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def test_adjacent_safe_calls_run_together_unsafe_calls_alone_results_in_order(tmp_path, rec):
    tools = [rec.tool("R", read_only=True), rec.tool("W")]
    blocks = [
        use("R", "1", text="r1", sleep=0.2),
        use("R", "2", text="r2", sleep=0.05),
        use("W", "3", text="w3", sleep=0.05),
        use("R", "4", text="r4", sleep=0.05),
        use("R", "5", text="r5", sleep=0.05),
    ]
    agent = Agent(model=ScriptedModel([blocks, "done"]), tools=tools, cwd=tmp_path, approver=lambda r: "allow")
    agent.run("go")
    r1, r2, w3, r4, r5 = (rec.window(t) for t in ("r1", "r2", "w3", "r4", "r5"))
    assert _overlap(r1, r2) and _overlap(r4, r5)
    # the write waits for the whole first batch and finishes before the next one starts
    assert w3[0] >= max(r1[1], r2[1]) and w3[1] <= min(r4[0], r5[0])
    # r2 finished first, yet results follow the tool_use order
    assert r2[1] < r1[1]
    assert [b["tool_use_id"] for b in agent.messages[2]["content"]] == ["1", "2", "3", "4", "5"]
    assert [r.batch for r in agent.trace] == [1, 1, 2, 3, 3]


def test_safety_depends_on_the_input(tmp_path, rec):
    tool = rec.tool("Q", read_only=lambda n: n.text.startswith("select"))
    blocks = [
        use("Q", "1", text="select a", sleep=0.1),
        use("Q", "2", text="select b", sleep=0.1),
        use("Q", "3", text="delete c", sleep=0.05),
    ]
    agent = Agent(model=ScriptedModel([blocks, "done"]), tools=[tool], cwd=tmp_path, approver=lambda r: "allow")
    agent.run("go")
    assert _overlap(rec.window("select a"), rec.window("select b"))
    assert rec.window("delete c")[0] >= rec.window("select b")[1]
    assert [(r.batch, r.concurrency_safe) for r in agent.trace] == [(1, True), (1, True), (2, False)]


def test_concurrency_is_bounded(tmp_path, rec):
    tool = rec.tool("R", read_only=True)
    blocks = [use("R", str(i), text=f"r{i}", sleep=0.05) for i in range(7)]
    agent = Agent(model=ScriptedModel([blocks, "done"]), tools=[tool], cwd=tmp_path, max_concurrency=3)
    agent.run("go")
    windows = [rec.window(f"r{i}") for i in range(7)]
    peak = max(sum(1 for w in windows if w[0] <= t < w[1]) for t, _ in windows)
    assert peak == 3


def test_a_failed_state_changing_shell_call_cancels_the_calls_after_it(tmp_path, rec):
    bash = rec.tool("Bash", cancels_siblings_on_error=lambda inp: not inp.text.startswith("ls"))
    blocks = [
        use("Bash", "1", text="make build", fail=True),
        use("Bash", "2", text="make test"),
        use("Bash", "3", text="ls"),
    ]
    agent = Agent(model=ScriptedModel([blocks, "done"]), tools=[bash], cwd=tmp_path, approver=lambda r: "allow")
    agent.run("go")
    res = results_of(agent.messages[2])
    assert res["1"]["content"] == "Bash failed on purpose"
    for tid in ("2", "3"):
        assert (
            res[tid]["is_error"]
            and "Bash(text='make build', fail=True)" in res[tid]["content"]
            and "was not run" in res[tid]["content"]
        )
    assert [c[1] for c in rec.calls] == ["make build"]
    assert [r.status for r in agent.trace] == ["error", "cancelled", "cancelled"]


def test_a_failed_read_only_call_cancels_nothing(tmp_path, rec):
    bash = rec.tool(
        "Bash", read_only=True, cancels_siblings_on_error=lambda inp: not inp.text.startswith(("grep", "cat"))
    )
    blocks = [use("Bash", "1", text="grep x", fail=True), use("Bash", "2", text="cat y")]
    agent = Agent(model=ScriptedModel([blocks, "done"]), tools=[bash], cwd=tmp_path)
    agent.run("go")
    res = results_of(agent.messages[2])
    assert res["1"]["is_error"] and res["2"]["content"] == "Bash:cat y"


async def test_interrupt_answers_every_pending_call_and_ends_interrupted(tmp_path, rec):
    tools = [rec.tool("R", read_only=True), rec.tool("W")]
    blocks = [use("R", "1", text="a", sleep=5), use("R", "2", text="b", sleep=5), use("W", "3", text="c")]
    agent = Agent(model=ScriptedModel([blocks, "never sent"]), tools=tools, cwd=tmp_path, approver=lambda r: "allow")
    task = asyncio.ensure_future(agent.arun("go"))
    while len(agent.trace) < 2 or any(r.status != "running" for r in agent.trace[:2]):
        await asyncio.sleep(0.01)
    agent.interrupt()
    result = await asyncio.wait_for(task, 10)
    assert result.stop_reason == "interrupted"
    assert history_problems(agent.messages) == []
    last = agent.messages[-1]
    assert [b.get("tool_use_id") for b in last["content"] if b["type"] == "tool_result"] == ["1", "2", "3"]
    assert all(b["is_error"] and "Interrupted" in b["content"] for b in last["content"] if b["type"] == "tool_result")
    assert rec.calls == []  # neither sleeper finished, the write never started
    assert {r.status for r in agent.trace} == {"cancelled"}


async def test_interrupt_from_another_thread_and_a_new_run_continues(tmp_path, rec):
    model = ScriptedModel([[use("R", "1", text="a", sleep=5)], "second run reply"])
    agent = Agent(model=model, tools=[rec.tool("R", read_only=True)], cwd=tmp_path)
    task = asyncio.ensure_future(agent.arun("first"))
    while not agent.trace or agent.trace[0].status != "running":
        await asyncio.sleep(0.01)
    threading.Thread(target=agent.interrupt).start()
    assert (await asyncio.wait_for(task, 10)).stop_reason == "interrupted"
    result = await agent.arun("second")
    assert result.stop_reason == "end_turn" and result.text == "second run reply"
    assert history_problems(agent.messages) == []
    # the second prompt joined the interrupted user turn instead of breaking alternation
    sent = model.requests[1]["messages"]
    assert sent[-1]["role"] == "user" and sent[-1]["content"][-1] == {"type": "text", "text": "second"}


async def test_cancelling_the_task_is_an_interrupt(tmp_path, rec):
    agent = Agent(
        model=ScriptedModel([[use("R", "1", text="a", sleep=5)]]), tools=[rec.tool("R", read_only=True)], cwd=tmp_path
    )
    task = asyncio.ensure_future(agent.arun("go"))
    while not agent.trace or agent.trace[0].status != "running":
        await asyncio.sleep(0.01)
    task.cancel()
    result = await asyncio.wait_for(task, 10)
    assert result.stop_reason == "interrupted" and history_problems(agent.messages) == []


async def test_streaming_model_starts_safe_tools_before_the_message_ends(tmp_path, rec):
    blocks = [
        {**use("R", "1", text="first", sleep=0.05), "_delay": 0.01},
        {"type": "text", "text": "thinking about the next step...", "_delay": 0.3},
        {**use("R", "2", text="second", sleep=0.05), "_delay": 0.01},
    ]
    model = ScriptedModel([blocks, "done"])
    agent = Agent(model=model, tools=[rec.tool("R", read_only=True)], cwd=tmp_path)
    await agent.arun("go")
    first_start = rec.window("first")[0]
    loop_to_perf = _clock_offset()
    message_end = model.block_times[2][1] + loop_to_perf
    assert first_start < message_end - 0.2  # it ran while the model was still "typing"
    # and without streaming execution it waits for the whole message
    rec.calls.clear()
    model2 = ScriptedModel([blocks_copy(blocks), "done"])
    agent2 = Agent(model=model2, tools=[rec.tool("R", read_only=True)], cwd=tmp_path, streaming_tools=False)
    await agent2.arun("go")
    assert rec.window("first")[0] >= model2.block_times[2][1] + loop_to_perf - 0.01


def blocks_copy(blocks):
    return [dict(b) for b in blocks]


def _clock_offset() -> float:
    import time

    loop = asyncio.get_running_loop()
    return time.perf_counter() - loop.time()


def test_ten_sync_calls_in_one_message_all_run_at_once(tmp_path):
    # Each call waits inside the tool until all ten are inside: only a pool with a thread for
    # every call of the batch lets them meet (asyncio's default pool has six threads on 2 cores).
    from pydantic import BaseModel

    from ipy_agent import build_tool

    class Nap(BaseModel):
        n: int

    inside = threading.Barrier(10, timeout=60)
    windows: dict[int, tuple[float, float]] = {}

    def nap(inp: Nap, ctx) -> str:
        start = time.perf_counter()
        inside.wait()
        time.sleep(0.1)
        windows[inp.n] = (start, time.perf_counter())
        return "rested"

    tool = build_tool(
        name="Nap", input_model=Nap, description="d", call=nap, is_read_only=True, is_concurrency_safe=True
    )
    blocks = [use("Nap", str(i), n=i) for i in range(10)]
    agent = Agent(model=ScriptedModel([blocks, "done"]), tools=[tool], cwd=tmp_path)
    agent.run("go")
    assert [b["content"] for b in agent.messages[2]["content"]] == ["rested"] * 10
    assert max(s for s, _ in windows.values()) < min(e for _, e in windows.values())  # one common moment
    assert {r.batch for r in agent.trace} == {1}


def test_each_call_input_is_parsed_once(tmp_path):
    from pydantic import BaseModel, field_validator

    from ipy_agent import ToolError, build_tool

    parsed: list[str] = []

    class Step(BaseModel):
        label: str

        @field_validator("label")
        @classmethod
        def count(cls, v: str) -> str:
            parsed.append(v)
            return v

    def run(inp: Step, ctx) -> str:
        if inp.label == "b":
            raise ToolError("b failed")
        return inp.label

    tool = build_tool(
        name="Step",
        input_model=Step,
        description="d",
        call=run,
        is_read_only=lambda s: s.label != "b",
        is_concurrency_safe=lambda s: s.label == "a",
        cancels_siblings_on_error=True,
    )
    blocks = [use("Step", "1", label="a"), use("Step", "2", label="b"), use("Step", "3", label="c")]
    agent = Agent(model=ScriptedModel([blocks, "done"]), tools=[tool], cwd=tmp_path, approver=lambda r: "allow")
    agent.hooks.add("PreToolUse", lambda e: None)
    agent.run("go")
    res = results_of(agent.messages[2])
    assert res["1"]["content"] == "a" and res["2"]["is_error"] and "Cancelled" in res["3"]["content"]
    assert parsed == ["a", "b", "c"]  # c was parsed (to schedule it) but never ran
