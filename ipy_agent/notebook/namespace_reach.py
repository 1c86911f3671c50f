"""What reaches the notebook's namespace other than by a name: the guard that makes a cell's
effects "not visible" (`effects.py`) rather than a list that misses what it changes.

`unseen_reach(tree)` looks at a cell's syntax, at any depth: the names whose use reaches the
namespace (`get_ipython`, `globals`, `locals`, `vars`, `exec`, `eval`, `compile`, `setattr`,
`delattr`, `__import__`, `__builtins__`, `__main__`), attributes that lead to a namespace, a frame
or the shell's ways to run code (`.user_ns`, `.f_globals`, `.__dict__`, `._getframe`, `.push`,
`.run_cell`, `sys.modules`), `getattr` and `import_module` with a name it cannot check, imports of
`__main__` and `builtins` and of those names, and any node of syntax it does not know.

`reach_through_values(uses, namespace)` looks at what the names the cell reads hold now, which
no parse sees: the namespace itself (`ns = globals()` in an earlier cell), `sys`, `sys.modules`,
the builtins, the `__main__` module, a frame, the holders given (the shell, its module) or one of
their methods, and a function of the notebook whose code assigns globals or uses any of the
above. Only identities and exact types are compared, so no code of a value's class runs.
"""

from __future__ import annotations

import ast
import builtins
import dis
import sys
import types
from collections.abc import Iterable, Mapping

__all__ = ["reach_through_values", "unseen_reach"]

_MOST_CODES = 200  # code objects followed from one function of the notebook

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
    "system_piped system_raw getoutput __setattr__ __delattr__ __setitem__ __delitem__ __self__ "
    "__getattribute__".split()
)
# The shell reached as an attribute (`IPython.get_ipython()`, `InteractiveShell.instance()`): its
# `reset`, `push` and the like then need no name the cell shows.
_SHELL_ATTRS = frozenset(
    "get_ipython InteractiveShell ZMQInteractiveShell TerminalInteractiveShell IPKernelApp".split()
)
_REACH_ATTRS = _REACH_ATTRS | _SHELL_ATTRS
# Strings that name a way to the namespace: `attrgetter("f_globals")`, `methodcaller("push", ...)`.
_REACH_STRINGS = frozenset(
    "f_globals f_locals f_builtins user_ns user_global_ns user_module __globals__ __dict__ __builtins__ "
    "__main__ __self__ _getframe currentframe get_ipython globals locals vars exec eval builtins __import__ "
    "run_cell run_line_magic run_cell_magic del_var reset_selective".split()
)
# Modules whose import reaches the namespace (the notebook's own module, the builtins).
_REACH_MODULES = frozenset({"__main__", "builtins", "__builtin__"})
# Modules whose loaders run whatever code the data names: a pickle's `builtins.exec` runs in the
# cell's globals (`pickle.loads(b"cbuiltins\nexec\n(Vx = 2\ntR.")` rebinds x).
_UNPICKLERS = frozenset({"pickle", "_pickle", "dill", "cloudpickle", "joblib", "shelve"})
_LOADERS = frozenset({"load", "loads", "Unpickler", "open", "read_pickle"})
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


def unseen_reach(tree: ast.AST, _strings: int = 2) -> list[str]:
    """Why, at any depth of the cell's syntax tree, its effects cannot all be seen: what reaches
    the namespace other than by a name, and syntax this module does not know."""
    found: dict[str, None] = dict.fromkeys(_code_in_strings(tree) if _strings else ())
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
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in _REACH_STRINGS:
            why = f"names {node.value!r}"
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
            found.setdefault(why, None)
    for why in _unpickling(tree):
        found.setdefault(why, None)
    return list(found)


_MOST_CODE_CHARS = 20_000  # a string longer than this is not parsed as code


