"""The names a cell's code binds, deletes and reads at the top level of the namespace, found by
walking its syntax tree with Python's scoping rules (`effects.py` puts the result together).

At the top level every binding form counts: assignments plain, augmented, annotated and starred,
`for`, `with` and `except` targets (an `except` name is unbound again when its handler ends),
the walrus operator wherever it binds there (in a comprehension, a lambda's default, an
annotation, a decorator), `match` captures (`as`, `*rest`, `**rest`), `import`, `def` and `class`.
A function, class or lambda body is a scope of its own: only the names it declares `global` and
binds in any of those forms count; its decorators, defaults and annotations run at the top.
Calls that commonly change a value in place (`df.drop(..., inplace=True)`, `items.append(x)`,
`d["k"] = v`) are noted as `may_modify`. A name no rule takes is still counted: a `Store` name
binds, a `Del` name deletes. IPython's history names (`_`, `_i`, `_N`, `Out`) are not counted.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

__all__ = ["Found", "collect"]

# Methods that change their object in place on common types (list, dict, set, DataFrame, ndarray).
_MUTATING_METHODS = frozenset(
    "append extend insert remove pop clear sort reverse update setdefault popitem add discard "
    "difference_update intersection_update symmetric_difference_update fill resize setflags put itemset "
    "fit partial_fit load_state_dict".split()
)
# Builtins whose call runs no code the cell does not show (beyond the special methods of values).
_PLAIN_BUILTINS = frozenset(
    "print len range enumerate zip sorted reversed min max sum abs round isinstance issubclass type str int "
    "float complex bool list dict set frozenset tuple repr format any all id divmod pow chr ord bin hex oct "
    "slice bytes bytearray callable".split()
)
# IPython's history names, which every run updates: not counted.
_HISTORY_NAME = re.compile(r"^(_+|_i+|_i?\d+|_ih|_oh|_dh|In|Out|__annotations__)$")


@dataclass
class Found:
    """What the walk over a cell has found so far (each kind in first-found order)."""

    binds: dict[str, None] = field(default_factory=dict)
    deletes: dict[str, None] = field(default_factory=dict)
    imports: dict[str, None] = field(default_factory=dict)
    may_modify: dict[str, None] = field(default_factory=dict)
    unseen: dict[str, None] = field(default_factory=dict)
    uses: dict[str, None] = field(default_factory=dict)
    calls: dict[str, None] = field(default_factory=dict)  # what the top-level code calls, but plain builtins

    def bind(self, name: str) -> None:
        if not _HISTORY_NAME.match(name):
            self.binds.setdefault(name, None)

    def delete(self, name: str) -> None:
        if not _HISTORY_NAME.match(name):
            self.deletes.setdefault(name, None)

    def use(self, name: str) -> None:
        if name not in self.binds:
            self.uses.setdefault(name, None)


def collect(tree: ast.Module, found: Found) -> None:
    """Walk a cell's parsed code into `found`."""
    _TopLevel(found).visit(tree)


def _names(target: ast.expr) -> Iterable[str]:
    """Names an assignment target binds (tuples, lists and starred parts included)."""
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, (ast.Tuple, ast.List)):
        for elt in target.elts:
            yield from _names(elt)
    elif isinstance(target, ast.Starred):
        yield from _names(target.value)


def _pattern_names(pattern: ast.pattern) -> Iterator[str]:
    """Names a `match` case's pattern captures: `as` names, `*rest`, `**rest`, at any depth."""
    for node in ast.walk(pattern):
        if isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            yield node.name
        elif isinstance(node, ast.MatchMapping) and node.rest:
            yield node.rest


