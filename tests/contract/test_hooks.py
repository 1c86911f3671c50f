"""Hooks: matchers, outcomes, combination, fail-closed errors, prompt and stop events."""

from __future__ import annotations

import pytest

from ipy_agent import Agent, HookOutcome, ScriptedModel
from tests.support.transcript import results_of, use


def _agent(tmp_path, rec, turns, **kw):
    tools = [rec.tool("Edit"), rec.tool("NotebookEdit"), rec.tool("Read", read_only=True)]
    model = ScriptedModel(turns)
    return Agent(model=model, tools=tools, cwd=tmp_path, approver=kw.pop("approver", lambda r: "allow"), **kw), model


@pytest.mark.parametrize(
    "matcher,expected",
    [
        ("Edit", ["Edit"]),
        ("Edit|Read", ["Edit", "Read"]),
        ("Edit.*", ["Edit", "NotebookEdit"]),  # a regex, unanchored as in Claude Code
        (".*Edit", ["Edit", "NotebookEdit"]),
        ("*", ["Edit", "NotebookEdit", "Read"]),
        (None, ["Edit", "NotebookEdit", "Read"]),
    ],
)
def test_matchers(tmp_path, rec, matcher, expected):
    seen: list[str] = []
    agent, _ = _agent(tmp_path, rec, [[use("Edit", "1"), use("NotebookEdit", "2"), use("Read", "3")], "done"])
    agent.hooks.add("PreToolUse", lambda e: seen.append(e.tool_name), matcher=matcher)
    agent.run("go")
    assert seen == expected


def test_regex_matchers_are_unanchored_like_claude_codes(tmp_path, rec):
    seen: list[str] = []
    agent, _ = _agent(tmp_path, rec, [[use("Edit", "1"), use("NotebookEdit", "2")], "done"])
    agent.hooks.add("PreToolUse", lambda e: seen.append(e.tool_name), matcher="Edit$")
    agent.run("go")
    assert seen == ["Edit", "NotebookEdit"]


async def test_async_hooks_and_event_contents(tmp_path, rec):
    events = []

    async def pre(e):
        events.append(("pre", e.tool_name, e.input, e.tool_use_id))

    def post(e):
        events.append(("post", e["tool_name"], e.output, e.result["content"]))

    agent, _ = _agent(tmp_path, rec, [[use("Read", "t1", text="x")], "done"])
    agent.hooks.add("PreToolUse", pre)
    agent.hooks.add("PostToolUse", post)
    await agent.arun("go")
    assert events == [
        ("pre", "Read", {"text": "x", "sleep": 0.0, "fail": False}, "t1"),
        ("post", "Read", "Read:x", "Read:x"),
    ]


def test_deny_beats_ask_beats_allow_across_hooks(tmp_path, rec):
    asked: list[str] = []
    agent, _ = _agent(
        tmp_path, rec, [[use("Edit", "1", text="a")], "done"], approver=lambda r: asked.append(r.tool_name) or "allow"
    )
    agent.hooks.add("PreToolUse", lambda e: HookOutcome(decision="allow"))
    agent.hooks.add("PreToolUse", lambda e: HookOutcome(decision="deny", reason="no edits on Fridays"))
    agent.hooks.add("PreToolUse", lambda e: HookOutcome(decision="ask"))
    agent.run("go")
    assert asked == [] and rec.calls == []
    content = results_of(agent.messages[2])["1"]["content"]
    assert "blocked" in content and "no edits on Fridays" in content


def test_hook_ask_forces_a_prompt_even_for_read_only_calls(tmp_path, rec):
    asked: list[str] = []
    agent, _ = _agent(
        tmp_path, rec, [[use("Read", "1", text="a")], "done"], approver=lambda r: asked.append(r.reason) or "allow"
    )
    agent.hooks.add("PreToolUse", lambda e: HookOutcome(decision="ask", reason="check secrets first"))
    agent.run("go")
    assert asked == ["check secrets first"] and len(rec.calls) == 1


def test_a_hook_that_raises_blocks_the_call_and_says_why(tmp_path, rec):
    def broken_guard(e):
        raise RuntimeError("policy server unreachable")

    agent, _ = _agent(tmp_path, rec, [[use("Read", "1", text="a")], "done"])
    agent.hooks.add("PreToolUse", broken_guard)
    agent.run("go")
    assert rec.calls == []
    content = results_of(agent.messages[2])["1"]["content"]
    assert "broken_guard" in content and "policy server unreachable" in content
    stage = agent.trace[0].stage("pre_hooks")
    assert stage.outcome == "deny" and "policy server unreachable" in stage.detail


