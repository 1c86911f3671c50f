"""The prompt cache stays warm: what the agent sends keeps its prefix from one turn to the next.

A whole Agent with AnthropicModel talks to a local Messages API that bills each request with the
documented prompt-cache accounting (tests/support/prompt_cache.py). The checks are structural:
the bytes of the system prompt and of the tool definitions, where the breakpoints are, and
whether each request reads back everything the one before it cached. No timings.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field

from ipy_agent import Agent, build_tool
from ipy_agent.models.anthropic import AnthropicModel
from tests.support.prompt_cache import MAX_BREAKPOINTS, CachingServer
from tests.support.sse_server import message_events
from tests.support.transcript import use

pytestmark = pytest.mark.timeout(120)


def project(root: Path) -> None:
    for i in range(12):
        (root / f"notes_{i}.md").write_text(f"# Notes {i}\n" + f"Line {i} of the notes. " * 40 + "\n")
    (root / "main.py").write_text("def main():\n    return 1\n")


def reading(n: int, first: int) -> list[dict[str, Any]]:
    return [
        {"type": "text", "text": f"Reading {n} files."},
        *(use("Read", f"toolu_{first + i:03d}", file_path=f"notes_{i % 12}.md") for i in range(n)),
    ]


def scripted_session() -> list[list[dict[str, Any]]]:
    """One prompt: a read, ten reads in one message (more blocks than the lookback covers), an
    edit, a search, the answer."""
    return [
        reading(1, 0),
        reading(10, 1),
        [
            {"type": "text", "text": "Editing."},
            use("Read", "toolu_020", file_path="main.py"),
        ],
        [
            {"type": "text", "text": "Editing."},
            use("Edit", "toolu_021", file_path="main.py", old_string="return 1", new_string="return 2"),
        ],
        [{"type": "text", "text": "Searching."}, use("Grep", "toolu_022", pattern="def ", output_mode="content")],
        [{"type": "text", "text": "Done: main returns 2."}],
    ]


def breakpoints(body: dict[str, Any]) -> list[str]:
    """Where the request's cache breakpoints are."""
    out = [f"tools[{i}]" for i, t in enumerate(body.get("tools") or []) if "cache_control" in t]
    system = body.get("system") or []
    out += [f"system[{i}]" for i, b in enumerate(system) if isinstance(b, dict) and "cache_control" in b]
    for m, message in enumerate(body["messages"]):
        content = message["content"]
        if isinstance(content, list):
            out += [f"messages[{m}][{c}]" for c, b in enumerate(content) if "cache_control" in b]
    return out


def without_breakpoints(value: Any) -> str:
    """The bytes of `value` as sent, less the cache_control markers (which move by design)."""

    def strip(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: strip(x) for k, x in v.items() if k != "cache_control"}
        if isinstance(v, list):
            return [strip(x) for x in v]
        return v

    return json.dumps(strip(value), sort_keys=False, ensure_ascii=False)


def agent_for(server: CachingServer, root: Path) -> tuple[Agent, AnthropicModel]:
    model = AnthropicModel("claude-sonnet-4-5", api_key="test", base_url=server.url, max_retries=0)
    return Agent(model=model, cwd=root, approver=lambda req: "allow", instructions=False), model


def reads_all_cached_before(usages: list[dict[str, Any]]) -> list[int]:
    """Requests (by index) that did not read back all the request before them had cached."""
    return [
        i
        for i in range(1, len(usages))
        if usages[i]["cache_read_input_tokens"]
        < usages[i - 1]["cache_read_input_tokens"] + usages[i - 1]["cache_creation_input_tokens"]
    ]


