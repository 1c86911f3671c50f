"""The cell-effects analysis as it was before it failed closed (issue 35), kept as the control of
tests/notebook/test_effects_fail_closed.py: the same table through this copy shows the false
claims the person approved. Not used by the package.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = ["cell_effects", "effect_lines"]

# Methods that change their object in place on common types (list, dict, set, DataFrame, ndarray).
_MUTATING_METHODS = frozenset(
    "append extend insert remove pop clear sort reverse update setdefault popitem add discard "
    "difference_update intersection_update symmetric_difference_update fill resize setflags put itemset "
    "fit partial_fit load_state_dict".split()
)
# Calls whose effects on the namespace cannot be seen from the code.
_UNSEEN_CALLS = {
    n: f"calls {n}()" for n in ("exec", "eval", "globals", "locals", "vars", "__import__", "setattr", "delattr")
}
# Cell magics whose body is ordinary Python run in the namespace.
_PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun"})
_LINE_MAGIC = re.compile(r"^(\s*)(?:([A-Za-z_][\w, *]*?)\s*=\s*)?([%!])(%?)([\w.]*)(.*)$")


@dataclass(frozen=True, kw_only=True)
class CellEffects:
    """What a cell's code can change in the namespace, and what it reads."""

    binds: tuple[str, ...] = ()  # names assigned, rebound, defined or imported (first binding order)
    deletes: tuple[str, ...] = ()
    imports: tuple[str, ...] = ()  # top-level module names imported ("pandas", "os")
    may_modify: tuple[str, ...] = ()  # "df (drop with inplace=True)", "items (append)"
    unseen: tuple[str, ...] = ()  # reasons the effects cannot all be seen ("runs %run")
    uses: tuple[str, ...] = ()  # names read that the cell does not bind before reading
    syntax_error: str | None = None

    @property
    def visible(self) -> bool:
        return not self.unseen and self.syntax_error is None


@dataclass
class _Found:
    binds: dict[str, None] = field(default_factory=dict)
    deletes: dict[str, None] = field(default_factory=dict)
    imports: dict[str, None] = field(default_factory=dict)
    may_modify: dict[str, None] = field(default_factory=dict)
    unseen: dict[str, None] = field(default_factory=dict)
    uses: dict[str, None] = field(default_factory=dict)

    def bind(self, name: str) -> None:
        self.binds.setdefault(name, None)

    def use(self, name: str) -> None:
        if name not in self.binds:
            self.uses.setdefault(name, None)


@functools.lru_cache(maxsize=2048)
def cell_effects(source: str) -> CellEffects:
    """The effects of running `source` as a cell, found by parsing it. Kept per source (the
    result is immutable): NotebookRead marks stale cells from every code cell of the notebook on
    each read, and a 500-cell notebook took 0.2-0.7 s to parse again when nothing had changed."""
    found = _Found()
    python = _strip_ipython(source, found)
    if python is None:
        return _frozen(found)
    try:
        tree = ast.parse(python)
    except SyntaxError as e:
        return CellEffects(syntax_error=f"line {e.lineno}: {e.msg}", unseen=tuple(found.unseen))
    _TopLevel(found).visit(tree)
    return _frozen(found)


def _frozen(found: _Found) -> CellEffects:
    return CellEffects(
        binds=tuple(found.binds),
        deletes=tuple(found.deletes),
        imports=tuple(found.imports),
        may_modify=tuple(found.may_modify),
        unseen=tuple(found.unseen),
        uses=tuple(found.uses),
    )


def _strip_ipython(source: str, found: _Found) -> str | None:
    """The cell as Python: magics and shell lines become `pass`, noted as unseen; None when the
    whole cell is a cell magic that is not Python."""
    lines = source.splitlines()
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is not None and lines[first].lstrip().startswith("%%"):
        magic = lines[first].lstrip()[2:].split(maxsplit=1)
        name = magic[0] if magic else ""
        if name not in _PYTHON_CELL_MAGICS:
            found.unseen.setdefault(f"is a %%{name} cell", None)
            return None
        lines[first] = ""
    out: list[str] = []
    for line in lines:
        m = _LINE_MAGIC.match(line)
        if m is None or not line.strip() or line.lstrip().startswith("#"):
            out.append(line)
            continue
        indent, target, kind, double, word, _rest = m.groups()
        found.unseen.setdefault(f"runs {kind}{double}{word}" if kind == "%" else "runs ! shell commands", None)
        out.append(f"{indent}{target} = None" if target else f"{indent}pass")
    return "\n".join(out)


