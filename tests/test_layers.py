"""The package's shape is its architecture: each folder is one layer (or, under `tools/`, one
plug-in family), imports go one way between layers, and no modules import each other in a circle
(imports inside functions count: hiding one there only moves the cycle to run time).

The table below is the one docs/ARCHITECTURE.md draws; a test checks that the page agrees.
Every folder's `__init__` docstring names its modules in import order, and a test checks that too.
"""

from __future__ import annotations

import ast
import functools
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "ipy_agent"

# Folder -> layer, lowest first. A module may import its own layer and the layers below it.
LAYERS: dict[str, int] = {
    "base": 0,
    "history": 0,
    "notebook": 0,
    "contract": 1,
    "models": 1,
    "permissions": 2,
    "runtime": 3,
    "tools": 4,
    "mcp": 4,
    "context": 5,
    "config": 5,
    "loop": 6,
    "ui": 7,
    "magics": 7,
    "gateway": 8,
}
TOP = 8  # ipy_agent/__init__.py: the public API
# Below these layers the package is plain Python: it runs and is tested without IPython.
EDGE = 7
FRONT_END_PACKAGES = ("IPython", "ipywidgets", "ipykernel", "traitlets")
TOOL_FAMILIES_SHARED = "shared"


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """Every module `name` imports, at any depth of the file: absolute names for everything,
    modules of this package resolved to the module (not the name imported from it)."""
    is_package = path.name == "__init__.py"
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            # `from . import x` and `from .pkg import mod` import modules, not names.
            subs = {f"{target}.{a.name}" for a in node.names} & known
            out.update(subs or {target})
    return out


@functools.cache  # parsed once for all the tests below
def _graph() -> dict[str, set[str]]:
    mods = _modules()
    known = set(mods)
    return {name: _imports(name, path, known) for name, path in mods.items()}


