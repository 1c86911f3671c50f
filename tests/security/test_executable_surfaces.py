"""Generated writes to executable surfaces: every one asks, in acceptEdits and bypassPermissions.

The paths come from the live environment of this process, not from a list in the test: every
`sys.path` entry, the environment's prefix, every module name an import would find elsewhere
(written into the project as `name.py` and `name/__init__.py`), every Jupyter data and config
directory, the IPython directory, the hooks directory git resolves (here through
`core.hooksPath`), git's config files, and the scripts the project's MCP servers run. Each is
written by Write, Edit, NotebookEdit (notebooks) and three Bash spellings, and the permission
decision (the tool's own check, then the rules and the mode) must be "ask". Only decisions are
made: nothing is written, so a hole cannot damage the environment running the test.
"""

from __future__ import annotations

import asyncio
import json
import os
import pkgutil
import shlex
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from jupyter_core.paths import jupyter_config_path, jupyter_path

from ipy_agent import Agent, ScriptedModel
from ipy_agent.mcp import load_mcp_files
from ipy_agent.permissions.decide import decide
from ipy_agent.tools.bash import BashInput, BashTool
from ipy_agent.tools.files.edit import EditInput, EditTool
from ipy_agent.tools.files.write import WriteInput, WriteTool
from ipy_agent.tools.notebook.edit import NotebookEditInput, NotebookEditTool
from tests.support.tools import write_tree

MODES = ("acceptEdits", "bypassPermissions")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = write_tree(
        tmp_path / "project",
        {
            "README.md": "hi\n",
            "src/app.py": "print(1)\n",
            "server.py": "print('mcp')\n",
            "tools/srv.py": "print('mcp')\n",
            "srvdir/main.py": "print('mcp')\n",
            ".venv/pyvenv.cfg": "home = /usr\n",
            ".venv/lib/python3/site-packages/local_dep.py": "x = 1\n",
        },
    )
    (root / ".mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "a": {"command": sys.executable, "args": ["server.py"]},
                    "b": {"command": sys.executable, "args": ["-m", "tools.srv"]},
                    "c": {"command": "uv", "args": ["--directory=srvdir", "run", "main.py"]},
                }
            }
        )
    )
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "config", "core.hooksPath", ".githooks"], check=True)
    # A project virtual environment on the kernel's path: a site directory inside the tree.
    monkeypatch.syspath_prepend(str(root / ".venv/lib/python3/site-packages"))
    return root


def _agent(project: Path, mode: str) -> Agent:
    agent = Agent(model=ScriptedModel(["done"]), cwd=project, permission_mode=mode)
    servers, warnings = load_mcp_files(project)
    assert not warnings
    agent.mcp.set_file_servers(servers)
    return agent


def _targets(project: Path) -> list[tuple[str, str]]:
    """(family, path) generated from the environment as it is."""
    out: list[tuple[str, str]] = []
    tree = str(project)
    for entry in sys.path:
        entry = os.path.abspath(entry or os.getcwd())
        if tree.startswith(entry.rstrip("/") + "/") or entry == tree:
            continue  # the working tree itself, or a folder holding it (the project's own code)
        out.append(("sys.path entry", os.path.join(entry, "zz_ipy_agent_probe.py")))
    out.append(("environment prefix", os.path.join(sys.prefix, "bin", "zz-ipy-agent-probe")))
    names = set(sys.stdlib_module_names) - {"test", "tests"}
    for entry in sys.path:
        entry = os.path.abspath(entry or os.getcwd())
        if entry != tree and os.path.isdir(entry) and not tree.startswith(entry.rstrip("/") + "/"):
            # What Python itself lists as importable there (modules, extension modules, packages).
            names |= {m.name for m in pkgutil.iter_modules([entry])}
    for name in sorted(n for n in names if not n.startswith("__") and n not in ("test", "tests")):
        out.append(("shadowing module", str(project / f"{name}.py")))
        out.append(("shadowing package", str(project / name / "__init__.py")))
    for d in jupyter_path():
        out.append(("Jupyter data", os.path.join(d, "kernels", "probe", "kernel.json")))
        out.append(("Jupyter data", os.path.join(d, "probe.ipynb")))
    for d in jupyter_config_path():
        out.append(("Jupyter config", os.path.join(d, "jupyter_server_config.py")))
    ipython = os.environ.get("IPYTHONDIR") or os.path.expanduser("~/.ipython")
    out.append(("IPython profile", os.path.join(ipython, "profile_default", "startup", "00-probe.py")))
    hooks = subprocess.run(
        ["git", "rev-parse", "--git-path", "hooks"], cwd=project, capture_output=True, text=True, check=True
    ).stdout.strip()
    out.append(("git hooks path", str(project / hooks / "pre-commit")))
    out.append(("git config", str(project / ".git" / "config")))
    out.append(("git config", os.path.expanduser("~/.gitconfig")))
    out.append(("git config", os.path.expanduser("~/.config/git/config")))
    out.append(("hook manager", str(project / ".pre-commit-config.yaml")))
    out.append(("hook manager", str(project / ".husky" / "pre-commit")))
    out.append(("hook manager", str(project / "lefthook.yml")))
    out.append(("project venv", str(project / ".venv" / "lib" / "python3" / "site-packages" / "local_dep.py")))
    out.append(("project venv", str(project / ".venv" / "bin" / "activate")))
    for script in ("server.py", "tools/srv.py", "srvdir/main.py"):
        out.append(("MCP server script", str(project / script)))
    return out


