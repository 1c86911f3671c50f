"""Rewind: back to the state just before a prompt. Files the agent edited, created and (by an
approved command) deleted; cells of the open notebook and of a notebook on disk; the
conversation and the read state; what the person changed since is kept and named; the
checkpoints' size cap drops the oldest. (Variables: tests/loop/test_rewind_variables.py, and in a
kernel tests/kernel/test_kernel_rewind.py.)"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from ipy_agent import Agent, ScriptedModel
from ipy_agent.contract.checkpoints import Checkpoints, assigned_names
from ipy_agent.ui.prompt_words import prompt_notes
from tests.support.frontend import Panel, cell, connected_bridge
from tests.support.transcript import all_results, result_text, use


def agent_for(tmp_path: Path, turns: list[object]) -> tuple[Agent, ScriptedModel]:
    model = ScriptedModel(turns)
    return Agent(model=model, cwd=tmp_path, permission_mode="bypassPermissions"), model


def live_agent(panel: Panel, cwd: Path, turns: list[Any], **options: Any) -> Agent:
    """An agent on the open notebook `panel`, answered by `turns`; every call allowed unless an
    approver is given. Made inside the test's event loop, as the bridge needs it."""
    if "approver" not in options:
        options["permission_mode"] = "bypassPermissions"
    return Agent(model=ScriptedModel(turns), cwd=cwd, notebook=connected_bridge(panel, cwd), **options)


def test_files_edited_created_and_deleted_come_back_and_the_conversation_is_cut(tmp_path: Path):
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "old.txt").write_text("keep me\n")
    agent, model = agent_for(
        tmp_path,
        [
            [use("Read", "r1", file_path="a.py")],
            "Read it.",
            [use("Edit", "e1", file_path="a.py", old_string="x = 1", new_string="x = 2")],
            [use("Write", "w1", file_path="new/b.py", content="y = 3\n")],
            [use("Bash", "b1", command="rm old.txt")],
            "Done.",
            "After the rewind.",
        ],
    )
    agent.run("read a.py")
    before = [dict(m) for m in agent.messages]
    agent.run("change things")
    assert (tmp_path / "a.py").read_text() == "x = 2\n" and (tmp_path / "new/b.py").exists()
    assert not (tmp_path / "old.txt").exists()

    report = agent.rewind()  # the last prompt: "change things"
    assert report.prompt == 2 and report.text == "change things"
    assert (tmp_path / "a.py").read_text() == "x = 1\n"
    assert not (tmp_path / "new/b.py").exists()
    assert report.files_restored == ["a.py"] and report.files_removed == ["new/b.py"]
    # What an approved shell command changed is named, not restored.
    assert any(line.startswith("old.txt") and "rm old.txt" in line for line in report.bash)
    assert "Changed by approved shell commands, not restored" in str(report)
    # The conversation is as it was before prompt 2, and the read state agrees: a.py was read
    # in prompt 1, at the content that is back now, so an edit needs no new Read.
    assert agent.messages == before and report.messages_removed > 0
    assert agent.read_state.check_fresh(tmp_path / "a.py", (tmp_path / "a.py").read_bytes()) is None
    # The model is told, before the next prompt, what was rewound.
    agent.run("go on")
    first = model.requests[-1]["messages"][-1]["content"]
    note = first[0]["text"] if isinstance(first, list) else first
    assert "rewound the conversation to before their prompt 2" in note and "a.py" in note
    assert "go on" in json.dumps(first)


def test_rewind_to_an_earlier_prompt_and_the_read_state_forgets_later_reads(tmp_path: Path):
    (tmp_path / "a.txt").write_text("one\n")
    agent, _ = agent_for(
        tmp_path,
        [
            "Hello.",
            [use("Read", "r1", file_path="a.txt")],
            [use("Edit", "e1", file_path="a.txt", old_string="one", new_string="two")],
            "Edited.",
            [use("Edit", "e2", file_path="a.txt", old_string="two", new_string="three")],
            "Edited again.",
            [use("Edit", "e3", file_path="a.txt", old_string="one", new_string="four")],
            "Refused, as it should be.",
        ],
    )
    agent.run("hi")
    agent.run("edit it")
    agent.run("edit it again")
    assert (tmp_path / "a.txt").read_text() == "three\n"
    report = agent.rewind(2)
    assert (tmp_path / "a.txt").read_text() == "one\n" and report.files_restored == ["a.txt"]
    assert len(agent.messages) == 2  # prompt 1 and its answer
    assert agent.checkpoints.list[-1].prompt == 1  # the next prompt is number 2 again
    agent.run("edit without reading")
    got = all_results(agent.messages)
    assert got["e3"].get("is_error") and "has not been read yet" in result_text(got["e3"])
    assert (tmp_path / "a.txt").read_text() == "one\n"


