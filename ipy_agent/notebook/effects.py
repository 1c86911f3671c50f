"""What running a cell's code can change, found statically: nothing runs to find it.

`cell_effects(source)` parses the cell with `ast` and collects the names the run binds at the
top level of the namespace (every binding form: assignments plain, augmented, annotated and
starred, `for`, `with` and `except` targets, the walrus operator wherever it binds at the top
(a comprehension's included), `match` captures (`as`, `*rest`, `**rest`), `import`, `def` and
`class`, and names a function or class body declares `global` and binds in any of these ways),
the names it deletes, the modules it imports, and calls that commonly change a value in place
(`df.drop(..., inplace=True)`, `items.append(x)`, `d["k"] = v`).

The claim fails closed. What a parse cannot see is said, never guessed, and the summary then
says "effects not visible": anything that reaches the namespace other than by a name
(`get_ipython()`, `globals()`, `locals()`, `vars()`, `.user_ns`, `sys.modules`, `__main__`,
`builtins`, frames and their `f_globals`, `setattr`/`delattr`, `exec`/`eval`/`compile`), a line
magic, a `!` line, a cell magic whose arguments or body it cannot read, `from x import *`, and
any node of Python's syntax this module does not know (a newer Python's). `reach_through_values`
adds what only the kernel's values show: a name that holds the shell, the namespace itself or
such a module, or a function of the notebook whose code assigns globals. Even then the
summary speaks for the cell's own code: what the functions it calls do is not followed, and
the all-clear line says so. IPython's own history names (`_`, `_i`, `_N`, `Out`), which every
run updates, are not counted.

It also collects the names the cell reads before binding them (`uses`), which is what the
staleness hints of NotebookRead compare between cells.

IPython syntax is not Python: a line starting with `%` or `!` (or `x = !cmd`, `x = %magic`) is
taken out before parsing, and noted as unseen; a cell magic (`%%time`, `%%bash`) makes the whole
cell unseen, except `%%time`, `%%timeit`, `%%prun` and `%%capture`, whose body is Python (and
whose arguments are read: `%%capture out` binds `out`; arguments it does not know are unseen).
"""

from __future__ import annotations

import ast
import builtins
import dis
import functools
import re
import sys
import types
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

__all__ = ["ALL_CLEAR", "CellEffects", "cell_effects", "effect_lines", "reach_through_values"]

# What the summary says when the cell's own code binds, deletes and modifies nothing it can see.
ALL_CLEAR = "its own code binds no variable (what the functions it calls do is not followed)"

