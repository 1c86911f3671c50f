"""Resource bounds and untrusted model output, each by the input that would break them."""

from __future__ import annotations

import asyncio
import json
import os
import tracemalloc
from pathlib import Path

import nbformat
import pytest
from IPython.core.error import UsageError

from ipy_agent import Agent, ScriptedModel
from ipy_agent.config.conversation_file import load_conversation
from ipy_agent.contract.tool import ToolError
from ipy_agent.history.messages import history_problems
from ipy_agent.runtime import budget as budget_mod
from ipy_agent.runtime.budget import ResultBudget
from ipy_agent.tools import builtin_tools
from ipy_agent.tools.bash import BashInput, BashTool
from ipy_agent.tools.notebook.edit import NotebookEditInput, NotebookEditTool
from ipy_agent.tools.search import ripgrep as _search
from ipy_agent.tools.search.glob_tool import GlobTool
from ipy_agent.tools.search.grep import GrepTool
from tests.support.tools import DecidedContext, tool_ctx, write_tree
from tests.support.transcript import results_of


def _ctx(cwd: Path, **kw) -> DecidedContext:
    return tool_ctx(cwd, spill_dir=cwd / "spill", **kw)


# --- FIFOs and devices ----------------------------------------------------------------------------


@pytest.mark.parametrize("tool", [GrepTool(), GlobTool()], ids=lambda t: t.name)
@pytest.mark.parametrize("kind", ["fifo", "device", "link-to-fifo"])
async def test_a_fifo_or_device_path_is_refused_without_hanging(tmp_path, tool, kind):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    path = {"fifo": str(fifo), "device": "/dev/zero", "link-to-fifo": str(tmp_path / "link")}[kind]
    if kind == "link-to-fifo":
        (tmp_path / "link").symlink_to(fifo)
    fields = {"pattern": "x", "path": path}
    inp = tool.input_model(**fields)
    message = await asyncio.wait_for(tool.validate_input(inp, _ctx(tmp_path)), 10)
    assert message and "not a regular file or directory" in message and repr(path) in message


async def test_every_ripgrep_run_has_a_timeout(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)  # ripgrep blocks opening it: only the timeout can end the run
    with pytest.raises(ToolError, match=r"did not finish within 0\.5 s"):
        await asyncio.wait_for(_search.run_rg(["x", "--", "pipe"], cwd=tmp_path, timeout_s=0.5), 20)


# --- spill files ----------------------------------------------------------------------------------


def test_a_spill_file_stops_at_its_cap(tmp_path, monkeypatch):
    monkeypatch.setattr(budget_mod, "MAX_SPILL_BYTES", 10_000)
    block = {"type": "tool_result", "tool_use_id": "t1", "content": "x" * 50_000}
    new, path = ResultBudget(tmp_path).spill(block)
    assert path is not None and path.stat().st_size < 10_200
    assert "40,000 more bytes were not saved" in path.read_text()
    assert "50,000 characters" in new["content"]  # the model is told the real size


async def test_bash_spill_file_stops_at_its_cap(tmp_path, monkeypatch):
    monkeypatch.setattr(budget_mod, "MAX_SPILL_BYTES", 300_000)
    tool = BashTool()
    ctx = _ctx(tmp_path, decided_by="person")
    out = await tool.call(BashInput(command="head -c 2000000 /dev/zero | tr '\\0' y"), ctx, ctx.decision)
    spill = Path(out.spill_path)
    assert 300_000 <= spill.stat().st_size < 300_200
    assert "1,700,000 more bytes were not saved" in spill.read_text()[-200:]


# --- NotebookEdit memory ------------------------------------------------------------------------


