"""What the widget view sends to the front end as a run grows: a new row costs the same at the
250th call as at the 5th (its children list is one block's, not the whole run's).

Every widget message goes through a stand-in comm that counts the JSON it would send, so the
test sees the traffic a front end would receive, with no kernel and no timing.
"""

from __future__ import annotations

import asyncio
from typing import Any

import comm

from ipy_agent import Agent, ScriptedModel
from ipy_agent.runtime.trace import CallEvent
from ipy_agent.ui.call_row import BLOCK_SIZE
from ipy_agent.ui.widgets import RunView
from tests.ui.widget_support import PING, CountingComm


def test_adding_a_row_sends_as_much_late_in_a_long_run_as_early(tmp_path, monkeypatch):
    monkeypatch.setattr(comm, "create_comm", CountingComm)
    calls, per_turn = 5 * BLOCK_SIZE, 10
    turns: list[Any] = [
        [{"type": "tool_use", "id": f"p{t}_{i}", "name": "ping", "input": {"i": i}} for i in range(per_turn)]
        for t in range(calls // per_turn)
    ]
    agent = Agent(
        model=ScriptedModel([*turns, "done"]),
        tools=[PING],
        cwd=tmp_path,
        system_prompt="test",
        max_turns=calls // per_turn + 5,
    )
    view = RunView(agent)
    added: list[int] = []  # bytes sent while the k-th row appeared

    def listener(event: Any) -> None:
        new_row = isinstance(event, CallEvent) and event.record.tool_use_id not in view.rows
        before = CountingComm.sent
        view.listener(event)
        if new_row:
            added.append(CountingComm.sent - before)

    agent.on_event(listener)
    asyncio.run(agent.arun("go"))

    # The person sees every call's row, in order, each saying it is done.
    rows = [w for w in view.body.children if "ipy-agent-row" in getattr(w, "value", "")]
    assert len(added) == len(rows) == len(view.rows) == calls
    assert all(row.status == "done" for row in view.rows.values())
    assert "<b>ping</b>" in [r.html for r in view.rows.values()][-1]
    # A row added late costs what a row added early costs: no whole-run children list per row.
    early, late = added[1:BLOCK_SIZE], added[-BLOCK_SIZE + 1 :]
    assert max(late) <= max(early) + 64, (max(early), max(late))
    # A row that opens a new block also re-sends the list of blocks: one id more per block.
    starts = added[::BLOCK_SIZE]
    assert max(starts) <= 2 * max(early) and starts[-1] - starts[1] <= 64 * len(starts), starts