# Methods that change their object in place on common types (list, dict, set, DataFrame, ndarray).
_MUTATING_METHODS = frozenset(
    "append extend insert remove pop clear sort reverse update setdefault popitem add discard "
    "difference_update intersection_update symmetric_difference_update fill resize setflags put itemset "
    "fit partial_fit load_state_dict".split()
)
# Names whose mere use can reach the namespace (called, or passed on, or kept under another name).
_REACH_NAMES = frozenset(
    "exec eval compile globals locals vars __import__ setattr delattr get_ipython __builtins__ builtins "
    "__builtin__ __main__ breakpoint".split()
)
# Attributes that lead to a namespace, a frame, the shell's ways to run code or bind names, or
# every live object (IPython's shell, frames, functions, modules, gc, ctypes).
_REACH_ATTRS = frozenset(
    "user_ns user_global_ns user_ns_hidden user_module f_globals f_locals f_builtins f_back __globals__ "
    "__dict__ __builtins__ _getframe currentframe get_referrers get_referents get_objects pythonapi "
    "push del_var reset_selective run_cell run_line_magic run_cell_magic run_code run_ast_nodes "
    "run_cell_async safe_execfile safe_execfile_ipy safe_run_module ex ev magic drop_by_id system "
    "system_piped system_raw getoutput __setattr__ __delattr__ __setitem__ __delitem__".split()
)
# Modules whose import reaches the namespace (the notebook's own module, the builtins).
_REACH_MODULES = frozenset({"__main__", "builtins", "__builtin__"})
# IPython's history names, which every run updates: not counted.
_HISTORY_NAME = re.compile(r"^(_+|_i+|_i?\d+|_ih|_oh|_dh|In|Out|__annotations__)$")
# Cell magics whose body is ordinary Python run in the namespace.
_PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun"})
_TIMEIT_ARG = re.compile(r"^(-[tcqo]+|-[nrp]\d*|\d+)$")
_CAPTURE_OPTION = frozenset({"--no-stderr", "--no-stdout", "--no-display"})
_LINE_MAGIC = re.compile(r"^(\s*)(?:([A-Za-z_][\w, *]*?)\s*=\s*)?([%!])(%?)([\w.]*)(.*)$")
# The syntax this module reads (Python 3.11); any other node (a newer Python's) is unseen.
_KNOWN_NODES: tuple[type[ast.AST], ...] = (
    ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Return, ast.Delete, ast.Assign,
    ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.While, ast.If, ast.With, ast.AsyncWith, ast.Match,
    ast.Raise, ast.Try, ast.TryStar, ast.Assert, ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal, ast.Expr,
    ast.Pass, ast.Break, ast.Continue, ast.BoolOp, ast.NamedExpr, ast.BinOp, ast.UnaryOp, ast.Lambda, ast.IfExp,
    ast.Dict, ast.Set, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.Await, ast.Yield,
    ast.YieldFrom, ast.Compare, ast.Call, ast.FormattedValue, ast.JoinedStr, ast.Constant, ast.Attribute,
    ast.Subscript, ast.Starred, ast.Name, ast.List, ast.Tuple, ast.Slice, ast.expr_context, ast.boolop,
    ast.operator, ast.unaryop, ast.cmpop, ast.comprehension, ast.ExceptHandler, ast.arguments, ast.arg,
    ast.keyword, ast.alias, ast.withitem, ast.match_case, ast.MatchValue, ast.MatchSingleton,
    ast.MatchSequence, ast.MatchMapping, ast.MatchClass, ast.MatchStar, ast.MatchAs, ast.MatchOr,
    ast.type_ignore,
)  # fmt: skip


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
        if not _HISTORY_NAME.match(name):
            self.binds.setdefault(name, None)

    def delete(self, name: str) -> None:
        if not _HISTORY_NAME.match(name):
            self.deletes.setdefault(name, None)

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
    except (SyntaxError, ValueError) as e:
        where = f"line {e.lineno}: {e.msg}" if isinstance(e, SyntaxError) else str(e)
        return CellEffects(syntax_error=where, unseen=tuple(found.unseen))
    _reach(tree, found)
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
        magic = lines[first].lstrip()[2:].split()
        name, args = (magic[0], magic[1:]) if magic else ("", [])
        if name not in _PYTHON_CELL_MAGICS:
            found.unseen.setdefault(f"is a %%{name} cell", None)
            return None
        if not _cell_magic_args(name, args, found):
            found.unseen.setdefault(f"is a %%{name} cell with arguments it does not know ({' '.join(args)})", None)
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


def _cell_magic_args(name: str, args: list[str], found: _Found) -> bool:
    """Whether the Python cell magic's arguments are all understood; `%%capture out` binds `out`."""
    if name == "timeit":
        return all(_TIMEIT_ARG.match(a) for a in args)
    if name == "capture":
        targets = [a for a in args if a not in _CAPTURE_OPTION]
        if len(targets) > 1 or any(not t.isidentifier() for t in targets):
            return False
        for t in targets:
            found.bind(t)
        return True
    return not args  # %%time, %%prun


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


def _reach(tree: ast.AST, found: _Found) -> None:
    """Note, at any depth, what reaches the namespace other than by a name, and syntax this
    module does not know: both make the effects unseen."""
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    for node in ast.walk(tree):
        why = None
        if not isinstance(node, _KNOWN_NODES):
            why = f"uses syntax the check does not know ({type(node).__name__})"
        elif isinstance(node, ast.Name) and node.id in _REACH_NAMES and not isinstance(node.ctx, ast.Store):
            why = f"calls {node.id}()" if id(node) in called else f"uses {node.id}"
        elif isinstance(node, ast.Attribute) and node.attr in _REACH_ATTRS:
            why = f"calls .{node.attr}()" if id(node) in called else f"uses .{node.attr}"
        elif isinstance(node, ast.Attribute) and node.attr == "modules" and id(node) not in called:
            why = "uses .modules"  # sys.modules; `model.modules()` is a call
        elif isinstance(node, ast.Call) and _reaching_call(node):
            why = f"calls {_call_name(node)}() with a name it cannot check"
        elif isinstance(node, ast.Import):
            mods = [a.name for a in node.names if a.name.split(".")[0] in _REACH_MODULES]
            why = f"imports {', '.join(mods)}" if mods else None
        elif isinstance(node, ast.ImportFrom):
            names = [a.name for a in node.names if a.name in _REACH_NAMES or a.name in _REACH_ATTRS]
            if node.module and node.module.split(".")[0] in _REACH_MODULES:
                why = f"imports from {node.module}"
            elif names:
                why = f"imports {', '.join(names)} from {node.module}"
        if why is not None:
            found.unseen.setdefault(why, None)


def _call_name(node: ast.Call) -> str:
    func = node.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else "?"