async def test_notebook_edit_on_a_large_notebook_stays_within_a_few_times_its_size(tmp_path):
    nb = nbformat.v4.new_notebook()
    for i in range(300):
        cell = nbformat.v4.new_code_cell(f"x = {i}\n" * 5)
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="y" * 50_000)]
        nb.cells.append(cell)
    path = tmp_path / "big.ipynb"
    nbformat.write(nb, path)
    size = path.stat().st_size
    ctx = _ctx(tmp_path, decided_by="person")
    ctx.read_state.record(path, content=path.read_bytes())
    tracemalloc.start()
    try:
        await NotebookEditTool().call(
            NotebookEditInput(notebook_path=str(path), cell_id="cell-3", new_source="print(1)"), ctx, ctx.decision
        )
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    print(
        f"\n[resource bounds] NotebookEdit on a {size / 1e6:.1f} MB notebook: peak {peak / 1e6:.1f} MB ({peak / size:.1f}x)"
    )
    assert peak < 6 * size
    assert nbformat.read(path, as_version=4).cells[3].source == "print(1)"


def _many_cells_notebook(path: Path, cells: int) -> None:
    """nbformat's own layout, written directly (nbformat.write takes seconds at this size)."""
    cell = '  {{\n   "cell_type": "code",\n   "execution_count": null,\n   "id": "c{i:07d}",\n   "metadata": {{}},\n   "outputs": [],\n   "source": [\n    "x = {i}"\n   ]\n  }}'
    body = ",\n".join(cell.format(i=i) for i in range(cells))
    meta = ' "metadata": {\n  "language_info": {\n   "name": "python"\n  }\n },\n "nbformat": 4,\n "nbformat_minor": 5\n}\n'
    path.write_text('{\n "cells": [\n' + body + "\n ],\n" + meta)


async def test_notebook_edit_of_150000_one_line_cells_stays_within_10x_its_size(tmp_path):
    # The regression: the notebook was parsed into nbformat nodes, deep-copied to validate and
    # again to write: about 40x its size and a minute. One parse, one cell spliced in, now.
    path = tmp_path / "many.ipynb"
    _many_cells_notebook(path, 150_000)
    size = path.stat().st_size
    ctx = _ctx(tmp_path, decided_by="person")
    ctx.read_state.record(path, content=path.read_bytes())
    fields = {"cell_id": "c0075000", "new_source": "print('edited')"}
    tracemalloc.start()
    try:
        await NotebookEditTool().call(NotebookEditInput(notebook_path=str(path), **fields), ctx, ctx.decision)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    print(
        f"\n[resource bounds] NotebookEdit in {size / 1e6:.1f} MB, 150,000 cells: peak {peak / 1e6:.1f} MB ({peak / size:.1f}x)"
    )
    assert peak < 10 * size
    nb = json.loads(path.read_text())
    cells = nb["cells"]
    assert len(cells) == 150_000 and cells[75_000]["source"] == ["print('edited')"]
    assert cells[0] == {
        "cell_type": "code",
        "execution_count": None,
        "id": "c0000000",
        "metadata": {},
        "outputs": [],
        "source": ["x = 0"],
    }
    nbformat.validate(nbformat.from_dict({**nb, "cells": cells[74_990:75_010]}))


# --- tool_use ids from the model ------------------------------------------------------------------


@pytest.mark.parametrize(
    "ids",
    [
        ["dup", "dup"],
        [7, "x"],
        [None, ""],
        ["../../etc/passwd", "a/b"],
        [["l"], {"d": 1}],
        ["x" * 500, "ok"],
        [True, False],
    ],
    ids=str,
)
def test_untrusted_tool_use_ids_keep_the_history_valid(tmp_path, ids):
    write_tree(tmp_path, {"a.txt": "hello\n"})
    turns = [[{"type": "tool_use", "id": i, "name": "Read", "input": {"file_path": "a.txt"}} for i in ids], "done"]
    agent = Agent(model=ScriptedModel(turns), cwd=tmp_path, tools=builtin_tools())
    result = agent.run("go")
    assert result.stop_reason == "end_turn" and history_problems(agent.messages) == []
    results = results_of(agent.messages[2])
    assert len(results) == 2 and all("hello" in r["content"] for r in results.values())
    assert all(isinstance(b["id"], str) and "/" not in b["id"] for b in agent.messages[1]["content"])


