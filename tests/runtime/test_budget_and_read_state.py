"""Result budgets (spill, preview, message limit, images, empty) and the read state."""

from __future__ import annotations

import os
import re
from pathlib import Path

from pydantic import BaseModel

from ipy_agent import Agent, ScriptedModel, build_tool
from ipy_agent.contract.read_state import ReadState
from tests.support.transcript import results_of, use


class Size(BaseModel):
    n: int
    image: bool = False


def _big(name="Big", limit=50_000, **kw):
    def call(s, ctx):
        text = "".join(f"line {i:06d} " + "x" * 60 + "\n" for i in range(s.n))
        if s.image:
            return [
                {"type": "text", "text": text},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
            ]
        return text

    return build_tool(
        name=name, input_model=Size, description="d", call=call, is_read_only=True, max_result_chars=limit, **kw
    )


def test_an_oversized_result_is_spilled_whole_with_a_preview(tmp_path):
    model = ScriptedModel([[use("Big", "t1", n=2000)], "done"])
    agent = Agent(model=model, tools=[_big()], cwd=tmp_path, spill_dir=tmp_path / "spill")
    agent.run("go")
    content = results_of(model.requests[1]["messages"][2])["t1"]["content"]
    path = Path(re.search(r"saved to: (\S+)", content).group(1))
    full = path.read_text()
    assert len(full) == 2000 * 73 and full.startswith("line 000000") and full.endswith("line 001999 " + "x" * 60 + "\n")
    assert "146,000 characters" in content
    preview = content.split("Preview (first 2.0 KB):\n", 1)[1].split("\n...\n</persisted-output>")[0]
    assert len(preview) <= 2000 and preview.endswith("x" * 60)  # cut at a line end
    assert full.startswith(preview)
    assert agent.trace[0].spilled_to == str(path)


def test_the_spill_file_is_readable_without_a_prompt(tmp_path):
    from ipy_agent.tools.files.read import ReadTool

    model = ScriptedModel(
        [
            [use("Big", "t1", n=2000)],
            lambda msgs: [
                use(
                    "Read",
                    "t2",
                    file_path=re.search(r"saved to: (\S+)", msgs[2]["content"][0]["content"]).group(1),
                    offset=1500,
                    limit=2,
                )
            ],
            "done",
        ]
    )
    agent = Agent(model=model, tools=[_big(), ReadTool()], cwd=tmp_path)
    agent.run("go")
    text = results_of(agent.messages[4])["t2"]["content"]
    assert "line 001499" in text and "line 001500" in text and not results_of(agent.messages[4])["t2"].get("is_error")
    assert agent.trace[1].decision.behavior == "allow"


def test_the_message_budget_spills_the_largest_results_first(tmp_path):
    blocks = [use("Big", "small", n=100), use("Big", "large", n=1800), use("Big", "mid", n=1000)]
    model = ScriptedModel([blocks, "done"])
    agent = Agent(model=model, tools=[_big(limit=10**6)], cwd=tmp_path, message_budget=150_000)
    agent.run("go")
    res = results_of(model.requests[1]["messages"][2])
    assert "<persisted-output>" in res["large"]["content"]
    assert "<persisted-output>" not in res["mid"]["content"] and "<persisted-output>" not in res["small"]["content"]
    assert agent.trace[1].spilled_to and Path(agent.trace[1].spilled_to).exists()


def test_self_limiting_tools_are_never_spilled_by_the_message_budget(tmp_path):
    blocks = [use("Reader", "r", n=1800), use("Big", "b", n=1000)]
    model = ScriptedModel([blocks, "done"])
    tools = [_big("Reader", limit=10**9), _big(limit=10**6)]
    Agent(model=model, tools=tools, cwd=tmp_path, message_budget=100_000).run("go")
    res = results_of(model.requests[1]["messages"][2])
    assert "<persisted-output>" not in res["r"]["content"] and "<persisted-output>" in res["b"]["content"]


def test_images_are_never_spilled(tmp_path):
    model = ScriptedModel([[use("Big", "t1", n=2000, image=True)], "done"])
    Agent(model=model, tools=[_big()], cwd=tmp_path).run("go")
    content = results_of(model.requests[1]["messages"][2])["t1"]["content"]
    assert content[0]["type"] == "text" and "<persisted-output>" in content[0]["text"]
    assert content[1]["type"] == "image" and content[1]["source"]["data"] == "iVBORw0KGgo="


def test_empty_results_of_every_shape_get_the_placeholder(tmp_path):
    tools = [
        build_tool(name="None_", input_model=Size, description="d", call=lambda s, c: None, is_read_only=True),
        build_tool(name="Blank", input_model=Size, description="d", call=lambda s, c: "  \n", is_read_only=True),
    ]
    model = ScriptedModel([[use("None_", "a", n=1), use("Blank", "b", n=1)], "done"])
    agent = Agent(model=model, tools=tools, cwd=tmp_path)
    agent.run("go")
    res = results_of(agent.messages[2])
    assert res["a"]["content"] == "(None_ completed with no output)"
    assert res["b"]["content"] == "(Blank completed with no output)"


