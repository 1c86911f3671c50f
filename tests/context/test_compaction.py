"""Compaction: when clearing is not enough (or the person asks), older turns become one summary,
recent turns stay verbatim, the history stays valid, PreCompact hooks have their say, and the
read state forgets files the model can no longer see."""

from __future__ import annotations

from typing import Any

from ipy_agent import Agent, HookOutcome, ModelError, ScriptedModel
from ipy_agent.context.compaction import COMPACTION_SYSTEM, SUMMARY_HEADER
from ipy_agent.history.messages import history_problems
from ipy_agent.models.scripted import COMPACTION_SUMMARY
from ipy_agent.runtime.trace import ContextEvent, NoticeEvent
from tests.support.context import fetch, fetch_tool
from tests.support.transcript import all_results, first_result, result_text, results_of, use

NOT_READ = "has not been read yet. Read it first"


def test_auto_compaction_keeps_recent_turns_verbatim_and_uses_no_scripted_turn(tmp_path):
    seen: list[list[dict[str, Any]]] = []

    def turn(i: int):
        def reply(messages):
            seen.append(messages)
            return [fetch(i)]

        return reply

    model = ScriptedModel([turn(i) for i in range(100)] + ["finished"], keep_requests=None)
    agent = Agent(model, cwd=tmp_path, tools=[fetch_tool(6_000)], context_window=12_000, max_turns=120)
    events: list[Any] = []
    agent.on_event(events.append)
    result = agent.run("Fetch the pages and tell me which mention cats.")

    assert result.stop_reason == "end_turn" and result.text == "finished"
    assert len(model.requests) == 101 and model.remaining == 0  # the summaries used no scripted turn
    compacted = [e for e in events if isinstance(e, ContextEvent) and e.action == "compacted"]
    assert compacted and len(model.compactions) == len(compacted)
    assert all(e.after < e.before for e in compacted)

    # After it, the model sees the summary first, then the recent turns exactly as they were.
    i = next(k for k, msgs in enumerate(seen) if msgs[0]["content"][0]["text"].startswith(SUMMARY_HEADER))
    before, after = seen[i - 1], seen[i]

    # The summary request is the conversation's own request (the same system prompt, tools and
    # messages, so its prefix is read from the prompt cache) with the instructions at the end.
    request, turn = model.compactions[0], model.requests[0]
    assert request["system"] == turn["system"] != COMPACTION_SYSTEM and request["tools"] == turn["tools"]
    sent = request["messages"]
    assert sent[0]["content"][0]["text"] == "Fetch the pages and tell me which mention cats."
    assert sent[-2] == {"role": "assistant", "content": [fetch(i - 1)]} and len(sent) == len(before) + 2
    assert list(results_of(sent[-1])) == [f"toolu_fetch_{i - 1:05d}"]  # the results, then the ask
    ask = sent[-1]["content"][-1]["text"]
    assert ask.startswith("[Compaction]") and "do not call tools" in ask and "Files:" in ask and "Open:" in ask
    assert history_problems(sent) == []
    assert COMPACTION_SUMMARY in after[0]["content"][0]["text"]
    assert after[0]["role"] == "user" and after[1]["role"] == "assistant"
    assert history_problems(after) == []
    # Between the two requests the agent added its call (turn i-1) and that call's result.
    assert list(results_of(after[-1])) == [f"toolu_fetch_{i - 1:05d}"]
    kept = after[1:-1]
    expected = [*before, {"role": "assistant", "content": [fetch(i - 1)]}]
    for now, then in zip(kept, expected[len(expected) - len(kept) :], strict=True):
        if now["role"] == "assistant":
            assert now == then  # verbatim
        else:  # the same results (clearing may have shortened some)
            assert list(results_of(now)) == list(results_of(then))
    uses_after = [b["id"] for m in after for b in m["content"] if b.get("type") == "tool_use"]
    assert uses_after == sorted(uses_after) and uses_after[-1] == f"toolu_fetch_{i - 1:05d}"
    assert history_problems(agent.messages) == []