def test_additional_context_reaches_the_model_with_the_result(tmp_path, rec):
    agent, model = _agent(tmp_path, rec, [[use("Read", "1", text="a")], "done"])
    agent.hooks.add("PreToolUse", lambda e: HookOutcome(additional_context="note: file is generated"))
    agent.hooks.add("PostToolUse", lambda e: HookOutcome(additional_context="lint: 2 warnings"))
    agent.run("go")
    sent = results_of(model.requests[1]["messages"][2])["1"]["content"]
    assert sent == "Read:a\n\nnote: file is generated\nlint: 2 warnings"


def test_post_tool_use_failure_sees_the_error(tmp_path, rec):
    seen = []
    agent, _ = _agent(tmp_path, rec, [[use("Read", "1", text="a", fail=True)], "done"])
    agent.hooks.add("PostToolUseFailure", lambda e: seen.append(e.error))
    agent.hooks.add("PostToolUse", lambda e: seen.append("wrong hook"))
    agent.run("go")
    assert seen == ["Read failed on purpose"]


def test_a_hook_can_stop_the_run(tmp_path, rec):
    agent, model = _agent(tmp_path, rec, [[use("Read", "1", text="a")], "never reached"])
    agent.hooks.add("PostToolUse", lambda e: HookOutcome(stop=True, reason="budget exhausted"))
    result = agent.run("go")
    assert result.stop_reason == "stopped_by_hook" and "budget exhausted" in result.text
    assert len(model.requests) == 1
    assert agent.messages[-1]["role"] == "user"  # the result was kept, the history is valid


def test_user_prompt_submit_can_block_or_add_context(tmp_path, rec):
    agent, model = _agent(tmp_path, rec, ["ok"])
    agent.hooks.add(
        "UserPromptSubmit",
        lambda e: (
            HookOutcome(decision="deny", reason="no secrets in prompts")
            if "password" in e.prompt
            else HookOutcome(additional_context="Project uses uv.")
        ),
    )
    blocked = agent.run("my password is hunter2")
    assert blocked.stop_reason == "blocked_by_hook" and agent.messages == [] and model.requests == []
    agent.run("hello")
    assert model.requests[0]["messages"][0]["content"] == [
        {"type": "text", "text": "hello"},
        {"type": "text", "text": "Project uses uv."},
    ]


def test_stop_hook_can_send_the_agent_back_to_work(tmp_path, rec):
    agent, model = _agent(tmp_path, rec, ["I'm done", "now really done"])
    calls = []

    def stop_hook(e):
        calls.append(e.last_message)
        if len(calls) == 1:
            return HookOutcome(decision="deny", reason="Run the tests before you stop.")
        return None

    agent.hooks.add("Stop", stop_hook)
    result = agent.run("go")
    assert calls == ["I'm done", "now really done"]
    assert result.stop_reason == "end_turn" and result.text == "now really done"
    assert model.requests[1]["messages"][-1] == {
        "role": "user",
        "content": [{"type": "text", "text": "Run the tests before you stop."}],
    }


def test_bad_hook_registration_is_refused(tmp_path, rec):
    agent, _ = _agent(tmp_path, rec, [])
    with pytest.raises(ValueError, match="PreToolUse"):
        agent.hooks.add("BeforeTool", lambda e: None)
    with pytest.raises(ValueError, match="regex"):
        agent.hooks.add("PreToolUse", lambda e: None, matcher="Edit(")


def test_a_rewritten_input_is_what_the_prompt_and_the_row_name(tmp_path):
    (tmp_path / "drafts").mkdir()
    asked: list[str] = []
    model = ScriptedModel([[use("Write", "w1", file_path="summary.md", content="hi\n")], "done"])
    agent = Agent(model=model, cwd=tmp_path, approver=lambda r: asked.append(r.summary) or "allow")
    agent.hooks.add(
        "PreToolUse",
        lambda e: HookOutcome(updated_input={**e.input, "file_path": "drafts/summary.md"}),
        matcher="Write",
    )
    agent.run("write a summary")
    assert (tmp_path / "drafts" / "summary.md").read_text() == "hi\n" and not (tmp_path / "summary.md").exists()
    assert asked == ["drafts/summary.md"]  # the person approves the path that is written
    assert agent.trace[0].summary_use == "drafts/summary.md"
