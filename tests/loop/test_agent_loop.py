"""The agent loop and ScriptedModel: turns, stop reasons, usage, system prompt, registry per turn."""

from __future__ import annotations

import json
import platform
from collections.abc import AsyncIterator

import pytest

from ipy_agent import Agent, ModelError, ScriptedModel
from ipy_agent.history.messages import history_problems, repair_history
from ipy_agent.models.base import BlockComplete, MessageComplete, ModelRequest, TextDelta, Usage
from ipy_agent.runtime.trace import TextEvent
from tests.support.transcript import use


def test_max_turns_ends_the_run_with_a_valid_history(tmp_path, rec):
    loop = [[use("R", f"t{i}", text=str(i))] for i in range(10)]
    agent = Agent(model=ScriptedModel(loop), tools=[rec.tool("R", read_only=True)], cwd=tmp_path, max_turns=3)
    result = agent.run("go")
    assert result.stop_reason == "max_turns" and result.turns == 3
    assert len(rec.calls) == 3 and history_problems(agent.messages) == []


def test_conversation_continues_across_runs(tmp_path):
    model = ScriptedModel(["first answer", "second answer"])
    agent = Agent(model=model, tools=[], cwd=tmp_path)
    agent.run("one")
    result = agent.run("two")
    assert result.text == "second answer"
    assert [m["role"] for m in model.requests[1]["messages"]] == ["user", "assistant", "user"]


def test_usage_accumulates_per_run_and_per_conversation(tmp_path):
    model = ScriptedModel(["a", "b"])
    agent = Agent(model=model, tools=[], cwd=tmp_path)
    r1 = agent.run("x")
    r2 = agent.run("y")
    assert r1.usage.output_tokens > 0 and r2.usage.input_tokens > r1.usage.input_tokens
    assert agent.usage.input_tokens == r1.usage.input_tokens + r2.usage.input_tokens
    assert agent.turns[1].usage.input_tokens == r2.usage.input_tokens


def test_system_prompt_tells_the_environment(tmp_path, rec):
    model = ScriptedModel(["hi"])
    Agent(model=model, tools=[rec.tool("R", read_only=True)], cwd=tmp_path, notebook_path="analysis.ipynb").run("go")
    system = model.requests[0]["system"]
    assert str(tmp_path) in system and platform.system() in system
    assert "analysis.ipynb" in system and "Tools available now: R" in system
    assert "Before you edit a file (or notebook), read it." in system


def test_what_the_model_was_offered_is_recorded_per_turn(tmp_path, rec):
    notebook_tool = rec.tool("NotebookCell", is_enabled=lambda ctx: ctx.notebook is not None)
    tools = [
        rec.tool("Bash", offered_in_simple_mode=True),
        rec.tool("Read", read_only=True, offered_in_simple_mode=True),
        rec.tool("Edit", offered_in_simple_mode=True),
        rec.tool("Glob", read_only=True),
        notebook_tool,
    ]
    model = ScriptedModel(["a"])
    agent = Agent(model=model, tools=tools, cwd=tmp_path, simple=True)
    agent.run("go")
    assert [t["name"] for t in model.requests[0]["tools"]] == ["Bash", "Read", "Edit"]
    assert agent.turns[0].offered == ["Bash", "Read", "Edit"]
    assert agent.turns[0].hidden["Glob"].startswith("simple mode")
    agent.simple = False
    model.turns.append("b")
    agent.run("again")
    assert agent.turns[1].offered == ["Bash", "Read", "Edit", "Glob"]
    assert list(agent.turns[1].hidden) == ["NotebookCell"]


class FailingModel:
    """Streams one tool_use, then fails like an API error in the middle of the message."""

    name = "failing"

    def __init__(self, kind: str = "overloaded") -> None:
        self.kind = kind

    async def stream(self, request: ModelRequest) -> AsyncIterator:
        yield TextDelta(text="Let me look.")
        yield BlockComplete(block={"type": "text", "text": "Let me look."}, index=0)
        yield BlockComplete(block=use("R", "t1", text="x"), index=1)
        raise ModelError("Anthropic is overloaded (529); try again in a minute.", kind=self.kind)


def test_a_model_error_mid_stream_keeps_the_started_tool_and_a_valid_history(tmp_path, rec):
    agent = Agent(model=FailingModel(), tools=[rec.tool("R", read_only=True)], cwd=tmp_path)
    result = agent.run("go")
    assert result.stop_reason == "error" and result.error_kind == "overloaded" and "overloaded" in result.error
    assert history_problems(agent.messages) == []
    assert agent.messages[-1]["content"][0]["content"] == "R:x"
    assert len(rec.calls) == 1