def test_a_file_the_person_changed_afterwards_is_kept_and_named_unless_forced(tmp_path: Path):
    (tmp_path / "a.txt").write_text("one\n")
    (tmp_path / "b.txt").write_text("bee\n")
    agent, _ = agent_for(
        tmp_path,
        [
            [use("Read", "r1", file_path="a.txt"), use("Read", "r2", file_path="b.txt")],
            [
                use("Edit", "e1", file_path="a.txt", old_string="one", new_string="two"),
                use("Edit", "e2", file_path="b.txt", old_string="bee", new_string="wasp"),
            ],
            "Done.",
        ],
    )
    agent.run("edit both")
    (tmp_path / "a.txt").write_text("two, and the person's line\n")
    report = agent.rewind()
    assert (tmp_path / "a.txt").read_text() == "two, and the person's line\n"  # kept
    assert (tmp_path / "b.txt").read_text() == "bee\n"
    assert report.kept == ["a.txt"] and report.files_restored == ["b.txt"]
    assert "Kept: changed since the agent's last change (force overrides)" in str(report)


def test_force_overrides_the_person_change(tmp_path: Path):
    (tmp_path / "a.txt").write_text("one\n")
    agent, _ = agent_for(
        tmp_path,
        [
            [use("Read", "r1", file_path="a.txt")],
            [use("Edit", "e1", file_path="a.txt", old_string="one", new_string="two")],
            "Done.",
        ],
    )
    agent.run("edit")
    (tmp_path / "a.txt").write_text("the person's\n")
    report = agent.rewind(force=True)
    assert (tmp_path / "a.txt").read_text() == "one\n" and report.files_restored == ["a.txt"] and not report.kept


def test_a_bad_prompt_number_says_which_numbers_there_are(tmp_path: Path):
    agent, _ = agent_for(tmp_path, ["Hi."])
    with pytest.raises(ValueError, match="nothing to rewind"):
        agent.rewind()
    agent.run("hello")
    with pytest.raises(ValueError, match="from 1 to 1"):
        agent.rewind(3)


def test_the_size_cap_drops_the_oldest_checkpoints_and_the_report_says_so(tmp_path: Path):
    for name in ("a", "b", "c"):
        (tmp_path / f"{name}.txt").write_text(name * 600)
    turns: list[object] = []
    for name in ("a", "b", "c"):
        turns += [
            [use("Read", f"r{name}", file_path=f"{name}.txt")],
            [use("Write", f"w{name}", file_path=f"{name}.txt", content="new\n")],
            "Done.",
        ]
    agent, _ = agent_for(tmp_path, turns)
    agent._checkpoints = Checkpoints(cap=1500, root=tmp_path / "ckpt-root")
    for name in ("a", "b", "c"):
        agent.run(f"rewrite {name}")
    store = agent.checkpoints
    assert [cp.dropped for cp in store.list] == [True, False, False] and store.dropped == 1
    assert store.size <= 1500
    report = agent.rewind(1)
    assert report.files_restored == ["b.txt", "c.txt"]
    assert (tmp_path / "b.txt").read_text() == "b" * 600 and (tmp_path / "a.txt").read_text() == "new\n"
    assert report.dropped == ["a.txt: its copy from before prompt 1 was dropped"]
    assert "Lost to the checkpoints' size cap" in str(report)
    store.close()
    assert not (tmp_path / "ckpt-root").exists() or not any((tmp_path / "ckpt-root").iterdir())