async def test_no_byte_of_the_system_prompt_or_tools_changes_between_turns_and_every_turn_reads_the_last(
    tmp_path: Path,
):
    project(tmp_path)
    with CachingServer() as server:
        server.add(*(message_events(reply) for reply in scripted_session()))
        agent, model = agent_for(server, tmp_path)
        result = await agent.arun("Read the notes, then make main return 2.")
        server.add(message_events([{"type": "text", "text": "Still 2."}]))
        await agent.arun("What does main return now?")  # a second prompt goes on from the same prefix
        await model.aclose()
    assert result.stop_reason == "end_turn"
    bodies = [r.body for r in server.requests]
    assert len(bodies) == 7
    assert len({without_breakpoints(b["system"]) for b in bodies}) == 1, "the system prompt changed between turns"
    assert len({without_breakpoints(b["tools"]) for b in bodies}) == 1, "a tool definition changed between turns"
    for body in bodies:
        marks = breakpoints(body)
        assert len(marks) <= MAX_BREAKPOINTS
        last_user = (
            max(i for i, m in enumerate(body["messages"][:-1]) if m["role"] == "user")
            if len(body["messages"]) > 1
            else None
        )
        expected = [f"tools[{len(body['tools']) - 1}]", f"system[{len(body['system']) - 1}]"]
        if last_user is not None:
            expected.append(f"messages[{last_user}][{len(body['messages'][last_user]['content']) - 1}]")
        expected.append(f"messages[{len(body['messages']) - 1}][{len(body['messages'][-1]['content']) - 1}]")
        assert marks == expected
    # The turn after ten parallel reads added more blocks than the lookback reaches from the new
    # breakpoint; the breakpoint where the previous request had its own still finds the entry.
    assert reads_all_cached_before(server.usages) == []
    assert all(u["input_tokens"] == 0 for u in server.usages)  # everything is behind a breakpoint
    shares = [
        u["cache_read_input_tokens"]
        / sum(u[k] for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"))
        for u in server.usages
    ]
    assert min(shares[1:]) > 0.5


async def test_a_change_of_the_tool_list_costs_one_cache_write_then_the_prefix_is_stable_again(tmp_path: Path):
    class QueryInput(BaseModel):
        model_config = ConfigDict(extra="forbid")
        sql: str = Field(description="A read-only SQL query.")

    async def query(inp: QueryInput, ctx: Any) -> str:
        return "no rows"

    server_tool = build_tool(
        name="mcp__db__query", input_model=QueryInput, description="Query the database.", call=query, is_read_only=True
    )
    project(tmp_path)
    with CachingServer() as server:
        agent, model = agent_for(server, tmp_path)
        for prompt in range(2):
            if prompt == 1:
                agent.registry.set_group("mcp", [server_tool])  # what an MCP list_changed does
            server.add(
                message_events(reading(1, 10 * prompt)),
                message_events(reading(2, 10 * prompt + 1)),
                message_events([{"type": "text", "text": "ok"}]),
            )
            await agent.arun(f"prompt {prompt}")
        await model.aclose()
    bodies = [r.body for r in server.requests]
    tools = [without_breakpoints(b["tools"]) for b in bodies]
    systems = [without_breakpoints(b["system"]) for b in bodies]
    assert len(set(tools[:3])) == len(set(tools[3:])) == 1 and tools[2] != tools[3]
    assert len(set(systems[:3])) == len(set(systems[3:])) == 1
    # The new tool comes last, so the old tools are still read; one request writes the rest again.
    assert reads_all_cached_before(server.usages) == [3]
    old_tools = server.usages[3]["cache_read_input_tokens"]
    assert old_tools > 0 and json.loads(tools[3])[-1]["name"] == "mcp__db__query"


async def test_the_summary_request_of_a_compaction_reads_the_conversation_from_the_cache(tmp_path: Path):
    """`%agent_compact` sends the conversation's own request with the instructions at the end, so
    what the last turn cached is read back; only the instructions and the summary are new."""
    project(tmp_path)
    with CachingServer() as server:
        server.add(*(message_events(reply) for reply in scripted_session()))
        agent, model = agent_for(server, tmp_path)
        await agent.arun("Read the notes, then make main return 2.")
        summary = "Requests: make main return 2. Work done: read the notes, edited main.py. Open: nothing."
        server.add(message_events([{"type": "text", "text": summary}]))
        assert await agent.context_manager.compact(trigger="manual") is True
        await model.aclose()
    last_turn, compaction = server.usages[-2], server.usages[-1]
    body = server.requests[-1].body
    assert without_breakpoints(body["tools"]) == without_breakpoints(server.requests[-2].body["tools"])
    assert body["messages"][-1]["content"][-1]["text"].startswith("[Compaction]")
    cached_before = last_turn["cache_read_input_tokens"] + last_turn["cache_creation_input_tokens"]
    assert compaction["cache_read_input_tokens"] >= cached_before  # the whole conversation, from the cache
    fresh = compaction["input_tokens"] + compaction["cache_creation_input_tokens"]
    assert fresh < 0.2 * compaction["cache_read_input_tokens"]  # only the instructions are new
    assert agent.messages[0]["content"][0]["text"].startswith("[Conversation compacted]") and summary in str(
        agent.messages[0]
    )


async def test_tools_that_appear_later_come_last_and_leave_the_others_definitions_unchanged(tmp_path: Path, shell: Any):
    """The live notebook connects between two prompts: NotebookRead, NotebookRun, NotebookVerify, Variables
    join the list after the tools already offered, and no definition already sent changes
    (NotebookEdit says the same with or without a page), so those are read from the cache."""
    from tests.support.frontend import Panel, cell, connected_bridge

    project(tmp_path)
    bridge = connected_bridge(Panel(path="open.ipynb", cells=[cell("x = 1", cell_id="c1")]), tmp_path, shell=shell)
    with CachingServer() as server:
        agent, model = agent_for(server, tmp_path)
        for prompt in range(2):
            if prompt == 1:
                agent.configure(notebook=bridge)
            server.add(message_events(reading(1, 10 * prompt)), message_events([{"type": "text", "text": "ok"}]))
            await agent.arun(f"prompt {prompt}")
        await model.aclose()
    before, after = (json.loads(without_breakpoints(r.body["tools"])) for r in (server.requests[1], server.requests[2]))
    names = [t["name"] for t in after]
    assert names[: len(before)] == [t["name"] for t in before] and after[: len(before)] == before
    assert set(names[len(before) :]) == {"NotebookRead", "NotebookRun", "NotebookVerify", "Variables", "TodoHuman"}
    # The tools already offered are read back; only the new definitions (and what follows) are written.
    assert server.usages[2]["cache_read_input_tokens"] > 0 and reads_all_cached_before(server.usages) == [2]
