"""The kernel's variables, described without running any of the person's code.

`repr()`, `len()` or even `isinstance()` can call methods a class defines (`__repr__`,
`__len__`, a `__class__` property), and those may be slow, print, change state or hang. Looking
at a variable must never do that. So a value is described from its type (found with `type()`,
which no class can override) by rules for types whose code is known: the builtins, through the
builtin type's own slot (`list.__len__(v)`, not `len(v)`, so a subclass's override is not
called), and exact numpy arrays and pandas DataFrames / Series, whose attributes are library
code. Anything else gets its type's name and nothing more.
"""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass
from typing import Any

__all__ = ["VariableInfo", "describe_namespace", "describe_value"]

STRING_START = 80
MAX_COLUMNS = 20
MAX_ITEMS = 200

_HIDDEN = {"In", "Out", "get_ipython", "exit", "quit", "open"}


@dataclass(frozen=True, kw_only=True)
class VariableInfo:
    name: str
    type: str
    summary: str


def _type_name(t: type) -> str:
    # Read through `type`'s own descriptors: a metaclass could define a `__name__` property.
    module = type.__dict__["__module__"].__get__(t)
    name = type.__dict__["__qualname__"].__get__(t)
    return name if module in ("builtins", "__main__", None) else f"{module}.{name}"  # __main__: the person's cells


def _exact(t: type, module: str, name: str) -> bool:
    """`t` is exactly this library class (a subclass could override what is read)."""
    mod = sys.modules.get(module)
    return mod is not None and t is getattr(mod, name, None)


def describe_value(value: Any) -> tuple[str, str]:
    """(type name, summary) of a value, from its type alone."""
    t = type(value)
    name = _type_name(t)
    if t is int and int.bit_length(value) > 128:  # repr of a huge int is slow, or refused past 4300 digits
        return name, f"an integer of {int.bit_length(value):,} bits"
    if t in (int, float, complex, bool) or value is None:
        return name, repr(value)[:STRING_START]  # exact builtin types: their own repr
    if t is str:
        text = str.__repr__(value[:STRING_START])
        more = f"… ({str.__len__(value):,} characters)" if str.__len__(value) > STRING_START else ""
        return name, text + more
    if t in (bytes, bytearray):
        return name, f"{t.__len__(value):,} bytes"
    if t in (list, tuple, set, frozenset, dict):
        return name, f"{t.__len__(value):,} items"
    if t is range:
        return name, range.__repr__(value)
    if issubclass(t, (list, tuple, set, frozenset, dict, str, bytes)):
        base = next(b for b in t.__mro__ if b in (list, tuple, set, frozenset, dict, str, bytes))
        return name, f"subclass of {base.__name__}, {base.__len__(value):,} items (its own methods not called)"
    if t is types.ModuleType:
        return "module", str(object.__getattribute__(value, "__dict__").get("__name__", "?"))
    if t in (types.FunctionType, types.BuiltinFunctionType, types.MethodType):
        return "function", str(getattr(value, "__qualname__", "?"))
    if issubclass(t, type):  # a class (issubclass reads the MRO; isinstance could call a `__class__` property)
        return "class", _type_name(value)
    if _exact(t, "numpy", "ndarray"):
        return name, f"shape {value.shape}, dtype {value.dtype}"
    if _exact(t, "pandas", "DataFrame"):
        cols = [f"{_label(c)}: {d}" for c, d in list(value.dtypes.items())[:MAX_COLUMNS]]
        more = f", … ({value.shape[1]} columns)" if value.shape[1] > MAX_COLUMNS else ""
        return "pandas.DataFrame", f"shape {value.shape}, columns [{', '.join(cols)}{more}]"
    if _exact(t, "pandas", "Series"):
        return "pandas.Series", f"length {value.shape[0]:,}, dtype {value.dtype}, name {_label(value.name)}"
    return name, "(not described: no code of this type is run to look at it)"


def _label(label: Any) -> str:
    t = type(label)
    if t in (str, int, float, bool) or label is None:
        return repr(label)  # exact builtin types
    return f"<{_type_name(t)}>"


def describe_namespace(
    shell: Any, *, names: list[str] | None = None, include_private: bool = False
) -> list[VariableInfo]:
    """The person's variables: what they defined, not IPython's machinery."""
    ns = shell.user_ns
    hidden = getattr(shell, "user_ns_hidden", {})
    chosen = names if names is not None else list(ns)
    found: list[VariableInfo] = []
    for key in chosen:
        if key not in ns:
            continue
        if names is None:
            if key in _HIDDEN or (key in hidden and hidden[key] is ns[key]):
                continue
            if key.startswith("_") and not include_private:
                continue
        type_name, summary = describe_value(ns[key])
        if names is None and type_name == "module":
            continue
        found.append(VariableInfo(name=key, type=type_name, summary=summary))
        if len(found) >= MAX_ITEMS:
            break
    return found