def _code_in_strings(tree: ast.AST) -> list[str]:
    """Strings (and sums of strings) that are Python reaching the namespace: a library may run
    them in the notebook's globals (`timeit`'s setup, a type hint `get_type_hints` evaluates, a
    target `mock.patch.dict` imports: `'import __main__; __main__.x = 2'`)."""
    out: dict[str, None] = {}
    inner = {id(n) for node in ast.walk(tree) if isinstance(node, ast.BinOp) for n in (node.left, node.right)}
    for node in ast.walk(tree):
        if id(node) in inner:
            continue  # looked at as part of the whole sum
        text = _folded(node)
        if text is None or len(text) > _MOST_CODE_CHARS or not any(w in text for w in _CODE_WORDS):
            continue
        try:
            code = ast.parse(text.strip())
        except (SyntaxError, ValueError):
            continue
        if unseen_reach(code, _strings=0):
            out[f"holds code in a string that reaches the namespace ({text.strip()[:40]!r})"] = None
    return list(out)


# Words one of which code that reaches the namespace spells.
_CODE_WORDS = tuple(sorted(_REACH_NAMES | _REACH_ATTRS | {"modules", "builtins"} | _UNPICKLERS))


def _folded(node: ast.AST) -> str | None:
    """The string a constant, a sum of constants or an f-string of constants spells; else None."""
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _folded(node.left), _folded(node.right)
        return left + right if left is not None and right is not None else None
    if isinstance(node, ast.JoinedStr):
        parts = [_folded(v) for v in node.values]
        return "".join(p for p in parts if p is not None) if all(p is not None for p in parts) else None
    return None


def _unpickling(tree: ast.AST) -> list[str]:
    """Loaders that run code the data names: `pickle.loads(...)` (under any name the cell
    imports the module as), `from pickle import loads`, and pandas' `.read_pickle`."""
    aliases = set(_UNPICKLERS)
    out: dict[str, None] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            aliases.update(a.asname or a.name.split(".")[0] for a in node.names if a.name.split(".")[0] in _UNPICKLERS)
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in _UNPICKLERS:
            for a in node.names:
                if a.name in _LOADERS or a.name == "*":
                    out[f"imports {a.name} from {node.module}, which runs code the data names"] = None
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or node.attr not in _LOADERS:
            continue
        if node.attr == "read_pickle" or (isinstance(node.value, ast.Name) and node.value.id in aliases):
            out[f"uses .{node.attr}, which runs code the data names"] = None
    return list(out)


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


