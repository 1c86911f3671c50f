"""1,000 random faulty conversations, fixed seeds: zero invalid histories.

Builds on tests/history/test_property_history.py (hypothesis, few examples) with a deterministic
sweep that also sends what an untrusted model may send: duplicate, numeric, empty, list-valued
and path-like tool_use ids, unknown tools, invalid inputs, tools that raise, hooks that raise,
deny or stop, approvers that deny or raise, and interrupts at random moments. After every run
the history must be one the Messages API accepts, and every call must have a finished record.
"""

from __future__ import annotations

import asyncio
import os
import random

import pytest

from ipy_agent import ScriptedModel
from ipy_agent.history.messages import history_problems
from tests.support.faults import faulty_agent

SEEDS = int(os.environ.get("FAULTY_SEEDS", "1000"))  # fewer only for a quick local look
_IDS = [
    "dup",
    "dup",
    7,
    "",
    None,
    ["x"],
    {"a": 1},
    "../../etc/passwd",
    "a/b",
    "toolu_ok",
    "x" * 300,
    "ünï",
    "a b",
    True,
]


def _conversation(rng: random.Random) -> list:
    turns: list = []
    for _ in range(rng.randint(1, 4)):
        if rng.random() < 0.25:
            turns.append(rng.choice(["", "thinking out loud", "done"]))
            continue
        blocks = []
        for _ in range(rng.randint(1, 4)):
            name = rng.choice(["Safe", "Unsafe", "Flaky", "Missing"])
            inp = rng.choice(
                [
                    {"n": rng.randint(0, 9), "mode": rng.choice(["ok", "sleep", "toolerror", "crash", "empty"])},
                    {"n": "x"},
                    {"x": 1},
                    [],
                    "text",
                    None,
                ]
            )
            tid = rng.choice(_IDS) if rng.random() < 0.5 else f"toolu_{rng.randrange(10**6)}"
            blocks.append({"type": "tool_use", "id": tid, "name": name, "input": inp})
        turns.append(blocks)
    return turns


def _run_one(seed: int, tmp) -> list[str]:
    rng = random.Random(seed)
    approval = rng.choice(["allow", "always", "deny", "reason", "raise"])
    hook_fault = rng.choice([None, "raise", "deny", "stop", "ask", "post_raise"])
    interrupt_after = rng.choice([None, None, rng.uniform(0, 0.03)])

    agent = faulty_agent(ScriptedModel(_conversation(rng)), tmp, approval=approval, hook_fault=hook_fault)
    problems: list[str] = []

    async def scenario():
        for i in range(rng.randint(1, 2)):
            task = asyncio.ensure_future(agent.arun(f"prompt {i}"))
            if interrupt_after is not None:
                await asyncio.sleep(interrupt_after)
                agent.interrupt()
            await asyncio.wait_for(task, 20)
            problems.extend(history_problems(agent.messages))

    asyncio.run(scenario())
    for rec in agent.trace:
        if rec.status not in {"done", "error", "denied", "cancelled"} or rec.result is None:
            problems.append(f"call {rec.tool_use_id!r} ended as {rec.status}")
    return problems


@pytest.mark.slow
def test_a_thousand_faulty_conversations_stay_valid(tmp_path):
    invalid = {}
    for seed in range(SEEDS):
        problems = _run_one(seed, tmp_path)
        if problems:
            invalid[seed] = problems
    print(f"\n[faulty conversations] seeds tried: {SEEDS:,}; invalid histories: {len(invalid)}")
    assert not invalid, {s: p[:3] for s, p in list(invalid.items())[:5]}