def _names(target: ast.expr) -> Iterable[str]:
    """Names an assignment target binds (tuples, lists and starred parts included)."""
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, (ast.Tuple, ast.List)):
        for elt in target.elts:
            yield from _names(elt)
    elif isinstance(target, ast.Starred):
        yield from _names(target.value)


def _root(node: ast.expr) -> str | None:
    """The variable at the root of `a.b[c].d`."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


class _TopLevel(ast.NodeVisitor):
    """Walks the cell's module: bindings at the top level, uses, and what happens in calls."""

    def __init__(self, found: _Found) -> None:
        self.f = found

    # --- bindings ------------------------------------------------------------------------
    def _bind_target(self, target: ast.expr) -> None:
        for name in _names(target):
            self.f.bind(name)
        self._mutated_target(target)

    def _mutated_target(self, target: ast.expr) -> None:
        """`df["x"] = ...` or `obj.attr = ...` changes `df` / `obj` in place."""
        if isinstance(target, (ast.Tuple, ast.List)):
            for elt in target.elts:
                self._mutated_target(elt)
        elif isinstance(target, (ast.Subscript, ast.Attribute)):
            root = _root(target)
            if root is not None:
                self.f.use(root)
                what = "item assignment" if isinstance(target, ast.Subscript) else "attribute assignment"
                self.f.may_modify.setdefault(f"{root} ({what})", None)
            self.visit(target)

    def visit_Assign(self, node: ast.Assign) -> None:
        self.visit(node.value)
        for t in node.targets:
            self._bind_target(t)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)
            self._bind_target(node.target)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.visit(node.value)
        if isinstance(node.target, ast.Name):
            self.f.use(node.target.id)
        self._bind_target(node.target)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.visit(node.value)
        self.f.bind(node.target.id)

    def visit_For(self, node: ast.For | ast.AsyncFor) -> None:
        self.visit(node.iter)
        self._bind_target(node.target)
        for stmt in [*node.body, *node.orelse]:
            self.visit(stmt)

    visit_AsyncFor = visit_For

    def visit_With(self, node: ast.With | ast.AsyncWith) -> None:
        for item in node.items:
            self.visit(item.context_expr)
            if item.optional_vars is not None:
                self._bind_target(item.optional_vars)
        for stmt in node.body:
            self.visit(stmt)

    visit_AsyncWith = visit_With

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.type is not None:
            self.visit(node.type)
        if node.name:
            self.f.bind(node.name)
        for stmt in node.body:
            self.visit(stmt)

    def visit_Delete(self, node: ast.Delete) -> None:
        for t in node.targets:
            for name in _names(t):
                self.f.deletes.setdefault(name, None)
            if isinstance(t, (ast.Subscript, ast.Attribute)):
                root = _root(t)
                if root is not None:
                    self.f.use(root)
                    self.f.may_modify.setdefault(f"{root} (del of an item)", None)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.f.imports.setdefault(alias.name.split(".")[0], None)
            self.f.bind(alias.asname or alias.name.split(".")[0])

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module and not node.level:
            self.f.imports.setdefault(node.module.split(".")[0], None)
        for alias in node.names:
            if alias.name == "*":
                self.f.unseen.setdefault(f"imports * from {node.module}", None)
            else:
                self.f.bind(alias.asname or alias.name)

    def _definition(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        for d in node.decorator_list:
            self.visit(d)
        if not isinstance(node, ast.ClassDef):
            for default in [*node.args.defaults, *node.args.kw_defaults]:
                if default is not None:
                    self.visit(default)
        else:
            for base in node.bases:
                self.visit(base)
        self.f.bind(node.name)
        _Inner(self.f).body(node.body)

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _definition

    def visit_Lambda(self, node: ast.Lambda) -> None:
        _Inner(self.f).visit(node.body)

    def _comprehension(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp) -> None:
        # Its targets are local to it; a walrus inside binds at the top level (visited).
        local = {n for gen in node.generators for n in _names(gen.target)}
        inner = _Found()
        visitor = _TopLevel(inner)
        for gen in node.generators:
            visitor.visit(gen.iter)
            for cond in gen.ifs:
                visitor.visit(cond)
        for part in (node.key, node.value) if isinstance(node, ast.DictComp) else (node.elt,):
            visitor.visit(part)
        for name in inner.uses:
            if name not in local:
                self.f.use(name)
        for name in inner.binds:
            if name not in local:
                self.f.bind(name)
        for key in ("may_modify", "unseen"):
            getattr(self.f, key).update(getattr(inner, key))

    visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = _comprehension

    # --- uses and calls ------------------------------------------------------------------
    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            self.f.use(node.id)

    def visit_Call(self, node: ast.Call) -> None:
        _note_call(node, self.f)
        self.generic_visit(node)


def _note_call(node: ast.Call, found: _Found) -> None:
    func = node.func
    if isinstance(func, ast.Name) and func.id in _UNSEEN_CALLS:
        found.unseen.setdefault(_UNSEEN_CALLS[func.id], None)
    if isinstance(func, ast.Attribute):
        root = _root(func.value)
        if root is None:
            return
        inplace = any(
            k.arg == "inplace" and isinstance(k.value, ast.Constant) and k.value.value is True for k in node.keywords
        )
        if inplace:
            found.may_modify.setdefault(f"{root} ({func.attr} with inplace=True)", None)
        elif func.attr in _MUTATING_METHODS:
            found.may_modify.setdefault(f"{root} ({func.attr})", None)
        if func.attr == "run_line_magic" or func.attr == "run_cell_magic" or func.attr == "system":
            found.unseen.setdefault(f"calls {func.attr}()", None)


class _Inner(ast.NodeVisitor):
    """Inside a function or class body: only `global` names assigned there bind at the top level;
    unseen calls and in-place changes of globals count (they run when the function is called)."""

    def __init__(self, found: _Found) -> None:
        self.f = found
        self.globals: set[str] = set()

    def body(self, stmts: list[ast.stmt]) -> None:
        for stmt in stmts:
            self.visit(stmt)

    def visit_Global(self, node: ast.Global) -> None:
        self.globals.update(node.names)

    def _maybe_global(self, target: ast.expr) -> None:
        for name in _names(target):
            if name in self.globals:
                self.f.bind(name)

    def visit_Assign(self, node: ast.Assign) -> None:
        for t in node.targets:
            self._maybe_global(t)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._maybe_global(node.target)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._maybe_global(node.target)
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        for t in node.targets:
            for name in _names(t):
                if name in self.globals:
                    self.f.deletes.setdefault(name, None)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id in _UNSEEN_CALLS:
            self.f.unseen.setdefault(_UNSEEN_CALLS[func.id], None)
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        _Inner(self.f).body(node.body)  # a nested function: its own `global` declarations

    visit_AsyncFunctionDef = visit_FunctionDef


def effect_lines(
    effects: CellEffects,
    *,
    current: dict[str, str] | None = None,
    loaded: Iterable[str] = (),
    last_run: str | None = None,
) -> list[str]:
    """The effects as lines a person reads in the prompt and the model in the result.

    `current` maps names that exist now to their summary (from Variables); `loaded` are the
    modules already imported; `last_run` says how the cell's last run went ("took 2.1 s, 3
    outputs, 12,000 characters")."""
    current = current or {}
    lines: list[str] = []
    if effects.syntax_error:
        lines.append(f"effects not visible: the cell does not parse ({effects.syntax_error})")
    elif effects.unseen:
        lines.append(f"effects not visible: it {', '.join(effects.unseen)}")
    over = [n for n in effects.binds if n in current]
    new = [n for n in effects.binds if n not in current]
    lines.extend(f"overwrites {n}: {current[n]}" for n in over)
    if new:
        lines.append(f"defines {', '.join(new)}")
    for n in effects.deletes:
        lines.append(f"deletes {n}: {current[n]}" if n in current else f"deletes {n}")
    if effects.may_modify:
        lines.append(f"may modify {', '.join(effects.may_modify)}")
    loaded_set = set(loaded)
    fresh = [m for m in effects.imports if m not in loaded_set]
    if fresh:
        lines.append(f"imports modules not loaded yet: {', '.join(fresh)}")
    if last_run:
        lines.append(f"last run: {last_run}")
    if not lines:
        lines.append("changes no variable that can be seen")
    return lines