def test_cells_of_the_open_notebook_come_back_through_the_page(tmp_path: Path):
    panel = Panel(
        path="nb.ipynb",
        cells=[
            cell("import pandas as pd", cell_id="c0"),
            cell("df = load()", cell_id="c1"),
            cell("df.head()", cell_id="c2"),
        ],
    )
    (tmp_path / "nb.ipynb").write_text("{}")

    async def main() -> None:
        agent = live_agent(
            panel,
            tmp_path,
            [
                [use("NotebookRead", "r1", notebook_path="nb.ipynb")],
                [
                    use("NotebookEdit", "e1", notebook_path="nb.ipynb", cell_id="c1", new_source="df = load(2)"),
                    use(
                        "NotebookEdit",
                        "e2",
                        notebook_path="nb.ipynb",
                        cell_id="c1",
                        edit_mode="insert",
                        cell_type="markdown",
                        new_source="## Totals",
                    ),
                    use("NotebookEdit", "e3", notebook_path="nb.ipynb", cell_id="c2", edit_mode="delete"),
                ],
                "Done.",
            ],
        )
        await agent.arun("tidy the notebook")
        assert panel.sources() == ["import pandas as pd", "df = load(2)", "## Totals"]
        report = await agent.arewind()
        assert panel.sources() == ["import pandas as pd", "df = load()", "df.head()"]
        assert [c["cell_type"] for c in panel.cells] == ["code", "code", "code"]
        assert len(report.cells_restored) == 3
        assert any(line.startswith("cell 2 · df = load()") for line in report.cells_restored)

    asyncio.run(main())


def test_a_cell_the_person_typed_in_is_kept_and_named(tmp_path: Path):
    panel = Panel(path="nb.ipynb", cells=[cell("a = 1", cell_id="c0"), cell("b = 2", cell_id="c1")])
    (tmp_path / "nb.ipynb").write_text("{}")

    async def main() -> None:
        agent = live_agent(
            panel,
            tmp_path,
            [
                [use("NotebookRead", "r1", notebook_path="nb.ipynb")],
                [
                    use("NotebookEdit", "e1", notebook_path="nb.ipynb", cell_id="c0", new_source="a = 10"),
                    use("NotebookEdit", "e2", notebook_path="nb.ipynb", cell_id="c1", new_source="b = 20"),
                ],
                "Done.",
            ],
        )
        await agent.arun("scale")
        panel.cells[0]["source"] = "a = 10  # mine now"
        report = await agent.arewind()
        assert panel.sources() == ["a = 10  # mine now", "b = 2"]
        assert report.kept == ["cell 1 · a = 1 (the cell changed since the agent's edit)"]

    asyncio.run(main())