# --- read state ---------------------------------------------------------------------------


def test_read_state_decides_by_content_not_mtime(tmp_path):
    f = tmp_path / "a.txt"
    f.write_bytes(b"hello\n")
    state = ReadState()
    assert "not been read" in state.check_fresh(f, f.read_bytes())
    state.record(f, content=f.read_bytes())
    os.utime(f, (1, 1))  # a touch, or a formatter that changed nothing
    assert state.check_fresh(f, f.read_bytes()) is None
    f.write_bytes(b"hello world\n")
    assert "changed since you read it" in state.check_fresh(f, f.read_bytes())
    assert "no longer exists" in state.check_fresh(f, None)
    state.record_write(f, b"mine\n", source="Edit")
    assert state.check_fresh(f, b"mine\n") is None and state.get(f).source == "Edit"


def test_a_ranged_read_of_a_huge_file_falls_back_to_size_and_mtime(tmp_path):
    f = tmp_path / "big.log"
    f.write_bytes(b"x\n" * 10)
    state = ReadState()
    st = f.stat()
    state.record(f, digest=None, size=st.st_size, mtime_ns=st.st_mtime_ns, offset=5, limit=2)
    assert state.get(f).partial
    assert state.check_fresh(f, f.read_bytes()) is None
    f.write_bytes(b"y\n" * 11)
    assert state.check_fresh(f, f.read_bytes()) is not None


def test_cells_have_their_own_keys(tmp_path):
    from ipy_agent.contract.read_state import cell_key

    state = ReadState()
    key = cell_key(tmp_path / "nb.ipynb", "abc")
    state.record(key, content="x = 1")
    assert state.check_fresh(key, "x = 1") is None
    assert "changed" in state.check_fresh(key, "x = 2", what="Cell 'abc'")


def test_a_result_the_message_budget_replaces_reaches_the_row_and_the_trace(tmp_path):
    blocks = [use("Big", "small", n=100), use("Big", "large", n=1800), use("Big", "mid", n=1000)]
    model = ScriptedModel([blocks, "done"])
    agent = Agent(model=model, tools=[_big(limit=10**6)], cwd=tmp_path, message_budget=150_000)
    seen: list[tuple[str, str, bool]] = []  # what each row event showed: id, status, spilled
    agent.on_event(
        lambda e: (
            seen.append((e.record.tool_use_id, e.record.status, bool(e.record.spilled_to)))
            if getattr(e, "kind", "") == "call"
            else None
        )
    )
    agent.run("go")
    large = agent.trace[1]
    sent = results_of(model.requests[1]["messages"][2])["large"]
    assert large.result == sent and "<persisted-output>" in sent["content"]
    assert large.stage("message_budget").outcome == "spilled" and large.spilled_to
    # The row heard of it: after the call was done, one more event showed the spilled result.
    events = [s for s in seen if s[0] == "large"]
    assert events[-1] == ("large", "done", True) and ("large", "done", False) in events


def test_the_terminal_prints_one_row_per_call_when_the_message_budget_spills(tmp_path):
    from rich.console import Console

    from ipy_agent.ui.text import TextRenderer

    console = Console(record=True, width=200, force_terminal=False)
    blocks = [use("Big", "small", n=100), use("Big", "large", n=1800)]
    agent = Agent(
        model=ScriptedModel([blocks, "done"]), tools=[_big(limit=10**6)], cwd=tmp_path, message_budget=100_000
    )
    agent.on_event(TextRenderer(console))
    agent.run("go")
    rows = [line for line in console.export_text().splitlines() if line.strip().startswith("✓ Big")]
    assert len(rows) == 2 and agent.trace[1].stage("message_budget") is not None


def test_a_file_read_in_a_range_is_judged_by_a_stamp_that_touch_r_cannot_restore(tmp_path):
    from ipy_agent.contract.read_state import file_stamp

    f = tmp_path / "big.log"
    f.write_bytes(b"x\n" * 10)
    state = ReadState()
    st = f.stat()
    state.record(f, stamp=file_stamp(st), size=st.st_size, mtime_ns=st.st_mtime_ns, offset=5, limit=2)
    assert state.get(f).content_hash is None  # nothing hashed: one stat, whatever the size
    assert state.check_fresh(f, f.read_bytes()) is None
    f.write_bytes(b"y\n" * 10)  # same size ...
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))  # ... and the old mtime, as `touch -r` would
    assert "changed since you read it" in state.check_fresh(f, f.read_bytes())