def _reaching_call(node: ast.Call) -> bool:
    """`getattr(x, name)` and `import_module(name)` reach anything unless the name is a known
    harmless constant."""
    name = _call_name(node)
    if name == "getattr":
        at = 1
    elif name == "import_module":
        at = 0
    else:
        return False
    if len(node.args) <= at:
        return True
    arg = node.args[at]
    if not isinstance(arg, ast.Constant) or not isinstance(arg.value, str):
        return True
    value = arg.value
    return value in _REACH_ATTRS or value in _REACH_NAMES or value == "modules" or value.split(".")[0] in _REACH_MODULES


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
        inner = _Found()
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
        for key in ("may_modify", "unseen", "deletes"):
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
        self.generic_visit(node)


def _note_call(node: ast.Call, found: _Found) -> None:
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

    def __init__(self, found: _Found) -> None:
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


def reach_through_values(
    effects: CellEffects, namespace: Mapping[str, object], holders: Iterable[tuple[object, str]] = ()
) -> tuple[str, ...]:
    """What the cell reaches through the values its names hold now, which a parse cannot see:
    a name that holds the namespace, `sys.modules`, the builtins, a frame, one of the `holders`
    (the shell, its module) or a method of one, or a function whose code assigns globals or
    uses what reaches the namespace (`ip = get_ipython()` in an earlier cell, `ip.push(...)`
    in this one). Only identities and types are compared, so no code of a value's class runs."""
    reach: list[tuple[object, str]] = [
        (namespace, "the notebook's namespace"),
        (sys, "the sys module"),
        (sys.modules, "sys.modules"),
        (builtins, "the builtins module"),
        (vars(builtins), "the builtins' namespace"),
        *((getattr(builtins, n), f"{n}()") for n in sorted(_REACH_NAMES) if hasattr(builtins, n)),
        *holders,
    ]
    main = sys.modules.get("__main__")
    if main is not None:
        reach.append((main, "the __main__ module"))
    out: list[str] = []
    for name in effects.uses:
        if name not in namespace or name in _REACH_NAMES:  # those are unseen already
            continue
        value = namespace[name]
        held = next((label for obj, label in reach if value is obj), None)
        if held is None and type(value) is types.MethodType:
            owner = value.__self__
            held = next((f"a method of {label}" for obj, label in reach if owner is obj), None)
        if held is None and type(value) is types.FrameType:
            held = "a frame"
        if held is not None:
            out.append(f"uses {name}, which holds {held}")
        elif type(value) is types.FunctionType and value.__globals__ is namespace:
            out.extend(f"uses {name}(), {why}" for why in _function_reach(value.__code__))
    return tuple(out)


def _function_reach(code: types.CodeType) -> list[str]:
    """Why a function's code (nested functions included) can change the namespace: the globals
    it assigns or deletes, and names in it that reach the namespace."""
    stores: dict[str, None] = {}
    reaching: dict[str, None] = {}
    todo = [code]
    while todo:
        c = todo.pop()
        for ins in dis.get_instructions(c):
            if ins.opname in ("STORE_GLOBAL", "DELETE_GLOBAL") and isinstance(ins.argval, str):
                stores.setdefault(ins.argval, None)
        for n in c.co_names:
            if n in _REACH_NAMES or n in _REACH_ATTRS or n == "modules":
                reaching.setdefault(n, None)
        todo.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    why: list[str] = []
    if stores:
        why.append(f"which assigns the globals {', '.join(stores)}")
    if reaching:
        why.append(f"whose code uses {', '.join(reaching)}")
    return why


def effect_lines(
    effects: CellEffects,
    *,
    current: dict[str, str] | None = None,
    loaded: Iterable[str] = (),
    last_run: str | None = None,
    reached: Iterable[str] = (),
) -> list[str]:
    """The effects as lines a person reads in the prompt and the model in the result.

    `current` maps names that exist now to their summary (from Variables); `loaded` are the
    modules already imported; `last_run` says how the cell's last run went ("took 2.1 s, 3
    outputs, 12,000 characters"); `reached` are `reach_through_values`'s reasons. Whatever is
    unseen comes first and says so; the all-clear line speaks only for the cell's own code."""
    current = current or {}
    unseen = [*effects.unseen, *reached]
    lines: list[str] = []
    if effects.syntax_error:
        lines.append(f"effects not visible: the cell does not parse ({effects.syntax_error})")
    if unseen:
        lines.append(f"effects not visible: it {', '.join(unseen)}")
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
    if not lines:
        lines.append(ALL_CLEAR)
    if last_run:
        lines.append(f"last run: {last_run}")
    return lines
