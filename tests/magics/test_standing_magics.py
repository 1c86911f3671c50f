"""`%agent_instructions`, `%agent_skills`, `%agent --no-instructions` and the instructions' slice
of `%agent_context`, on a plain InteractiveShell (no kernel: the notebook is a file on disk)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from IPython.core.error import UsageError

from ipy_agent import ScriptedModel
from ipy_agent.notebook.bridge import NotebookBridge
from tests.support.tools import write_tree


@pytest.fixture
def project(tmp_path: Path) -> Path:
    write_tree(
        tmp_path,
        {
            ".git/HEAD": "ref: refs/heads/main\n",
            "AGENTS.md": "Use polars, not pandas.\n",
            "CLAUDE.md": "Never rerun the training cell.\n",
            ".claude/skills/house-plot/SKILL.md": "---\nname: house-plot\ndescription: Plot in the house style.\n---\nUse blue.\n",
            ".claude/skills/broken/SKILL.md": "no front matter\n",
        },
    )
    return tmp_path


def test_agent_instructions_lists_each_source_in_order_with_its_size(shell, project: Path, capsys):
    shell.run_line_magic("agent_instructions", "")
    out = capsys.readouterr().out
    assert out.startswith("Instructions the next request carries, in the order the model reads them:\n")
    assert f"  1  project   {project / 'AGENTS.md'}  24 characters\n" in out
    assert f"  2  project   {project / 'CLAUDE.md'}  31 characters\n" in out
    assert f"from {project} (the repository's root) down to {project}" in out
    assert "%agent --no-instructions skips them" in out


def test_agent_instructions_show_prints_what_the_model_reads(shell, project: Path, capsys):
    shell.run_line_magic("agent_instructions", "--show")
    out = capsys.readouterr().out
    assert out.startswith("# Instructions from the person's files")
    assert (
        f'<instructions from="project" source="{project / "AGENTS.md"}">\nUse polars, not pandas.\n</instructions>'
        in out
    )


def test_agent_instructions_says_when_there_are_none(shell, tmp_path: Path, capsys):
    shell.run_line_magic("agent_instructions", "")
    assert capsys.readouterr().out.startswith("No instructions: the next request carries none.")


def test_the_notebooks_instructions_are_set_shown_and_cleared_in_its_file(shell, magics, project: Path, capsys):
    nb = project / "q3.ipynb"
    kernelspec = {"name": "python3", "display_name": "Python 3"}
    nb.write_text(json.dumps({"cells": [], "metadata": {"kernelspec": kernelspec}, "nbformat": 4, "nbformat_minor": 5}))
    # A kernel without the JupyterLab extension: the bridge knows the notebook, no page answers.
    magics.session.bridge = NotebookBridge(session_name=str(nb), cwd=project)
    shell.run_line_magic("agent_instructions", '--notebook "Plot with the house style."')
    assert capsys.readouterr().out.startswith(f"Set the instructions in {nb} (on disk).")
    saved = json.loads(nb.read_text())["metadata"]
    assert saved == {"kernelspec": kernelspec, "ipy_agent": {"instructions": "Plot with the house style."}}
    shell.run_line_magic("agent_instructions", "--notebook")
    assert (
        capsys.readouterr().out == f"The notebook's instructions ({nb}, 26 characters):\n\nPlot with the house style.\n"
    )
    shell.run_line_magic("agent_instructions", "")
    assert f"  3  notebook  {nb} (metadata, on disk)  26 characters" in capsys.readouterr().out
    shell.run_cell_magic("agent_instructions", "--notebook", "Line one.\nLine two.\n")
    assert json.loads(nb.read_text())["metadata"]["ipy_agent"]["instructions"] == "Line one.\nLine two."
    capsys.readouterr()
    shell.run_line_magic("agent_instructions", "--notebook --clear")
    assert capsys.readouterr().out.startswith(f"Removed the instructions in {nb}")
    assert json.loads(nb.read_text())["metadata"] == {"kernelspec": kernelspec}


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("--notebook something", "there is no notebook here"),
        ("--everything", "%agent_instructions takes %agent_instructions [--show] | --notebook [TEXT | --clear]"),
        ('--notebook "unclosed', "%agent_instructions: No closing quotation"),
    ],
)
def test_agent_instructions_refuses_what_it_cannot_do_and_says_how(shell, project: Path, line: str, message: str):
    with pytest.raises(UsageError) as refused:
        shell.run_line_magic("agent_instructions", line)
    assert message in str(refused.value)


def test_agent_skills_lists_sources_and_the_malformed(shell, project: Path, capsys):
    shell.run_line_magic("agent_skills", "")
    out = capsys.readouterr().out
    assert out.startswith("4 skills:\n")
    assert "  house-plot         .claude/skills        Plot in the house style." in out
    assert "  explore-dataframe  built in              Explore a pandas or polars DataFrame" in out
    assert f"  malformed, not offered: {project / '.claude/skills/broken'}/SKILL.md: SKILL.md does not start" in out


def test_agent_skills_says_when_the_skill_tool_is_denied(shell, magics, project: Path, capsys):
    magics.deny = ["Skill"]
    shell.run_line_magic("agent_skills", "")
    assert "(the Skill tool is not offered now, so the model sees none of them)" in capsys.readouterr().out


def test_no_instructions_applies_to_its_run_only(shell, magics, project: Path):
    model = ScriptedModel(["one", "two"])
    magics.session.model_factory = lambda: model
    shell.run_line_magic("agent", "--no-instructions first")
    shell.run_line_magic("agent", "second")
    first, second = (r["system"] for r in model.requests)
    assert "Use polars" not in first and "Use polars" in second
    note = model.requests[1]["messages"][-1]["content"][0]["text"]
    assert note.startswith("[ipy_agent: the standing instructions changed since the last request: they are back on.")


def test_agent_context_shows_the_instructions_as_their_own_slice(shell, magics, project: Path, script, capsys):
    shell.run_line_magic("agent", f"--script {script('hi')} hello")
    capsys.readouterr()
    shell.run_line_magic("agent_context", "")
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if "instructions" in line and line.startswith("  i"))
    tokens = int(row.split()[2].replace(",", ""))
    assert 100 < tokens < 1_000  # the header and two short files


def test_the_kernel_cell_awaits_agent_instructions(make_shell):
    sh = make_shell(load=False)
    sh.kernel = object()
    sh.run_line_magic("load_ext", "ipy_agent")
    code = sh.transform_cell('%agent_instructions --notebook "Use polars"\n')
    assert code.startswith("await ") and "run_instructions_cell('--notebook \"Use polars\"')" in code
    cell = sh.transform_cell("%%agent_instructions --notebook\nLine one.\n")
    assert "run_instructions_cell('--notebook', 'Line one.\\n')" in cell
    assert "await" not in sh.transform_cell("%agent_instructions?\n")
    assert "await" not in sh.transform_cell("%agent_skills\n")