def test_a_spill_file_name_from_a_hostile_id_stays_in_the_spill_dir(tmp_path):
    budget = ResultBudget(tmp_path / "spill")
    for tid in ("../../../tmp/evil", "/etc/passwd", ".hidden", "a\x00b", "x" * 1000, "ü/..", ""):
        _, path = budget.spill({"type": "tool_result", "tool_use_id": tid, "content": "x" * 10})
        assert path is not None and path.parent == tmp_path / "spill" and not path.name.startswith(".")
        assert len(path.name) < 120
    assert len(list((tmp_path / "spill").iterdir())) == 7  # distinct ids, distinct files


# --- damaged saved conversations ------------------------------------------------------------------

_GOOD = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": [{"type": "text", "text": "hello"}]}]
_DAMAGED = {
    "message not an object": [1, 2],
    "bad role": [{"role": "system", "content": "x"}],
    "content a number": [{"role": "user", "content": 5}],
    "block not an object": [{"role": "user", "content": ["text"]}],
    "block without type": [{"role": "user", "content": [{"text": "x"}]}],
    "tool_use id a list": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": ["x"], "name": "Read", "input": {}}]},
    ],
    "tool_use input a string": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "Read", "input": "x"}]},
    ],
    "duplicate ids": [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "a", "name": "Read", "input": {}},
                {"type": "tool_use", "id": "a", "name": "Read", "input": {}},
            ],
        },
    ],
    "tool_result content a number": [
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": 3}]}
    ],
    "text not a string": [{"role": "user", "content": [{"type": "text", "text": None}]}],
}


@pytest.mark.parametrize("name", sorted(_DAMAGED))
def test_a_damaged_saved_conversation_is_refused_with_the_reason(tmp_path, name):
    path = tmp_path / "conv.json"
    path.write_text(
        json.dumps({"format": "ipy_agent.conversation", "version": 1, "messages": _DAMAGED[name], "granted": {}})
    )
    agent = Agent(model=ScriptedModel([]), cwd=tmp_path, tools=[])
    with pytest.raises(ValueError, match="is damaged"):
        load_conversation(path, agent)
    assert agent.messages == []  # nothing half-loaded


def test_resume_of_a_damaged_file_is_a_usage_error(tmp_path, monkeypatch):
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    monkeypatch.chdir(tmp_path)
    (tmp_path / "conv.json").write_text(
        json.dumps(
            {
                "format": "ipy_agent.conversation",
                "messages": [{"role": "user", "content": 5}],
                "granted": {"allow": [1, None, "Read"]},
            }
        )
    )
    InteractiveShell.clear_instance()
    config = Config()
    config.HistoryManager.enabled = False  # no sqlite history file
    shell = InteractiveShell.instance(config=config)
    try:
        shell.run_line_magic("load_ext", "ipy_agent")
        with pytest.raises(UsageError, match="message 0 has content of type int"):
            shell.run_line_magic("agent", "--resume conv.json hi")
        (tmp_path / "ok.json").write_text(
            json.dumps(
                {
                    "format": "ipy_agent.conversation",
                    "messages": _GOOD,
                    "cwd": str(tmp_path),
                    "granted": {"allow": [1, None, ["x"]]},
                }
            )
        )
        agent = Agent(model=ScriptedModel([]), cwd=tmp_path, tools=[])
        _repaired, skipped = load_conversation(tmp_path / "ok.json", agent)
        assert history_problems(agent.messages) == [] and len(agent.messages) == 2
        # The damaged grants carry no signature: none is restored, and one line says so.
        assert len(skipped) == 1 and "were not restored" in skipped[0] and agent.rules.allow == []
    finally:
        InteractiveShell.clear_instance()
