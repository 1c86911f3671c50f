"""Old tool results are cleared when a request nears the window: the person's long session goes on,
the model is told what was cleared and how to get it back, and the history stays valid."""

from __future__ import annotations

import pytest

from ipy_agent import Agent, ScriptedModel
from ipy_agent.context.clearing import CLEARED_PREFIX
from ipy_agent.context.tokens import request_tokens
from ipy_agent.history.messages import history_problems
from ipy_agent.runtime.trace import ContextEvent
from tests.support.context import HistoryCheck, fetch, fetch_tool
from tests.support.transcript import first_result, result_text, results_of


def test_500_tool_turns_of_20kb_results_fit_a_40k_window(tmp_path):
    check = HistoryCheck()
    turns = [check.turn(i, [fetch(i)]) for i in range(500)] + [check.turn(500, "All 500 pages fetched.")]
    model = ScriptedModel(turns, keep_requests=None)
    agent = Agent(model, cwd=tmp_path, tools=[fetch_tool(20_000)], context_window=40_000, max_turns=600)
    events: list[ContextEvent] = []
    agent.on_event(lambda e: events.append(e) if isinstance(e, ContextEvent) else None)

    result = agent.run("Fetch pages 0 to 499, one at a time.")

    # The run reached its end, and the scripted transcript was used exactly as written.
    assert (result.stop_reason, result.text, result.turns) == ("end_turn", "All 500 pages fetched.", 501)
    assert len(model.requests) == 501 and model.remaining == 0
    # Every request was under the window, by the manager's estimate and by a full rescan.
    sizes = agent.context_manager.sizes
    assert len(sizes) == 501
    assert max(s.tokens for s in sizes) < 40_000
    assert max(request_tokens(r["system"], r["tools"], r["messages"]) for r in model.requests) < 40_000
    # The history the model saw was valid every time, and is at the end.
    assert check.seen == 501 and check.problems == []
    assert history_problems(agent.messages) == []
    # Clearing happened, and compaction when clearing was not enough.
    actions = {e.action for e in events}
    assert actions == {"cleared", "compacted"}
    assert all(e.after < e.before for e in events)
    # The model is told what was cleared and how to get it back.
    notes = [
        result_text(b)
        for m in model.requests[-1]["messages"]
        for b in results_of(m).values()
        if result_text(b).startswith(CLEARED_PREFIX)
    ]
    assert notes
    assert all('output of Fetch {"n": ' in n and "call Fetch again with the same input" in n for n in notes)
    # The newest results reached the model in full.
    last = [*results_of(model.requests[-1]["messages"][-1]).values()]
    assert len(last) == 1 and result_text(last[0]).startswith("page 499: ") and len(result_text(last[0])) == 20_000


def test_clearing_takes_the_oldest_results_and_keeps_the_recent_ones(tmp_path):
    model = ScriptedModel([[fetch(i)] for i in range(12)] + ["done"])
    agent = Agent(model, cwd=tmp_path, tools=[fetch_tool(8_000)], context_window=30_000, max_turns=20)
    agent.run("fetch them")

    final = model.requests[-1]["messages"]
    assert history_problems(final) == []
    by_id = {b["tool_use_id"]: result_text(b) for m in final for b in results_of(m).values()}
    assert list(by_id) == [f"toolu_fetch_{i:05d}" for i in range(12)]  # every call still answered, in order
    cleared = [tid for tid, t in by_id.items() if t.startswith(CLEARED_PREFIX)]
    full = [tid for tid, t in by_id.items() if not t.startswith(CLEARED_PREFIX)]
    assert cleared and full
    # Oldest first: every cleared result is older than every full one; at least the three
    # most recent settled results and the newest one stay whole.
    assert max(cleared) < min(full)
    assert len(full) >= 4
    assert all(len(by_id[t]) == 8_000 for t in full)
    # The trace keeps what the model received at the time (for %agent_inspect).
    assert all(len(result_text(r.result)) == 8_000 for r in agent.trace)
    # Messages are replaced, never edited in place: a request sent earlier still shows what it showed.
    assert len(result_text(first_result(model.requests[1]["messages"][-1]))) == 8_000


def test_a_spilled_result_is_cleared_with_the_path_of_its_spill_file(tmp_path):
    # Results over 6,000 characters are spilled to a file with a 2 KB preview; the note must
    # point at the file that still holds the whole output.
    model = ScriptedModel([[fetch(i)] for i in range(25)] + ["done"])
    agent = Agent(
        model,
        cwd=tmp_path,
        tools=[fetch_tool(9_000, max_result_chars=6_000)],
        context_window=12_000,
        spill_dir=tmp_path / "spill",
        max_turns=30,
    )
    agent.run("fetch them")

    first = first_result(model.requests[-1]["messages"][2])
    note = result_text(first)
    spill = tmp_path / "spill" / "toolu_fetch_00000.txt"
    assert note.startswith(CLEARED_PREFIX) and str(spill) in note
    assert spill.read_text().startswith("page 0: ") and len(spill.read_text()) == 9_000


def test_the_threshold_is_configurable(tmp_path):
    def run(threshold: float) -> int:
        model = ScriptedModel([[fetch(i)] for i in range(10)] + ["done"])
        agent = Agent(
            model,
            cwd=tmp_path,
            tools=[fetch_tool(4_000)],
            context_window=40_000,
            context_threshold=threshold,
            max_turns=20,
        )
        agent.run("go")
        assert max(s.tokens for s in agent.context_manager.sizes) <= agent.context_manager.trigger
        return agent.context_manager.cleared

    assert run(0.95) == 0  # 10 results of 1k tokens fit under 38k
    assert run(0.2) > 0  # but not under 8k


@pytest.mark.parametrize("bad", [0.0, 1.5])
def test_a_bad_threshold_is_refused_with_its_value(tmp_path, bad):
    with pytest.raises(ValueError, match=repr(bad)):
        Agent(ScriptedModel([]), cwd=tmp_path, context_threshold=bad)


def test_the_incremental_estimate_equals_a_full_scan_and_never_rescans(tmp_path):
    model = ScriptedModel([[fetch(i)] for i in range(30)] + ["done"])
    agent = Agent(model, cwd=tmp_path, tools=[fetch_tool(6_000)], context_window=20_000, max_turns=40)
    agent.run("go")
    cm = agent.context_manager
    for request, size in zip(model.requests, cm.sizes):
        assert size.raw == request_tokens(request["system"], request["tools"], request["messages"])
    # Only a replaced history is counted again (compaction resets the ledger itself): turns alone never rescan.
    assert cm.ledger.rescans == cm.compactions