def reach_through_values(
    uses: Iterable[str], namespace: Mapping[str, object], holders: Iterable[tuple[object, str]] = ()
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
    for name in uses:
        if name not in namespace or name in _REACH_NAMES:  # those are unseen already
            continue
        value = namespace[name]
        held = next((label for obj, label in reach if value is obj), None)
        if held is None and type(value) is types.MethodType:
            owner = value.__self__
            held = next((f"a method of {label}" for obj, label in reach if owner is obj), None)
        if held is None and type(value) is types.FrameType:
            held = "a frame"
        if held is None and type(value) is types.ModuleType:
            module = object.__getattribute__(value, "__dict__").get("__name__")
            if type(module) is str and module.split(".")[0] in _UNPICKLERS:
                held = f"the {module} module, whose loaders run code the data names"
        if held is not None:
            out.append(f"uses {name}, which holds {held}")
        elif type(value) is types.FunctionType and value.__globals__ is namespace:
            out.extend(f"uses {name}(), {why}" for why in _function_reach(value.__code__, namespace))
        else:
            out.extend(f"uses {name}, {why}" for why in _special_method_reach(value, namespace, reach))
    return tuple(out)


# Items of a plain container looked at for values whose class is the notebook's (`print([r])`).
_MOST_ITEMS = 100_000
_PLAIN_TYPES = frozenset({int, float, complex, bool, str, bytes, type(None)})
_CONTAINERS = frozenset({list, tuple, set, frozenset, dict})
_TYPE_DICT = type.__dict__["__dict__"]
_TYPE_MRO = type.__dict__["__mro__"]


def _special_method_reach(value: object, namespace: Mapping[str, object], reach: list[tuple[object, str]]) -> list[str]:
    """Why using `value` at all can change the namespace: Python calls its class's special
    methods without a call the cell shows (`print(r)` runs `__str__`, a last line `r` runs
    `__repr__`, `r.total` a property, `sorted(rs)` `__lt__`), so a class of the notebook whose code
    assigns globals or reaches the namespace counts, for the value and for the items of a plain
    container it holds (one level, at most `_MOST_ITEMS`). Classes are read through `type`'s own
    descriptors, so no code of a metaclass runs."""
    classes = _classes_of(value)
    if classes is None:
        return ["which holds more items than are looked at"]
    codes: list[types.CodeType] = []
    held: dict[str, None] = {}
    for c in classes:
        for attr in _TYPE_DICT.__get__(c).values():
            for f in _functions_of(attr):
                if type(f) is types.FunctionType and f.__globals__ is namespace:
                    codes.append(f.__code__)
                label = next((lbl for obj, lbl in reach if f is obj), None)
                if label is None and type(f) is types.MethodType:
                    label = next((f"a method of {lbl}" for obj, lbl in reach if f.__self__ is obj), None)
                if label is not None:
                    held.setdefault(f"whose class holds {label}", None)
    why = list(held)
    for code in codes:
        why.extend(
            f"whose class's {code.co_name} {reason.removeprefix('which ').removeprefix('whose code ')}"
            for reason in _function_reach(code, namespace)
        )
    return list(dict.fromkeys(why))


def _classes_of(value: object) -> list[type] | None:
    """The classes (MROs) of `value` and of the items of a plain container it holds, and of
    `value` itself when it is a class; None past `_MOST_ITEMS` items."""
    values = [value]
    # Exact types first (isinstance alone would read a hostile `__class__`): no code of a subclass runs.
    if type(value) is dict and isinstance(value, dict):
        items: Iterable[object] = (part for pair in value.items() for part in pair)
    elif type(value) in _CONTAINERS and isinstance(value, (list, tuple, set, frozenset)):
        items = value
    else:
        items = ()
    for n, item in enumerate(items):
        if n >= 2 * _MOST_ITEMS:
            return None
        if type(item) not in _PLAIN_TYPES:
            values.append(item)
    classes: dict[int, type] = {}
    seen: set[int] = set()  # types already looked at: a list of 100,000 values has a few
    for v in values:
        cls = type(v)
        if id(cls) in seen and not issubclass(cls, type):
            continue
        seen.add(id(cls))
        for c in (*_TYPE_MRO.__get__(cls), *(_TYPE_MRO.__get__(v) if issubclass(cls, type) else ())):
            classes.setdefault(id(c), c)
    return list(classes.values())


def _functions_of(attr: object) -> tuple[object, ...]:
    """What a class attribute runs: itself, a static or class method's function, a property's
    accessors (exact types only, so no descriptor of the class's own runs)."""
    if type(attr) in (staticmethod, classmethod):
        return (attr.__func__,)  # type: ignore[attr-defined]
    if type(attr) is property:
        return (attr.fget, attr.fset, attr.fdel)
    return (attr,)


def _function_reach(code: types.CodeType, namespace: Mapping[str, object]) -> list[str]:
    """Why a function's code can change the namespace: the globals it assigns or deletes, and
    names in it that reach the namespace; its nested functions, and the notebook's functions it
    names (at most `_MOST_CODES` code objects), included."""
    stores: dict[str, None] = {}
    reaching: dict[str, None] = {}
    todo = [code]
    seen: set[int] = set()
    while todo and len(seen) < _MOST_CODES:
        c = todo.pop()
        if id(c) in seen:
            continue
        seen.add(id(c))
        for ins in dis.get_instructions(c):
            if ins.opname in ("STORE_GLOBAL", "DELETE_GLOBAL") and isinstance(ins.argval, str):
                stores.setdefault(ins.argval, None)
        for n in c.co_names:
            if n in _REACH_NAMES or n in _REACH_ATTRS or n == "modules":
                reaching.setdefault(n, None)
        todo.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
        for n in c.co_names:  # a function of the notebook it calls: followed
            value = namespace.get(n)
            if type(value) is types.FunctionType and value.__globals__ is namespace:
                todo.append(value.__code__)
    if todo:
        reaching.setdefault("more code than is followed", None)
    why: list[str] = []
    if stores:
        why.append(f"which assigns the globals {', '.join(stores)}")
    if reaching:
        why.append(f"whose code uses {', '.join(reaching)}")
    return why