def test_read_state_after_compaction_requires_a_fresh_read_before_an_edit(tmp_path):
    target = tmp_path / "notes.txt"
    target.write_text("alpha\nbeta\n")
    model = ScriptedModel(
        [
            [use("Read", "r1", file_path=str(target))],
            "I have read notes.txt.",
            [use("Edit", "e1", file_path=str(target), old_string="beta", new_string="gamma")],
            [use("Read", "r2", file_path=str(target))],
            [use("Edit", "e2", file_path=str(target), old_string="beta", new_string="gamma")],
            "Edited.",
        ]
    )
    agent = Agent(model, cwd=tmp_path, permission_mode="acceptEdits")
    agent.run("read notes.txt")
    assert str(target) in agent.read_state

    assert agent.context_manager.compact_now() is True
    assert agent.messages[0]["content"][0]["text"].startswith(SUMMARY_HEADER)
    assert str(target) not in agent.read_state  # its content was compacted away

    agent.run("change beta to gamma")
    refused = first_result(model.requests[3]["messages"][-1])
    assert refused["is_error"] and NOT_READ in result_text(refused)
    ok = first_result(model.requests[5]["messages"][-1])
    assert not ok.get("is_error")
    assert target.read_text() == "alpha\ngamma\n"


def test_read_state_after_clearing_requires_a_fresh_read_before_an_edit(tmp_path):
    target = tmp_path / "big.txt"
    target.write_text("".join(f"line {i} of the file\n" for i in range(400)))
    turns: list[Any] = [[use("Read", "r1", file_path=str(target))]]
    turns += [[fetch(i)] for i in range(8)]
    turns += [
        [use("Edit", "e1", file_path=str(target), old_string="line 7 of", new_string="LINE 7 of")],
        [use("Read", "r2", file_path=str(target))],
        [use("Edit", "e2", file_path=str(target), old_string="line 7 of", new_string="LINE 7 of")],
        "done",
    ]
    model = ScriptedModel(turns)
    agent = Agent(
        model,
        cwd=tmp_path,
        tools=[*_file_tools(), fetch_tool(6_000)],
        context_window=14_000,
        permission_mode="acceptEdits",
        max_turns=20,
    )
    agent.run("go")

    first_read = first_result(model.requests[9]["messages"][2])
    assert first_read["tool_use_id"] == "r1" and "Read the file again" in result_text(first_read)
    refused = first_result(model.requests[10]["messages"][-1])
    assert refused["is_error"] and NOT_READ in result_text(refused)
    assert not first_result(model.requests[12]["messages"][-1]).get("is_error")
    assert "LINE 7 of the file" in target.read_text() and agent.context_manager.compactions == 0


def test_a_file_read_again_later_stays_editable_when_an_older_read_is_cleared(tmp_path):
    target = tmp_path / "t.txt"
    target.write_text("one\n" * 500)
    turns: list[Any] = [
        [use("Read", "r1", file_path=str(target))],
        [fetch(0)],
        [fetch(1)],
        [use("Read", "r2", file_path=str(target))],
    ]
    turns += [[fetch(i)] for i in range(2, 5)]
    model = ScriptedModel([*turns, "done"])
    agent = Agent(model, cwd=tmp_path, tools=[*_file_tools(), fetch_tool(5_000)], context_window=12_000, max_turns=20)
    agent.run("go")
    texts = {b["tool_use_id"]: result_text(b) for m in agent.messages for b in results_of(m).values()}
    assert "Read the file again" in texts["r1"] and texts["r2"].startswith("1\tone")
    assert str(target) in agent.read_state  # r2 still shows it


def test_pre_compact_hook_adds_instructions(tmp_path):
    model = ScriptedModel(["hello", "more"])
    agent = Agent(model, cwd=tmp_path)
    agent.run("first")
    agent.run("second")
    seen = []

    def hook(event):
        seen.append((event.event, event.trigger, event.instructions))
        return HookOutcome(additional_context="Keep the names of the failing tests.")

    agent.hooks.add("PreCompact", hook)
    assert agent.context_manager.compact_now("Keep every file path.") is True
    assert seen == [("PreCompact", "manual", "Keep every file path.")]
    sent = model.compactions[0]["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user", "assistant", "user"]  # the ask follows a reply
    prompt = sent[-1]["content"][0]["text"]
    assert "Also: Keep every file path." in prompt and "Also: Keep the names of the failing tests." in prompt


