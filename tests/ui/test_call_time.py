"""A row's time is the tool's own; the time the call waited for the person is said apart, so
minutes at a prompt never read as a slow tool."""

from __future__ import annotations

from pathlib import Path

from ipy_agent import Agent, ScriptedModel
from ipy_agent.permissions.decide import Decision
from ipy_agent.runtime.trace import CallRecord, Stage
from ipy_agent.ui.status import call_time
from tests.support.transcript import use


def record(*, source: str | None, outcome: str = "allow") -> CallRecord:
    rec = CallRecord(index=1, tool_use_id="t1", tool_name="Edit", input={}, turn=1, start=10.0, end=16.0)
    rec.stages = [
        Stage(name="validate", outcome="ok", start=10.0, end=10.2),
        Stage(name="permission", outcome=outcome, start=10.2, end=14.9),
        Stage(name="call", outcome="ok", start=14.9, end=16.0),
    ]
    if source is not None:
        rec.decision = Decision(behavior="allow", source=source, reason="")  # type: ignore[arg-type]
    return rec


def test_the_wait_for_the_person_is_said_apart_from_the_tools_time():
    assert call_time(record(source="person")) == "1.3 s · you answered after 4.7 s"
    assert call_time(record(source=None, outcome="cancelled")) == "1.3 s · waited for you 4.7 s"
    assert call_time(record(source="rule")) == "6.0 s"  # nobody was asked: the whole time is the call's


def test_a_run_answered_by_an_approver_shows_the_wait_in_its_row(tmp_path: Path):
    (tmp_path / "a.txt").write_text("one\n")
    model = ScriptedModel(
        [
            [use("Read", "r1", file_path="a.txt")],
            [use("Edit", "e1", file_path="a.txt", old_string="one", new_string="two")],
            "Done.",
        ]
    )
    agent = Agent(model=model, cwd=tmp_path, approver=lambda request: "allow")
    agent.run("edit")
    edit = next(r for r in agent.trace if r.tool_name == "Edit")
    assert edit.waited > 0 and "you answered after" in call_time(edit)
    read = next(r for r in agent.trace if r.tool_name == "Read")
    assert read.waited == 0 and "answered" not in call_time(read)
