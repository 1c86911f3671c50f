"""One call through every stage: the errors the model gets, and the trace the person can read."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ConfigDict

from ipy_agent import Agent, ScriptedModel, ToolError, build_tool
from ipy_agent.contract.decision import UNDECIDED, CallDecision
from ipy_agent.contract.tool import Tool
from ipy_agent.contract.tool_context import ToolContext
from tests.support.tools import tool_ctx
from tests.support.transcript import results_of, use


class Args(BaseModel):
    path: str
    count: int = 1


def _tool(**kw):
    kw.setdefault("call", lambda a, ctx: f"{a.path}x{a.count}")
    return build_tool(name="T", input_model=Args, description="d", is_read_only=True, **kw)


def _run(tool, blocks, **agent_kw):
    model = ScriptedModel([blocks, "done"])
    agent = Agent(model=model, tools=[tool], cwd=agent_kw.pop("cwd"), **agent_kw)
    result = agent.run("go")
    return agent, model, result


def test_unknown_tool_names_the_available_ones(tmp_path):
    agent, model, _ = _run(_tool(), [use("Nope", "t1")], cwd=tmp_path)
    block = results_of(agent.messages[2])["t1"]
    assert block["is_error"] is True
    assert "No such tool available: 'Nope'" in block["content"] and "T" in block["content"]
    # the model sees that error in its next request
    assert model.requests[1]["messages"][2]["content"][0]["content"] == block["content"]


def test_schema_errors_name_each_field_and_what_was_expected(tmp_path):
    agent, _, _ = _run(
        _tool(),
        [
            use("T", "missing"),
            use("T", "extra", path="a", colour="red"),
            use("T", "wrong", path="a", count="many"),
        ],
        cwd=tmp_path,
    )
    res = results_of(agent.messages[2])
    assert "The required parameter `path` is missing" in res["missing"]["content"]
    assert "An unexpected parameter `colour` was provided" in res["extra"]["content"]
    assert "`count` is expected as `integer` but was provided as `string`" in res["wrong"]["content"]
    assert all(b["is_error"] for b in res.values())


def test_forbidding_models_report_unexpected_fields_too(tmp_path):
    class Strict(BaseModel):
        model_config = ConfigDict(extra="forbid")
        a: int

    t = build_tool(name="S", input_model=Strict, description="d", call=lambda a, c: "x", is_read_only=True)
    agent, _, _ = _run(t, [use("S", "t1", a="x", b=2)], cwd=tmp_path)
    text = results_of(agent.messages[2])["t1"]["content"]
    assert "`a` is expected as `integer`" in text and "unexpected parameter `b`" in text


def test_validate_input_message_reaches_the_model_and_call_never_runs(tmp_path):
    calls = []
    t = _tool(
        validate_input=lambda a, ctx: (
            None if a.count > 0 else f"count must be positive, got {a.count!r}; pass 1 or more"
        ),
        call=lambda a, ctx: calls.append(a) or "ran",
    )
    agent, _, _ = _run(t, [use("T", "t1", path="p", count=0)], cwd=tmp_path)
    assert results_of(agent.messages[2])["t1"] == {
        "type": "tool_result",
        "tool_use_id": "t1",
        "is_error": True,
        "content": "count must be positive, got 0; pass 1 or more",
    }
    assert calls == []


def test_tool_errors_and_exceptions_become_error_results(tmp_path):
    def call(a, ctx):
        if a.path == "steer":
            raise ToolError("the path must be inside the project; try 'src/'")
        raise KeyError("boom")

    agent, _, result = _run(_tool(call=call), [use("T", "a", path="steer"), use("T", "b", path="crash")], cwd=tmp_path)
    res = results_of(agent.messages[2])
    assert res["a"]["content"] == "the path must be inside the project; try 'src/'"
    assert res["b"]["content"] == "T failed with KeyError: 'boom'"
    assert result.stop_reason == "end_turn"


def test_broken_map_result_is_an_error_result_not_a_crash(tmp_path):
    def bad_map(out, tid):
        raise ValueError("cannot map")

    agent, _, _ = _run(_tool(map_result=bad_map), [use("T", "a", path="p")], cwd=tmp_path)
    block = results_of(agent.messages[2])["a"]
    assert block["is_error"] and "could not be converted" in block["content"]


def test_stage_order_and_timings_in_the_trace(tmp_path):
    agent, _, _ = _run(_tool(), [use("T", "a", path="p")], cwd=tmp_path)
    rec = agent.trace[0]
    assert [s.name for s in rec.stages] == ["find", "parse", "validate", "permission", "call", "map", "budget"]
    assert all(s.end >= s.start for s in rec.stages)
    assert rec.decision.behavior == "allow" and rec.decision.source == "default"
    assert rec.start <= rec.stages[0].start and rec.end >= rec.stages[-1].end
    assert rec.status == "done" and rec.batch == 1 and rec.input == {"path": "p"}


def test_full_stage_order_with_hooks(tmp_path):
    model = ScriptedModel([[use("T", "a", path="p")], "done"])
    agent = Agent(model=model, tools=[_tool()], cwd=tmp_path)
    agent.hooks.add("PreToolUse", lambda e: None)
    agent.hooks.add("PostToolUse", lambda e: None)
    agent.run("go")
    assert [s.name for s in agent.trace[0].stages] == [
        "find",
        "parse",
        "validate",
        "pre_hooks",
        "permission",
        "call",
        "map",
        "budget",
        "post_hooks",
    ]


def test_empty_result_gets_a_placeholder(tmp_path):
    agent, _, _ = _run(_tool(call=lambda a, c: ""), [use("T", "a", path="p")], cwd=tmp_path)
    assert results_of(agent.messages[2])["a"]["content"] == "(T completed with no output)"


class _Seen(Tool[Args, str]):
    """Says who let it run, as the lifecycle's decision told its `call`."""

    name = "Seen"
    input_model = Args

    def description(self, ctx):
        return "d"

    async def call(self, inp: Args, ctx: ToolContext, decision: CallDecision = UNDECIDED) -> str:
        return f"source={decision.source} approved={decision.approved}"


@pytest.mark.parametrize(
    ("agent_kw", "said"),
    [
        ({"allow": ["Seen"]}, "source=rule approved=True"),
        ({"approver": lambda request: "allow"}, "source=person approved=True"),
        ({"permission_mode": "bypassPermissions"}, "source=mode approved=True"),
    ],
)
def test_the_call_is_given_who_let_it_run(tmp_path, agent_kw, said):
    agent, _, _ = _run(_Seen(), [use("Seen", "t1", path="p")], cwd=tmp_path, **agent_kw)
    assert results_of(agent.messages[2])["t1"]["content"] == said


async def test_a_direct_call_without_a_decision_is_not_approved(tmp_path):
    out = await _Seen().call(Args(path="p"), tool_ctx(tmp_path))
    assert out == "source=None approved=False"