def _root(node: ast.expr) -> str | None:
    """The variable at the root of `a.b[c].d`."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


class _TopLevel(ast.NodeVisitor):
    """Walks the cell's module: bindings at the top level, uses, and what happens in calls."""

    def __init__(self, found: Found) -> None:
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
        elif isinstance(target, ast.Starred):
            self._mutated_target(target.value)
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
        self.visit(node.annotation)
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
            self.f.bind(node.name)  # and unbound again when the handler ends
            self.f.delete(node.name)
        for stmt in node.body:
            self.visit(stmt)

    def visit_Match(self, node: ast.Match) -> None:
        self.visit(node.subject)
        for case in node.cases:
            self.visit(case.pattern)  # the values and classes it compares with are uses
            for name in _pattern_names(case.pattern):
                self.f.bind(name)
            if case.guard is not None:
                self.visit(case.guard)
            for stmt in case.body:
                self.visit(stmt)

    def visit_Delete(self, node: ast.Delete) -> None:
        for t in node.targets:
            for name in _names(t):
                self.f.delete(name)
            for part in [t] if not isinstance(t, (ast.Tuple, ast.List)) else list(t.elts):
                if isinstance(part, (ast.Subscript, ast.Attribute)):
                    root = _root(part)
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
        # Decorators, defaults, annotations, bases and keywords run here, at the top level.
        for d in node.decorator_list:
            self.visit(d)
        if isinstance(node, ast.ClassDef):
            for part in [*node.bases, *node.keywords]:
                self.visit(part)
        else:
            self._arguments(node.args)
            if node.returns is not None:
                self.visit(node.returns)
        self.f.bind(node.name)
        _Inner(self.f).body(node.body)

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _definition

    def _arguments(self, args: ast.arguments) -> None:
        for default in [*args.defaults, *args.kw_defaults]:
            if default is not None:
                self.visit(default)
        for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
            if arg is not None and arg.annotation is not None:
                self.visit(arg.annotation)

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._arguments(node.args)
        _Inner(self.f).visit(node.body)

    def _comprehension(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp) -> None:
        # Its targets are local to it; a walrus inside binds at the top level (visited).
        local = {n for gen in node.generators for n in _names(gen.target)}
        inner = Found()
        visitor = _TopLevel(inner)
        for gen in node.generators:
            visitor.visit(gen.iter)
            for cond in gen.ifs:
                visitor.visit(cond)
        for part in (node.key, node.value) if isinstance(node, ast.DictComp) else (node.elt,):
            visitor.visit(part)
        walrus = {n.target.id for n in ast.walk(node) if isinstance(n, ast.NamedExpr)}
        for name in inner.uses:
            if name not in local:
                self.f.use(name)
        for name in inner.binds:
            if name not in local or name in walrus:
                self.f.bind(name)
        for key in ("may_modify", "unseen", "deletes", "calls"):
            getattr(self.f, key).update(getattr(inner, key))

    visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = _comprehension

    # --- uses and calls ------------------------------------------------------------------
    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            self.f.use(node.id)
        elif isinstance(node.ctx, ast.Store):
            self.f.bind(node.id)  # a target no rule above took: counted, never missed
        else:
            self.f.delete(node.id)

    def visit_Call(self, node: ast.Call) -> None:
        _note_call(node, self.f)
        callee = _callee(node.func)
        if callee not in _PLAIN_BUILTINS:
            self.f.calls.setdefault(callee, None)
        self.generic_visit(node)


def _callee(func: ast.expr) -> str:
    """What a call calls, as the cell spells it: `load`, `pd.read_csv`, `….fit` (a computed object)."""
    parts: list[str] = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    parts.append(func.id if isinstance(func, ast.Name) else "…")
    return ".".join(reversed(parts))


def _note_call(node: ast.Call, found: Found) -> None:
    func = node.func
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


class _Inner(ast.NodeVisitor):
    """Inside a function, class or lambda body: only the names it declares `global` and binds
    (in any form) bind at the top level; a nested definition is a scope of its own, though its
    decorators, defaults and annotations run in this one."""

    def __init__(self, found: Found) -> None:
        self.f = found
        self.globals: set[str] = set()

    def body(self, stmts: list[ast.stmt]) -> None:
        for stmt in stmts:
            self.visit(stmt)

    def visit_Global(self, node: ast.Global) -> None:
        self.globals.update(node.names)

    def _binds(self, name: str | None, *, delete: bool = False) -> None:
        if name is not None and name in self.globals:
            (self.f.delete if delete else self.f.bind)(name)

    def visit_Name(self, node: ast.Name) -> None:
        self._binds(node.id, delete=isinstance(node.ctx, ast.Del))

    def visit_Import(self, node: ast.Import | ast.ImportFrom) -> None:
        for alias in node.names:
            self._binds(alias.asname or alias.name.split(".")[0])

    visit_ImportFrom = visit_Import

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        self._binds(node.name)
        self._binds(node.name, delete=True)
        self.generic_visit(node)

    def visit_match_case(self, node: ast.match_case) -> None:
        for name in _pattern_names(node.pattern):
            self._binds(name)
        self.generic_visit(node)

    def _definition(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        self._binds(node.name)
        for d in node.decorator_list:
            self.visit(d)
        if isinstance(node, ast.ClassDef):
            for part in [*node.bases, *node.keywords]:
                self.visit(part)
        else:
            self.visit(node.args)
            if node.returns is not None:
                self.visit(node.returns)
        _Inner(self.f).body(node.body)

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _definition

    def visit_arguments(self, node: ast.arguments) -> None:
        for default in [*node.defaults, *node.kw_defaults]:
            if default is not None:
                self.visit(default)

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self.visit(node.args)
        _Inner(self.f).visit(node.body)
