"""Layering: the runtime, the loop, the models and the tools stay free of IPython and widgets."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "ipy_agent"
CORE = [*sorted((PKG / "runtime").glob("*.py")), *sorted((PKG / "contract").glob("*.py")),
        *sorted((PKG / "permissions").glob("*.py")), *sorted((PKG / "base").glob("*.py")), *sorted((PKG / "history").glob("*.py")), *sorted((PKG / "loop").glob("*.py")), *sorted((PKG / "models").glob("*.py")),
        *sorted((PKG / "context").glob("*.py")),
        *sorted((PKG / "tools").rglob("*.py")), *sorted((PKG / "mcp").glob("*.py"))]
FORBIDDEN = ("IPython", "ipywidgets", "ipykernel", "traitlets")


def _imports(path: Path) -> list[str]:
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
    return names


@pytest.mark.parametrize("path", CORE, ids=lambda p: str(p.relative_to(PKG)))
def test_core_module_imports_no_ipython_or_widgets(path):
    bad = [n for n in _imports(path) if n.split(".")[0] in FORBIDDEN]
    assert bad == [], f"{path.relative_to(PKG)} imports {bad}: keep the runtime plain Python"


def test_the_core_runs_without_ipython_loaded():
    code = (
        "import sys, ipy_agent\n"
        "from ipy_agent import Agent, ScriptedModel, builtin_tools\n"
        "import tempfile\n"
        "a = Agent(model=ScriptedModel(['hi']), cwd=tempfile.mkdtemp())\n"
        "assert a.run('x').text == 'hi'\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('IPython', 'ipywidgets', 'anthropic', 'mcp')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=PKG.parent, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("path", sorted((PKG / "mcp").glob("*.py")), ids=lambda p: str(p.relative_to(PKG)))
def test_mcp_sits_with_the_tools(path):
    """ipy_agent.mcp builds Tools: it may import the runtime, never the agent, the UI or the magics."""
    above = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.level == 2:
            above.append((node.module or "").split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("ipy_agent."):
            above.append(node.module.split(".")[1])
    assert not set(above) - {"runtime", "contract", "permissions", "base", "history"}, f"{path.relative_to(PKG)} imports {sorted(set(above))}"