def test_cells_of_a_notebook_on_disk_come_back(tmp_path: Path):
    nb = {
        "cells": [
            {
                "cell_type": "code",
                "id": "c0",
                "metadata": {},
                "source": "x = 1",
                "outputs": [],
                "execution_count": None,
            },
            {"cell_type": "markdown", "id": "m1", "metadata": {}, "source": "# Notes"},
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path = tmp_path / "disk.ipynb"
    path.write_text(json.dumps(nb, indent=1))
    original = path.read_bytes()
    agent, _ = agent_for(
        tmp_path,
        [
            [use("Read", "r1", file_path="disk.ipynb")],
            [use("NotebookEdit", "e1", notebook_path="disk.ipynb", cell_id="c0", new_source="x = 2")],
            [use("NotebookEdit", "e2", notebook_path="disk.ipynb", cell_id="m1", edit_mode="delete")],
            "Done.",
        ],
    )
    agent.run("edit the notebook on disk")
    assert "".join(json.loads(path.read_text())["cells"][0]["source"]) == "x = 2"
    report = agent.rewind()
    assert path.read_bytes() == original and report.files_restored == ["disk.ipynb"]


def test_the_names_a_cell_can_assign():
    code = (
        "import pandas as pd, os.path\ndf = pd.read_csv('a')\nfor i in range(3):\n    total += i\n"
        "def f(q):\n    global g\n    g = q\n    local = 2\nclass C:\n    inside = 1\n[k for k in df]\n"
        "if (n := 5):\n    del old\nwith open('f') as fh:\n    pass\n"
    )
    assert assigned_names(code) == {"pd", "os", "df", "i", "total", "f", "g", "C", "n", "old", "fh"}
    assert assigned_names("%%capture out\nx = 1") == {"out", "x"}
    assert assigned_names("match p:\n    case [a, *b]:\n        pass\n[c for i in r if (c := i)]") == {"a", "b", "c"}
    assert assigned_names("def broken(:") is None


def test_the_prompt_names_cells_as_the_person_sees_them_and_says_rewind_puts_it_back(tmp_path: Path):
    panel = Panel(
        path="nb.ipynb", cells=[cell("# Sales", "markdown", cell_id="m0"), cell('df = load("sales.csv")', cell_id="c1")]
    )
    (tmp_path / "nb.ipynb").write_text("{}")
    asked: list[object] = []

    def person(request: object) -> str:
        asked.append(request)
        return "allow"

    async def main() -> None:
        agent = live_agent(
            panel,
            tmp_path,
            [
                [use("NotebookRead", "r1", notebook_path="nb.ipynb")],
                [use("NotebookEdit", "e1", notebook_path="nb.ipynb", cell_id="c1", new_source="df = load()")],
                "Done.",
            ],
            approver=person,
        )
        await agent.arun("simplify")

    asyncio.run(main())
    preview = asked[0].preview  # type: ignore[attr-defined]
    assert preview.title == 'Replace cell 2 · df = load("sales.csv") in the open notebook nb.ipynb'
    assert "nb.ipynb [cell 2]" in preview.diff
    # What the prompt warns, as the person reads it: the tool's notes and what an answer does.
    assert any("%agent_rewind puts it back" in note for note in prompt_notes(asked[0]))  # type: ignore[arg-type]


def test_rewinding_one_prompt_after_another_walks_back_without_calling_the_agents_own_writes_the_persons(
    tmp_path: Path,
):
    (tmp_path / "a.txt").write_text("one\n")
    agent, _ = agent_for(
        tmp_path,
        [
            [use("Read", "r1", file_path="a.txt")],
            [use("Edit", "e1", file_path="a.txt", old_string="one", new_string="two")],
            "Two.",
            [use("Edit", "e2", file_path="a.txt", old_string="two", new_string="three")],
            "Three.",
        ],
    )
    agent.run("two")
    agent.run("three")
    assert agent.rewind().files_restored == ["a.txt"] and (tmp_path / "a.txt").read_text() == "two\n"
    report = agent.rewind()
    assert report.files_restored == ["a.txt"] and not report.kept and (tmp_path / "a.txt").read_text() == "one\n"


def test_a_cell_replaced_then_deleted_comes_back_as_it_was_first(tmp_path: Path):
    panel = Panel(
        path="nb.ipynb", cells=[cell("a = 1", cell_id="c0"), cell("b = 2", cell_id="c1"), cell("c = 3", cell_id="c2")]
    )
    (tmp_path / "nb.ipynb").write_text("{}")

    async def main() -> None:
        agent = live_agent(
            panel,
            tmp_path,
            [
                [use("NotebookRead", "r1", notebook_path="nb.ipynb")],
                [use("NotebookEdit", "e1", notebook_path="nb.ipynb", cell_id="c1", new_source="b = 20")],
                "Replaced.",
                [use("NotebookEdit", "e2", notebook_path="nb.ipynb", cell_id="c1", edit_mode="delete")],
                "Deleted.",
            ],
        )
        await agent.arun("replace")
        await agent.arun("delete")
        assert panel.sources() == ["a = 1", "c = 3"]
        report = await agent.arewind(1)
        assert panel.sources() == ["a = 1", "b = 2", "c = 3"] and len(report.cells_restored) == 2 and not report.kept
        # The cell is back under its own id: the conversation from before still names it rightly.
        assert [c["id"] for c in panel.cells] == ["c0", "c1", "c2"]

    asyncio.run(main())


def test_a_deleted_cell_comes_back_under_its_id_in_the_file_when_the_page_is_closed(tmp_path: Path):
    # Deleted through the page, which then closed after saving: the undo is made in the file.
    panel = Panel(path="nb.ipynb", cells=[cell("a = 1", cell_id="c0"), cell("b = 2", cell_id="c1")])

    async def main() -> None:
        agent = live_agent(
            panel,
            tmp_path,
            [
                [use("NotebookRead", "r1", notebook_path="nb.ipynb")],
                [use("NotebookEdit", "e1", notebook_path="nb.ipynb", cell_id="c1", edit_mode="delete")],
                "Deleted.",
            ],
        )
        await agent.arun("delete")
        saved = {
            "cells": [
                {
                    "cell_type": "code",
                    "id": "c0",
                    "metadata": {},
                    "source": "a = 1",
                    "outputs": [],
                    "execution_count": None,
                }
            ],
            "metadata": {},
            "nbformat": 4,
            "nbformat_minor": 5,
        }
        (tmp_path / "nb.ipynb").write_text(json.dumps(saved))
        agent.notebook.front_end = None  # type: ignore[union-attr]  # the tab was closed
        report = await agent.arewind()
        cells = json.loads((tmp_path / "nb.ipynb").read_text())["cells"]
        assert [(c["id"], "".join(c["source"])) for c in cells] == [("c0", "a = 1"), ("c1", "b = 2")]
        assert report.cells_restored == ["cell 2 · b = 2 in nb.ipynb on disk (deleted cell put back)"]

    asyncio.run(main())
