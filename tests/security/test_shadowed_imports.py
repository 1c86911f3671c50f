"""A project that holds `nbformat.py`, `difflib.py`... cannot get its code run by the agent's
imports: what the agent imports, when a tool first needs it, comes from where it is installed.

Each test starts a fresh Python in a project directory full of such modules (each one leaves a
marker file when it is imported), with that directory first on `sys.path` as in a kernel, and
runs tools that import lazily. The person's own `import` of the same names still finds the
project's module: only the agent's imports are redirected.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Modules the tools import only when first needed, and some they import at start-up.
SHADOWS = ["nbformat", "difflib", "jsonschema", "fastjsonschema", "mcp", "anyio", "tree_sitter", "markdown_it", "uuid"]

RUN = textwrap.dedent(
    """
    import json, sys, os
    sys.path.insert(0, "")
    from ipy_agent import Agent, ScriptedModel
    def use(name, tid, **inp):
        return {"type": "tool_use", "id": tid, "name": name, "input": inp}
    calls = [
        use("Read", "r1", file_path="nb.ipynb"),
        use("Read", "r2", file_path="notes.txt"),
    ]
    later = [
        use("NotebookEdit", "e1", notebook_path="nb.ipynb", cell_id="cell-0", new_source="y = 2"),
        use("Edit", "e2", file_path="notes.txt", old_string="old", new_string="new"),
        use("Bash", "b1", command="ls"),
        use("Glob", "g1", pattern="*.txt"),
    ]
    agent = Agent(model=ScriptedModel([calls, later, "done"]), cwd=".", permission_mode="acceptEdits")
    agent.run("go")
    results = [b for m in agent.messages if m["role"] == "user" and isinstance(m["content"], list)
               for b in m["content"] if b.get("type") == "tool_result"]
    print(json.dumps({b["tool_use_id"]: bool(b.get("is_error")) for b in results}))
    """
)


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    for name in SHADOWS:
        (tmp_path / f"{name}.py").write_text(
            f"open({str(tmp_path / ('HIJACKED-' + name))!r}, 'w').close()\nraise ImportError('project {name}')\n"
        )
    nb = {
        "cells": [
            {
                "cell_type": "code",
                "execution_count": None,
                "id": "a1",
                "metadata": {},
                "outputs": [],
                "source": ["x = 1"],
            }
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (tmp_path / "nb.ipynb").write_text(json.dumps(nb))
    (tmp_path / "notes.txt").write_text("old\n")
    return tmp_path


def _python(cwd: Path, code: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=240)


def test_the_tools_import_installed_modules_not_the_projects(hostile):
    run = _python(hostile, RUN)
    assert run.returncode == 0, run.stderr[-3000:]
    errors = json.loads(run.stdout.strip().splitlines()[-1])
    assert errors == {"r1": False, "r2": False, "e1": False, "e2": False, "b1": False, "g1": False}, run.stderr[-2000:]
    hijacked = sorted(p.name for p in hostile.glob("HIJACKED-*"))
    print(f"\n[shadowed imports] project modules planted: {len(SHADOWS)}; imported by the agent: {len(hijacked)}")
    assert hijacked == []
    assert json.loads((hostile / "nb.ipynb").read_text())["cells"][0]["source"] == ["y = 2"]


def test_the_persons_own_imports_are_left_as_python_does_them(hostile):
    # A shadowed name the agent has not imported at start-up: the person's import of it is theirs.
    run = _python(
        hostile,
        "import sys; sys.path.insert(0, ''); import ipy_agent\n"
        f"name = next(n for n in {SHADOWS!r} if n not in sys.modules)\n"
        "print('NAME', name)\n"
        "try:\n __import__(name)\nexcept ImportError as e:\n print(e)",
    )
    name = run.stdout.split("NAME ", 1)[1].split()[0]
    assert f"project {name}" in run.stdout
    assert (hostile / f"HIJACKED-{name}").exists()
