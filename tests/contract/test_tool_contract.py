"""The tool contract: build_tool's fail-closed defaults, flags, sync/async calls, results."""

from __future__ import annotations

import threading

import pytest
from pydantic import BaseModel

from ipy_agent import Agent, ScriptedModel, build_tool
from tests.support.tools import tool_ctx
from tests.support.transcript import results_of, use


class Q(BaseModel):
    sql: str


def _noop(q, ctx):
    return "ok"


def test_defaults_fail_closed():
    t = build_tool(name="Sql", input_model=Q, description="d", call=_noop)
    q = t.input_model(sql="select 1")
    assert t.is_read_only(q) is False
    assert t.is_concurrency_safe(q) is False
    assert t.is_destructive(q) is False
    ctx = tool_ctx(__import__("pathlib").Path("."))
    assert t.is_enabled(ctx) is True


def test_flag_functions_of_input_and_raising_flags_give_the_unsafe_answer():
    def boom(q):
        raise RuntimeError("bug in flag")

    t = build_tool(
        name="Sql",
        input_model=Q,
        description="d",
        call=_noop,
        is_read_only=lambda q: q.sql.startswith("select"),
        is_concurrency_safe=boom,
        is_destructive=boom,
    )
    assert t.is_read_only(t.input_model(sql="select 1")) is True
    assert t.is_read_only(t.input_model(sql="drop table x")) is False
    assert t.is_concurrency_safe(t.input_model(sql="select 1")) is False
    # "destructive" fails towards warning the person.
    assert t.is_destructive(t.input_model(sql="select 1")) is True


def test_bad_build_arguments_are_rejected_with_clear_messages():
    with pytest.raises(TypeError, match="pydantic BaseModel"):
        build_tool(name="X", input_model=dict, description="d", call=_noop)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="tool name"):
        build_tool(name="bad name!", input_model=Q, description="d", call=_noop)
    with pytest.raises(TypeError, match="is_read_only"):
        build_tool(name="X", input_model=Q, description="d", call=_noop, is_read_only="yes")  # type: ignore[arg-type]


def test_input_schema_is_the_pydantic_schema_sent_to_the_model(tmp_path):
    t = build_tool(name="Sql", input_model=Q, description=lambda ctx: f"Query. cwd={ctx.cwd.name}", call=_noop)
    model = ScriptedModel(["hi"])
    Agent(model=model, tools=[t], cwd=tmp_path).run("go")
    sent = model.requests[0]["tools"]
    assert sent == [
        {
            "name": "Sql",
            "description": f"Query. cwd={tmp_path.name}",
            "input_schema": {
                "properties": {"sql": {"title": "Sql", "type": "string"}},
                "required": ["sql"],
                "type": "object",
            },
        }
    ]


def test_sync_call_runs_in_a_worker_thread_async_call_on_the_loop(tmp_path):
    threads: dict[str, str] = {}

    def sync_call(q, ctx):
        threads["sync"] = threading.current_thread().name
        return "s"

    async def async_call(q, ctx):
        threads["async"] = threading.current_thread().name
        return "a"

    tools = [
        build_tool(name="S", input_model=Q, description="d", call=sync_call, is_read_only=True),
        build_tool(name="A", input_model=Q, description="d", call=async_call, is_read_only=True),
    ]
    model = ScriptedModel([[use("S", "t1", sql="x"), use("A", "t2", sql="y")], "done"])
    agent = Agent(model=model, tools=tools, cwd=tmp_path)
    agent.run("go")
    main = threading.current_thread().name
    assert threads["async"] == main
    assert threads["sync"] != main
    res = results_of(agent.messages[2])
    assert res["t1"]["content"] == "s" and res["t2"]["content"] == "a"


def test_map_result_and_summaries_are_separate(tmp_path):
    t = build_tool(
        name="Rows",
        input_model=Q,
        description="d",
        is_read_only=True,
        call=lambda q, ctx: [{"id": i} for i in range(3)],
        map_result=lambda rows, tid: "\n".join(f"row {r['id']}" for r in rows),
        summarize_use=lambda q: f"query {q.sql!r}",
        summarize_result=lambda rows: f"{len(rows)} rows",
    )
    model = ScriptedModel([[use("Rows", "t1", sql="select")], "done"])
    agent = Agent(model=model, tools=[t], cwd=tmp_path)
    agent.run("go")
    assert results_of(agent.messages[2])["t1"]["content"] == "row 0\nrow 1\nrow 2"
    rec = agent.trace[0]
    assert rec.summary_use == "query 'select'"
    assert rec.summary_result == "3 rows"


def test_natural_data_is_serialised_as_json_by_default(tmp_path):
    t = build_tool(name="D", input_model=Q, description="d", is_read_only=True, call=lambda q, ctx: {"a": 1})
    model = ScriptedModel([[use("D", "t1", sql="x")], "done"])
    agent = Agent(model=model, tools=[t], cwd=tmp_path)
    agent.run("go")
    assert results_of(agent.messages[2])["t1"]["content"] == '{\n  "a": 1\n}'