def _calls(path: str, shells: int = 3) -> list[tuple[object, object]]:
    q = shlex.quote(path)
    spellings = [f"printf 'import os' > {q}", f"cp README.md {q}", f"tee -a {q} < README.md"]
    calls: list[tuple[object, object]] = [(WriteTool(), WriteInput(file_path=path, content="import os\n"))]
    calls += [(BashTool(), BashInput(command=c)) for c in spellings[:shells]]
    if path.endswith(".py"):
        calls.append((EditTool(), EditInput(file_path=path, old_string="x", new_string="import os")))
    if path.endswith(".ipynb"):
        calls.append((NotebookEditTool(), NotebookEditInput(notebook_path=path, cell_id="cell-0", new_source="1")))
    return calls


async def _decision(agent: Agent, tool, inp) -> str:
    ctx = agent.tool_context()
    check = await tool.check_permissions(inp, ctx)
    d = decide(
        tool=tool, inp=inp, ctx=ctx, rules=agent.rules, mode=agent.permission_mode, tool_check=check, hook_decision=None
    )
    return d.behavior


@pytest.mark.parametrize("mode", MODES)
def test_every_write_to_an_executable_surface_asks(project, mode, capsys):
    agent = _agent(project, mode)
    targets = _targets(project)

    async def run() -> tuple[Counter[str], Counter[str], list[str]]:
        tried: Counter[str] = Counter()
        held: Counter[str] = Counter()
        holes: list[str] = []
        for i, (family, path) in enumerate(targets):
            # Thousands of module names: every one through Write, one in eight through a shell.
            shells = 3 if not family.startswith("shadowing") else (1 if i % 8 == 0 else 0)
            for tool, inp in _calls(path, shells):
                tried[family] += 1
                behavior = await _decision(agent, tool, inp)
                if behavior == "ask":
                    held[family] += 1
                else:
                    holes.append(f"{family}: {tool.name} {path} -> {behavior}")
        return tried, held, holes

    tried, held, holes = asyncio.run(run())
    with capsys.disabled():
        print(
            f"\n[executable surfaces, {mode}] cases tried: {sum(tried.values()):,}; "
            f"held (asked): {sum(held.values()):,}"
        )
        for family in tried:
            print(f"  {family}: {held[family]}/{tried[family]}")
        for hole in holes[:20]:
            print(f"  HOLE {hole}")
    assert not holes
    assert sum(tried.values()) > 500


@pytest.mark.parametrize("mode", MODES)
def test_ordinary_project_files_still_pass_in_these_modes(project, mode):
    agent = _agent(project, mode)
    for path in ("src/app.py", "src/new_module.py", "notes.md", "tests/test_app.py", "test/test_x.py"):
        # acceptEdits passes edits only; bypassPermissions passes the shell too.
        for tool, inp in _calls(str(project / path), shells=1 if mode == "bypassPermissions" else 0):
            assert asyncio.run(_decision(agent, tool, inp)) == "allow", (tool.name, path)