def test_pre_compact_hook_blocks(tmp_path):
    model = ScriptedModel([[fetch(i)] for i in range(100)] + ["done"])
    agent = Agent(model, cwd=tmp_path, tools=[fetch_tool(6_000)], context_window=12_000, max_turns=120)
    agent.hooks.add("PreCompact", lambda e: HookOutcome(decision="deny", reason="the person wants the full history"))
    notices: list[str] = []
    agent.on_event(lambda e: notices.append(e.text) if isinstance(e, NoticeEvent) else None)
    result = agent.run("go")

    assert result.stop_reason == "end_turn"  # clearing alone carried the run
    assert model.compactions == [] and agent.context_manager.compactions == 0
    assert any("not compacted: a PreCompact hook blocked it: the person wants the full history" in n for n in notices)
    assert agent.messages[0]["content"][0]["text"] == "go"
    before = list(agent.messages)
    assert agent.context_manager.compact_now() is False
    assert agent.messages == before and "the person wants the full history" in agent.context_manager.last_refusal


def test_a_failed_summary_leaves_the_history_as_it_was(tmp_path):
    class NoSummary(ScriptedModel):
        async def stream(self, request):
            if request.purpose == "compaction":
                raise ModelError("overloaded", kind="overloaded")
            async for event in super().stream(request):
                yield event

    model = NoSummary(["a", "b"])
    agent = Agent(model, cwd=tmp_path)
    agent.run("one")
    agent.run("two")
    before = [dict(m) for m in agent.messages]
    assert agent.context_manager.compact_now() is False
    assert agent.messages == before
    assert "the summary request failed: overloaded" in agent.context_manager.last_refusal


def test_nothing_to_compact_is_said_plainly(tmp_path):
    agent = Agent(ScriptedModel([]), cwd=tmp_path)
    assert agent.context_manager.compact_now() is False
    assert agent.context_manager.last_refusal == "there are no earlier turns to summarise"


def _file_tools():
    from ipy_agent.tools import builtin_tools

    return [t for t in builtin_tools() if t.name in ("Read", "Edit")]


class _OpenNotebook:
    """The bridge's part the live-notebook tools use, answering from a list of cells in memory."""

    connected = True
    shell = None

    def __init__(self, path):
        self.path = path
        self.display_path = path.name
        self.cells = [
            {"id": f"c{i}", "cell_type": "code", "source": f"x = {i}", "outputs": [], "execution_count": None}
            for i in range(3)
        ]

    def is_open_notebook(self, path) -> bool:
        return str(path) == str(self.path)

    async def request(self, op, timeout=30.0, **args):
        listing = [{**c, "index": i} for i, c in enumerate(self.cells)]
        if op in ("list_cells", "read_cells"):
            wanted = args.get("cell_ids")
            return {"cells": [c for c in listing if wanted is None or c["id"] in wanted], "dirty": False}
        if op == "replace_source":
            i = next(i for i, c in enumerate(self.cells) if c["id"] == args["cell_id"])
            self.cells[i] = {**self.cells[i], "source": args["source"]}
            return {"cell": {**self.cells[i], "index": i}}
        return {}

    async def list_cells(self):
        return (await self.request("list_cells"))["cells"]

    async def read_cells(self, cell_ids=None):
        return (await self.request("read_cells", cell_ids=cell_ids))["cells"]

    async def scroll_to(self, cell_id):
        return None

    async def agent_metadata(self):
        return {}


def test_clearing_a_notebookread_result_forgets_the_cells_it_read(tmp_path):
    from ipy_agent.tools.notebook.edit import NotebookEditTool
    from ipy_agent.tools.notebook.read import NotebookReadTool

    nb = _OpenNotebook(tmp_path / "open.ipynb")
    edit = {"cell_id": "c1", "new_source": "x = 10"}
    turns: list[Any] = [[use("NotebookRead", "n1")]]
    turns += [[fetch(i)] for i in range(8)]
    turns += [[use("NotebookEdit", "e1", notebook_path="open.ipynb", **edit)]]
    turns += [
        [use("NotebookRead", "n2", cell_ids=["c1"])],
        [use("NotebookEdit", "e2", notebook_path="open.ipynb", **edit)],
    ]
    model = ScriptedModel([*turns, "done"])
    agent = Agent(
        model,
        cwd=tmp_path,
        tools=[NotebookReadTool(), NotebookEditTool(), fetch_tool(6_000)],
        context_window=14_000,
        permission_mode="acceptEdits",
        notebook=nb,
        max_turns=20,
    )
    agent.run("go")
    texts = {i: (result_text(b), b.get("is_error")) for i, b in all_results(agent.messages).items()}
    assert "Call NotebookRead again if you need what it showed" in texts["n1"][0]
    assert texts["e1"][1] and "has not been read yet" in texts["e1"][0]  # its read was cleared away
    assert not texts["e2"][1] and nb.cells[1]["source"] == "x = 10"  # read again: the edit goes
