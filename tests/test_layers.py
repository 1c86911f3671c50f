"""The package's shape: imports go one way between layers, and no modules import each other in a
circle (imports inside functions count: hiding one there only moves the cycle to run time).

Layers, lowest first; a module may import its own layer and those below it:

    0  runtime, models          the tool contract, lifecycle, rules, budgets; model adapters
    1  notebook                 notebook cells as text (Read, the live-notebook bridge)
    2  tools, mcp               the built-in tools; MCP servers' tools
    3  agent, turn, turn_end,   the loop that puts model, runtime and tools together; the context
       context, system_prompt,   window it manages; settings and saved conversations it reads
       settings,                 and writes
       conversation_file
    4  ui, magics, ipy_agent    what the person sees and types; the public API

`runtime/` also imports neither IPython nor ipywidgets: it runs without a notebook.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "ipy_agent"

LAYERS: dict[str, int] = {
    "ipy_agent.base": 0,
    "ipy_agent.history": 0,
    "ipy_agent.contract": 0,
    "ipy_agent.permissions": 0,
    "ipy_agent.runtime": 0,
    "ipy_agent.models": 0,
    "ipy_agent.notebook": 1,
    "ipy_agent.tools": 2,
    "ipy_agent.mcp": 2,
    "ipy_agent.loop": 3,
    "ipy_agent.config": 3,
    "ipy_agent.context": 3,
    "ipy_agent.ui": 4,
    "ipy_agent.magics": 4,
    "ipy_agent": 4,
}
FORBIDDEN_IN_RUNTIME = ("IPython", "ipywidgets", "ipykernel", "ipy_agent.tools", "ipy_agent.loop.agent",
                        "ipy_agent.ui", "ipy_agent.magics")
# Cycles outside the Bash and rules area, left to the refactoring of agent, lifecycle, magics
# and ui; each entry is a cycle as the test reports it. Empty when there are none.
KNOWN_CYCLES: set[tuple[str, ...]] = set()


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


def _layer(module: str) -> int | None:
    best = max((p for p in LAYERS if module == p or module.startswith(p + ".")), key=len, default=None)
    return LAYERS[best] if best is not None else None


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
    f.write_text("from ..runtime.tool import Tool\nfrom . import y\ndef f():\n    from .bash import tool\n    import IPython\n")
    known = {"ipy_agent.tools.y", "ipy_agent.tools.bash.tool", "ipy_agent.runtime.tool"}
    assert _imports("ipy_agent.tools.x", f, known) == {
        "ipy_agent.runtime.tool", "ipy_agent.tools.y", "ipy_agent.tools.bash.tool", "IPython"}
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == {("a", "b", "c")}


def test_no_module_imports_another_in_a_circle():
    cycles = _cycles(_graph())
    assert cycles - KNOWN_CYCLES == set(), f"import cycles: {sorted(cycles - KNOWN_CYCLES)}"
    assert KNOWN_CYCLES - cycles == set(), f"cycles fixed since, drop them from KNOWN_CYCLES: {KNOWN_CYCLES - cycles}"


def test_every_module_has_a_layer():
    missing = sorted(m for m in _modules() if _layer(m) is None)
    assert missing == [], f"add these modules to LAYERS in {Path(__file__).name}: {missing}"


def test_layers_import_only_downwards():
    wrong = []
    for module, imported in _graph().items():
        mine = _layer(module)
        for target in imported:
            theirs = _layer(target) if target.startswith("ipy_agent") else None
            if mine is not None and theirs is not None and theirs > mine:
                wrong.append(f"{module} (layer {mine}) imports {target} (layer {theirs})")
    assert wrong == [], "\n".join(sorted(wrong))


@pytest.mark.parametrize("module", sorted(m for m in _modules() if m.startswith("ipy_agent.runtime")))
def test_runtime_runs_without_tools_or_a_notebook(module):
    imported = _graph()[module]
    bad = sorted(t for t in imported if any(t == f or t.startswith(f + ".") for f in FORBIDDEN_IN_RUNTIME))
    assert bad == [], f"{module} imports {bad}"


def test_no_private_name_is_imported_from_another_module():
    """A `_name` is its module's own business; a helper two modules need is made public where it
    lives, or moved to where both may import it."""
    found = []
    for name, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module != "__future__":
                found += [f"{name}: {a.name}" for a in node.names if a.name.startswith("_")]
    assert found == [], found