def _folder(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def _layer(module: str) -> int | None:
    if module == "ipy_agent":
        return TOP
    folder = _folder(module)
    return LAYERS.get(folder) if folder is not None else None


def _cycles(graph: dict[str, set[str]]) -> set[tuple[str, ...]]:
    """Each strongly connected group of two or more modules, as a sorted tuple (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: set[tuple[str, ...]] = set()

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1 or v in graph.get(v, ()):
                found.add(tuple(sorted(group)))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_import_parser_sees_relative_and_nested_imports(tmp_path):
    pkg = tmp_path / "ipy_agent" / "tools"
    pkg.mkdir(parents=True)
    f = pkg / "x.py"
    f.write_text(
        "from ..runtime.tool import Tool\nfrom . import y\ndef f():\n    from .bash import tool\n    import IPython\n"
    )
    known = {"ipy_agent.tools.y", "ipy_agent.tools.bash.tool", "ipy_agent.runtime.tool"}
    assert _imports("ipy_agent.tools.x", f, known) == {
        "ipy_agent.runtime.tool",
        "ipy_agent.tools.y",
        "ipy_agent.tools.bash.tool",
        "IPython",
    }
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == {("a", "b", "c")}


def test_no_module_imports_another_in_a_circle():
    assert _cycles(_graph()) == set()


def test_every_module_lives_in_a_layer_folder():
    """No loose modules at the top: only the public face, ipy_agent/__init__.py."""
    loose = sorted(m for m in _modules() if _layer(m) is None)
    assert loose == [], f"move these into a layer folder (or add the folder to LAYERS): {loose}"
    folders = sorted(p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists())
    assert folders == sorted(LAYERS), "the package's folders and the layer table differ"


def test_layers_import_only_downwards():
    wrong = []
    for module, imported in _graph().items():
        mine = _layer(module)
        for target in imported:
            theirs = _layer(target) if target.startswith("ipy_agent") else None
            if mine is not None and theirs is not None and theirs > mine:
                wrong.append(f"{module} (layer {mine}) imports {target} (layer {theirs})")
    assert wrong == [], "\n".join(sorted(wrong))


def test_tool_families_import_only_what_they_share():
    """tools/files, tools/search, tools/notebook and tools/bash are plug-ins: none imports another;
    what two of them need lives in tools/shared."""
    wrong = []
    for module, imported in _graph().items():
        parts = module.split(".")
        if parts[:2] != ["ipy_agent", "tools"] or len(parts) < 4:
            continue
        family = parts[2]
        for target in imported:
            t = target.split(".")
            if t[:2] == ["ipy_agent", "tools"] and len(t) >= 4 and t[2] not in (family, TOOL_FAMILIES_SHARED):
                wrong.append(f"{module} imports {target}")
            if family == TOOL_FAMILIES_SHARED and t[:2] == ["ipy_agent", "tools"] and len(t) >= 4 and t[2] != family:
                wrong.append(f"{module} (shared) imports the family module {target}")
    assert wrong == [], "\n".join(sorted(wrong))


@pytest.mark.parametrize("module", sorted(m for m in _modules() if (_layer(m) or 0) < EDGE))
def test_below_the_edge_the_package_is_plain_python(module):
    """Only ui/ and magics/ meet IPython and widgets; everything below runs in any Python program."""
    bad = sorted(t for t in _graph()[module] if t.split(".")[0] in FRONT_END_PACKAGES)
    assert bad == [], f"{module} imports {bad}: keep the layers below ui/ and magics/ plain Python"


def test_the_core_runs_without_ipython_loaded():
    code = (
        "import sys, ipy_agent\n"
        "from ipy_agent import Agent, ScriptedModel, builtin_tools\n"
        "import tempfile\n"
        "a = Agent(model=ScriptedModel(['hi']), cwd=tempfile.mkdtemp())\n"
        "assert a.run('x').text == 'hi'\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('IPython', 'ipywidgets', 'anthropic', 'mcp')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_loading_the_extension_leaves_the_loop_and_the_tools_to_the_first_run():
    """`%load_ext ipy_agent` registers the magics and nothing more: the loop, the tools and the
    run's UI are imported by the first `%agent` (bench/startup.py times the load)."""
    code = (
        "import sys\n"
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "sh = InteractiveShell.instance()\n"
        "sh.run_line_magic('load_ext', 'ipy_agent')\n"
        "assert 'agent' in sh.magics_manager.magics['line']\n"
        "late = ('ipy_agent.loop.agent', 'ipy_agent.tools', 'ipy_agent.ui.run_ui', 'ipy_agent.mcp.manager', 'anthropic')\n"
        "print(sorted(m for m in late if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_no_private_name_is_imported_from_another_module():
    """A `_name` is its module's own business; a helper two modules need is made public where it
    lives, or moved to where both may import it."""
    found = []
    for name, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module != "__future__":
                found += [f"{name}: {a.name}" for a in node.names if a.name.startswith("_")]
    assert found == [], found


def _packages() -> list[Path]:
    return sorted(p.parent for p in PACKAGE.rglob("__init__.py") if p.parent != PACKAGE)


@pytest.mark.parametrize("folder", _packages(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_each_folder_names_its_modules_in_import_order(folder):
    """The folder's `__init__` docstring is its map: every module and subfolder is named in
    backticks, and a module imports only the modules named before it."""
    doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text(encoding="utf-8"))) or ""
    named = list(dict.fromkeys(re.findall(r"`(\w+)/?`", doc)))
    children = {p.stem for p in folder.glob("*.py") if p.stem != "__init__"}
    children |= {p.name for p in folder.iterdir() if (p / "__init__.py").exists()}
    missing = sorted(children - set(named))
    assert missing == [], f"{folder.relative_to(ROOT)}/__init__.py does not name {missing}"
    order = [n for n in named if n in children]
    prefix = _module_name(folder / "__init__.py")
    graph = _graph()
    wrong = []
    for i, child in enumerate(order):
        for target in graph.get(f"{prefix}.{child}", set()):
            if target.startswith(prefix + "."):
                sibling = target[len(prefix) + 1 :].split(".")[0]
                if sibling in order and order.index(sibling) > i:
                    wrong.append(f"{child} imports {sibling}, named after it")
    assert wrong == [], f"{folder.relative_to(ROOT)}/__init__.py: " + "; ".join(wrong)


def test_the_architecture_page_draws_this_table():
    """docs/ARCHITECTURE.md's layer table lists the same folders at the same layers."""
    page = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    drawn: dict[str, int] = {}
    for m in re.finditer(r"^\|\s*(\d+)\s*\|([^|]*)\|", page, flags=re.M):
        for folder in re.findall(r"`(\w+)/`", m.group(2)):
            drawn[folder] = int(m.group(1))
    assert drawn == LAYERS
    tree = re.search(r"```text\nipy_agent/\n(.*?)```", page, flags=re.S)
    assert tree is not None, "docs/ARCHITECTURE.md has no folder tree (a ```text block starting with ipy_agent/)"
    assert set(re.findall(r"^  (\w+)/", tree.group(1), flags=re.M)) == set(LAYERS)


def test_the_readme_draws_the_package_tree_by_layer():
    """README.md's Layout shows one line per folder of the package: the layer folders with the
    numbers of LAYERS, lowest first, and under them every subpackage (and no folder that is gone)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    tree = re.search(r"```text\nipy_agent/ .*?\n(.*?)```", readme, flags=re.S)
    assert tree is not None, "README.md has no package tree (a ```text block starting with ipy_agent/)"
    layers = [(m.group(1), int(m.group(2))) for m in re.finditer(r"^  (\w+)/\s+(\d+)\s", tree.group(1), flags=re.M)]
    assert dict(layers) == LAYERS
    assert [n for _, n in layers] == sorted(n for _, n in layers), "the tree lists the layers lowest first"
    drawn, path = set(), []
    for m in re.finditer(r"^( +)([\w-]+)/", tree.group(1), flags=re.M):
        depth = len(m.group(1)) // 2
        path = [*path[: depth - 1], m.group(2)]
        drawn.add("/".join(path))
    packages = {str(p.parent.relative_to(PACKAGE)) for p in PACKAGE.rglob("*/__init__.py")}
    assert sorted(packages - drawn) == [], "README.md's tree misses these folders"
    assert sorted(d for d in drawn if not (PACKAGE / d).is_dir()) == [], "README.md's tree names folders that are gone"


def test_the_glossary_points_at_modules_that_exist():
    """docs/ARCHITECTURE.md's Glossary says where each term lives; a module that moved or went
    away leaves a stale entry, so every `folder/module.py` it names exists."""
    page = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    assert "\n## Glossary\n" in page
    glossary = page.split("\n## Glossary\n", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`((?:\w+/)+\w+\.(?:py|json))", glossary))
    in_package = {n for n in named if n.split("/")[0] in LAYERS}
    assert len(in_package) > 40
    assert sorted(n for n in in_package if not (PACKAGE / n).exists()) == []


def _top_level_names(tree: ast.Module) -> tuple[list[str] | None, set[str]]:
    """The module's `__all__` (None when it has none) and the names it defines itself."""
    exported: list[str] | None = None
    defined: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [t.id for t in targets if isinstance(t, ast.Name)]
            if "__all__" in names and isinstance(node.value, ast.List | ast.Tuple):
                exported = [e.value for e in node.value.elts if isinstance(e, ast.Constant)]
            defined.update(names)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            defined.add(node.name)
    return exported, defined


@pytest.mark.parametrize("module", sorted(_modules()))
def test_every_exported_name_is_defined_where_it_is_exported(module):
    """A module's `__all__` lists what it defines, never what it imports from elsewhere: one
    import path per name. Only a folder's `__init__` may gather its modules' names as its face."""
    path = _modules()[module]
    exported, defined = _top_level_names(ast.parse(path.read_text(encoding="utf-8")))
    if exported is None:
        return
    if path.name == "__init__.py":
        imported = importlib.import_module(module)
        missing = [n for n in exported if not hasattr(imported, n)]
        assert missing == [], f"{module}.__all__ names what it does not have: {missing}"
        return
    foreign = sorted(set(exported) - defined)
    assert foreign == [], f"{module}.__all__ lists names defined elsewhere (import them from there): {foreign}"


# The modules outside tools/ that name a built-in tool in code, each with the names and why it
# needs them. Any other module asks the tool contract (contract/tool.py: a flag, a method) what
# it would otherwise know by a tool's name. Prose may name any tool: a message for the model or
# the person ("Read it first") and a rule given as an example ("'Bash(git status:*)'") are text,
# not a branch on a name.
NAMES_TOOLS: dict[str, set[str]] = {
    # The built-in 'explore' subagent type lists the tools it may use, as a person's subagent
    # type in AgentMagics.subagents does.
    "ipy_agent.loop.subagent": {"Read", "Glob", "Grep", "Bash", "NotebookRead", "Variables"},
    # A plugin's skills folders are given to the Skill tool, which finds skills afresh each call.
    "ipy_agent.loop.claude_setup": {"Skill"},
    # The notebook part of the system prompt teaches these tools and is shown only while they are
    # offered (a tool's own prompt_section would be the contract's way; not moved yet).
    "ipy_agent.loop.system_prompt": {"Variables", "NotebookRun", "NotebookEdit", "NotebookRead"},
    # A permission rule names its tool: the built-in deny rules are Read rules, and only an allow
    # rule for Read can lift one.
    "ipy_agent.permissions.rules": {"Read"},
    # Command hooks run in Bash's sandbox when the policy requires it (tools/bash/contain.py).
    "ipy_agent.config.command_hooks": {"Bash", "BashOutput", "KillShell"},
    # The Read deny rules a ToolContext matches paths against are shown as `Read(spec)`.
    "ipy_agent.contract.tool_context": {"Read"},
    # "Always accept edits to ..." is the label of an `Edit(...)` rule.
    "ipy_agent.ui.prompt_words": {"Edit"},
    # The record lists each NotebookEdit with the person's review outcome.
    "ipy_agent.ui.record": {"NotebookEdit"},
    # A cleared Read result says "Read the file again"; other tools' say "call NAME again".
    "ipy_agent.context.clearing": {"Read"},
    # %agent_skills lists what the Skill tool finds (imports the skills family).
    "ipy_agent.magics.standing": {"Skill"},
    # The notebook served over MCP offers outside agents these tools, and no shell.
    "ipy_agent.loop.mcp_serve": {"NotebookRead", "NotebookEdit", "NotebookRun", "Variables", "Read", "Grep", "Glob"},
    # The verify gate runs NotebookVerify after a run that called a tool that changes the notebook.
    "ipy_agent.loop.verify_gate": {"NotebookEdit", "NotebookRun", "NotebookVerify"},
    # %agent_verify runs NotebookVerify's code for the person (imports the notebook family).
    "ipy_agent.magics.verify": {"NotebookEdit", "NotebookRead", "NotebookRun", "NotebookVerify", "Variables"},
}


def _builtin_tool_names() -> dict[str, set[str]]:
    """Each family folder of tools/ and the names of its built-in tools, from the catalogue."""
    from ipy_agent.tools import builtin_tools

    families: dict[str, set[str]] = {}
    for tool in builtin_tools():
        families.setdefault(type(tool).__module__.split(".")[2], set()).add(tool.name)
    return families


def _tools_named(name: str, path: Path, families: dict[str, set[str]]) -> set[str]:
    """The built-in tools `name` names in code: a string that is a tool's name or starts a rule
    for it (`"Read("`), or an import of the tool's family. Docstrings are prose."""
    every = set().union(*families.values())
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    named: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            named |= {t for t in every if node.value in (t, f"{t}(")}
    for target in _graph()[name]:
        parts = target.split(".")
        if parts[:2] == ["ipy_agent", "tools"] and len(parts) >= 3:
            named |= families.get(parts[2], set())
    return named


def test_no_module_outside_tools_names_a_tool_unless_listed():
    """What a tool needs from the loop or the UI is asked through the tool contract, so no module
    outside tools/ names a built-in tool in code, save those in NAMES_TOOLS, each with its reason.
    The list is exact: a module that stops naming a tool leaves it."""
    families = _builtin_tool_names()
    assert {"Bash", "Read", "NotebookEdit", "Skill"} <= set().union(*families.values())
    found = {}
    for name, path in _modules().items():
        if name == "ipy_agent.tools" or name.startswith("ipy_agent.tools."):
            continue
        named = _tools_named(name, path, families)
        if named:
            found[name] = named
    extra = {m: sorted(n - NAMES_TOOLS.get(m, set())) for m, n in found.items() if n - NAMES_TOOLS.get(m, set())}
    stale = {m: sorted(n - found.get(m, set())) for m, n in NAMES_TOOLS.items() if n - found.get(m, set())}
    assert extra == {}, f"these modules name tools: ask the tool contract instead (or list them, with why): {extra}"
    assert stale == {}, f"NAMES_TOOLS lists what these modules no longer name: {stale}"


LONG_MODULE_LINES = 700


def long_modules() -> dict[str, int]:
    """Modules past LONG_MODULE_LINES. A module holds one concept, however many lines that takes:
    a line count does not split it (a cap did, and spread one turn over four files). The test
    run names these at its end (tests/conftest.py), a prompt to check each still holds one
    concept; it fails nothing."""
    return {
        name: n
        for name, path in _modules().items()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > LONG_MODULE_LINES
    }
