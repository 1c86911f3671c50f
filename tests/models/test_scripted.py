"""ScriptedModel keeps what each request showed, bounded, without copying the conversation."""

from __future__ import annotations

from ipy_agent import Agent, ScriptedModel
from tests.support.transcript import use


def test_the_request_log_is_bounded_and_shows_each_request_as_it_was_sent(tmp_path, rec):
    turns = [[use("R", f"t{i}", text=str(i))] for i in range(6)]
    model = ScriptedModel([*turns, "done"], keep_requests=3)
    agent = Agent(model=model, tools=[rec.tool("R", read_only=True)], cwd=tmp_path)
    agent.run("go")
    assert len(agent.messages) == 14  # the prompt, six tool turns (use + result), the answer
    # The last three of seven requests, each with the history as it stood when it was sent.
    assert [len(r["messages"]) for r in model.requests] == [9, 11, 13]
    assert model.requests[0]["messages"] == agent.messages[:9]
    assert model.requests[-1]["messages"][-1]["content"][0]["tool_use_id"] == "t5"


def test_usage_counts_the_whole_history_each_turn(tmp_path, rec):
    model = ScriptedModel([[use("R", "a", text="x" * 4000)], [use("R", "b", text="y")], "done"])
    agent = Agent(model=model, tools=[rec.tool("R", read_only=True)], cwd=tmp_path, system_prompt="s")
    usage = []
    agent.on_event(lambda e: usage.append(e.usage.input_tokens) if getattr(e, "phase", "") == "end" else None)
    agent.run("go")
    # The 4,000 characters sent in the first call stay in every later request's estimate.
    assert usage[0] < 100 and usage[1] > 2000 and usage[2] > usage[1]
