"""Property: whatever goes wrong, run() returns and the history stays a valid conversation.

Random conversations inject every fault the runtime must absorb: tools that raise, invalid
inputs, unknown tools, hooks that raise or deny or stop, approvers that deny or raise, and
interrupts at random moments.
"""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from ipy_agent import Agent, HookOutcome, PermissionAnswer, ScriptedModel, ToolError, build_tool
from ipy_agent.history.messages import history_problems


class Inp(BaseModel):
    n: int
    mode: str = "ok"


async def _call(inp: Inp, ctx):
    if inp.mode == "sleep":
        await asyncio.sleep(0.02)
    if inp.mode == "toolerror":
        raise ToolError("expected failure")
    if inp.mode == "crash":
        raise RuntimeError("unexpected failure")
    if inp.mode == "empty":
        return ""
    return f"n={inp.n}"


def _tools():
    return [
        build_tool(name="Safe", input_model=Inp, description="d", call=_call, is_read_only=True),
        build_tool(name="Unsafe", input_model=Inp, description="d", call=_call, cancels_siblings_on_error=True),
        build_tool(
            name="Flaky", input_model=Inp, description="d", call=_call, is_concurrency_safe=lambda i: 1 / (i.n % 2)
        ),  # raises for even n: fail closed
    ]


tool_use = st.fixed_dictionaries(
    {
        "type": st.just("tool_use"),
        "name": st.sampled_from(["Safe", "Unsafe", "Flaky", "Missing"]),
        "input": st.one_of(
            st.fixed_dictionaries(
                {"n": st.integers(0, 9), "mode": st.sampled_from(["ok", "sleep", "toolerror", "crash", "empty"])}
            ),
            st.fixed_dictionaries({"n": st.text(max_size=3)}),  # wrong type
            st.fixed_dictionaries({"x": st.integers()}),  # missing and unexpected
        ),
    }
)
turn = st.one_of(st.text(min_size=0, max_size=20), st.lists(tool_use, min_size=1, max_size=4))


def faulty_agent(model: Any, cwd: Any, *, approval: str, hook_fault: str | None) -> Agent:
    """An agent over `_tools()` whose approver and hooks fail in the way named: `approval` is
    allow/always/deny/reason/raise, `hook_fault` None/raise/deny/stop/ask/post_raise."""

    def approver(req):
        match approval:
            case "raise":
                raise RuntimeError("approver broke")
            case "reason":
                return PermissionAnswer(behavior="deny", message="not now")
        return approval

    agent = Agent(model=model, tools=_tools(), cwd=cwd, approver=approver, max_turns=4)

    def pre(e):
        match hook_fault:
            case "raise":
                raise ValueError("hook bug")
            case "deny":
                return HookOutcome(decision="deny", reason="policy")
            case "stop":
                return HookOutcome(stop=True, reason="enough")
            case "ask":
                return HookOutcome(decision="ask")
        return None

    def post(e):
        if hook_fault == "post_raise":
            raise ValueError("post hook bug")

    agent.hooks.add("PreToolUse", pre, matcher="Safe|Flaky")
    agent.hooks.add("PostToolUse", post)
    return agent


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    turns=st.lists(turn, min_size=1, max_size=5),
    hook_fault=st.sampled_from([None, "raise", "deny", "stop", "ask", "post_raise"]),
    approval=st.sampled_from(["allow", "always", "deny", "reason", "raise"]),
    interrupt_after=st.one_of(st.none(), st.floats(0, 0.05)),
    prompts=st.integers(1, 2),
)
def test_history_stays_valid_whatever_fails(tmp_path_factory, turns, hook_fault, approval, interrupt_after, prompts):
    tmp = tmp_path_factory.mktemp("prop")
    # give every tool_use a unique id, as the API does
    counter = iter(range(10_000))
    turns = [t if isinstance(t, str) else [{**b, "id": f"toolu_{next(counter)}"} for b in t] for t in turns]

    agent = faulty_agent(ScriptedModel(turns), tmp, approval=approval, hook_fault=hook_fault)

    async def scenario():
        for i in range(prompts):
            task = asyncio.ensure_future(agent.arun(f"prompt {i}"))
            if interrupt_after is not None:
                await asyncio.sleep(interrupt_after)
                agent.interrupt()
            result = await asyncio.wait_for(task, 20)
            assert result.stop_reason in {"end_turn", "max_turns", "interrupted", "stopped_by_hook", "error"}
            assert history_problems(agent.messages) == []

    asyncio.run(scenario())
    # every call left a finished record with the result the model saw
    for rec in agent.trace:
        assert rec.status in {"done", "error", "denied", "cancelled"} and rec.result is not None
        assert rec.result["tool_use_id"] == rec.tool_use_id
