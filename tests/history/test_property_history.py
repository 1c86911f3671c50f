"""Property: whatever goes wrong, run() returns and the history stays a valid conversation.

Random conversations inject every fault the runtime must absorb: tools that raise, invalid
inputs, unknown tools, hooks that raise or deny or stop, approvers that deny or raise, and
interrupts at random moments.
"""

from __future__ import annotations

import asyncio

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ipy_agent import ScriptedModel
from ipy_agent.history.messages import history_problems
from tests.support.faults import faulty_agent

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