class OneShot:
    def __init__(self, stop_reason: str, content: list) -> None:
        self.name, self.stop_reason, self.content, self.calls = "x", stop_reason, content, 0

    async def stream(self, request):
        self.calls += 1
        content = self.content if self.calls == 1 else [{"type": "text", "text": "continued"}]
        for i, b in enumerate(content):
            yield BlockComplete(block=b, index=i)
        yield MessageComplete(
            content=content, stop_reason=self.stop_reason if self.calls == 1 else "end_turn", usage=Usage()
        )


@pytest.mark.parametrize(
    "stop,expected", [("refusal", "refusal"), ("max_tokens", "max_tokens"), ("stop_sequence", "end_turn")]
)
def test_stop_reasons_are_reported(tmp_path, stop, expected):
    agent = Agent(model=OneShot(stop, [{"type": "text", "text": "partial"}]), tools=[], cwd=tmp_path)
    assert agent.run("go").stop_reason == expected
    assert history_problems(agent.messages) == []


def test_pause_turn_continues_the_same_assistant_message(tmp_path):
    model = OneShot("pause_turn", [{"type": "text", "text": "working..."}])
    agent = Agent(model=model, tools=[], cwd=tmp_path)
    result = agent.run("go")
    assert model.calls == 2 and result.stop_reason == "end_turn"
    assert agent.messages[-1]["content"] == [
        {"type": "text", "text": "working..."},
        {"type": "text", "text": "continued"},
    ]


def test_text_streams_to_listeners(tmp_path):
    chunks: list[str] = []
    agent = Agent(model=ScriptedModel(["x" * 100], chunk_size=30), tools=[], cwd=tmp_path)
    agent.on_event(lambda e: chunks.append(e.text) if isinstance(e, TextEvent) else None)
    agent.run("go")
    assert chunks == ["x" * 30, "x" * 30, "x" * 30, "x" * 10]


def test_a_broken_listener_does_not_break_the_run(tmp_path):
    agent = Agent(model=ScriptedModel(["ok"]), tools=[], cwd=tmp_path)
    agent.on_event(lambda e: 1 / 0)
    assert agent.run("go").stop_reason == "end_turn"


# --- ScriptedModel -----------------------------------------------------------------------


def test_scripted_model_callable_turns_see_the_conversation(tmp_path, rec):
    def reply(messages):
        result = messages[-1]["content"][0]["content"]
        return f"the tool said {result}"

    model = ScriptedModel([[use("R", "t1", text="42")], reply])
    agent = Agent(model=model, tools=[rec.tool("R", read_only=True)], cwd=tmp_path)
    assert agent.run("go").text == "the tool said R:42"


def test_scripted_model_from_file_and_defaults(tmp_path, rec):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"turns": [[{"type": "tool_use", "name": "R", "input": {"text": "a"}}], "bye"]}))
    model = ScriptedModel.from_file(path)
    agent = Agent(model=model, tools=[rec.tool("R", read_only=True)], cwd=tmp_path)
    assert agent.run("go").text == "bye"
    assert agent.messages[1]["content"][0]["id"] == "toolu_scripted_0001"
    assert agent.run("more").text == "(The scripted model has no more turns.)"
    assert len(model.requests) == 3 and model.requests[0]["tools"][0]["name"] == "R"


@pytest.mark.parametrize(
    "content,message",
    [
        ("{not json", "not valid JSON"),
        ('{"steps": []}', '"turns"'),
        ('{"turns": [42]}', "turn 0 must be a string or a list of blocks"),
    ],
)
def test_scripted_model_from_file_errors(tmp_path, content, message):
    path = tmp_path / "t.json"
    path.write_text(content)
    with pytest.raises(ValueError, match=message):
        ScriptedModel.from_file(path)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        ScriptedModel.from_file(tmp_path / "missing.json")


def test_repair_history_fixes_what_a_crash_could_leave(tmp_path):
    broken = [
        {"role": "user", "content": "a"},
        {"role": "user", "content": "b"},
        {"role": "assistant", "content": [use("R", "t1"), use("R", "t2")]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]},
        {"role": "assistant", "content": [use("R", "t3")]},
    ]
    assert history_problems(broken)
    fixed = repair_history(broken)
    assert history_problems(fixed) == []
    assert [b["tool_use_id"] for b in fixed[2]["content"]] == ["t1", "t2"]
    assert fixed[-1]["content"][0]["tool_use_id"] == "t3" and fixed[-1]["content"][0]["is_error"]
