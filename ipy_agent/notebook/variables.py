"""The kernel's variables, described without running any of the person's code.

`repr()`, `len()` or even `isinstance()` can call methods a class defines (`__repr__`,
`__len__`, a `__class__` property), and those may be slow, print, change state or hang. Looking
at a variable must never do that. So a value is described from its type (found with `type()`,
which no class can override) by rules for types whose code is known: the builtins, through the
builtin type's own slot (`list.__len__(v)`, not `len(v)`, so a subclass's override is not
called), and exact numpy arrays and pandas DataFrames / Series, whose attributes are library
code. Anything else gets its type's name and nothing more. Types are compared by identity
(`==` could call a metaclass's `__eq__`) and read through `type`'s own descriptors (a
metaclass may define `__getattribute__`); what those give back is used only when it is an exact
`str` (a class body may set `__module__` to any object). A bound method is looked at through
`MethodType.__func__`, since its attribute lookup falls through to the function it wraps,
which may be any object with a `__getattr__`. A builtin method bound to an object
(`obj.__sizeof__`, `Cls.mro`) is named from its own name and the type it is bound to, read
through `type`'s descriptors: its `__qualname__` would ask the class for `__qualname__` the
ordinary way, through a metaclass's `__getattribute__`.

A value that looks like a credential (its name matches the secret patterns of
ipy_agent.base.secrets, or its text holds a secret of the environment, a URL with a password,
or a token of a known shape) is shown by its type and length only.
"""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass
from typing import Any, cast

from ipy_agent.base.secrets import is_secret_name, looks_like_credential

__all__ = ["VariableInfo", "describe_detail", "describe_namespace", "describe_value"]

STRING_START = 80
MAX_COLUMNS = 20
MAX_ITEMS = 200

_HIDDEN = {"In", "Out", "get_ipython", "exit", "quit", "open"}


@dataclass(frozen=True, kw_only=True)
class VariableInfo:
    name: str
    type: str
    summary: str
    detail: str | None = None  # `describe_detail`, when asked for by name


_TYPE_MODULE = type.__dict__["__module__"]
_TYPE_QUALNAME = type.__dict__["__qualname__"]


def _type_name(t: type) -> str:
    # Read through `type`'s own descriptors: a metaclass could define a `__name__` property.
    # `__module__` is whatever the class body set: compared or formatted only when an exact str.
    module = _TYPE_MODULE.__get__(t)
    name = _qualname(t)
    if type(module) is not str or str.__eq__(module, "builtins") or str.__eq__(module, "__main__"):
        return name  # __main__: the person's cells
    return f"{module}.{name}"


def _qualname(t: type) -> str:
    """A class's qualified name, read through `type`'s own descriptor (always a str)."""
    name = _TYPE_QUALNAME.__get__(t)
    return name if type(name) is str else "?"


def _exact(t: type, module: str, name: str) -> bool:
    """`t` is exactly this library class (a subclass could override what is read). The module is
    read through its own dict: a non-module put in `sys.modules` could answer `getattr`."""
    mod = sys.modules.get(module)
    if type(mod) is not types.ModuleType:
        return False
    return t is object.__getattribute__(mod, "__dict__").get(name)


def _is(t: type, *types_: type) -> bool:
    """`t` is one of `types_`, by identity (`t in (...)` compares with `==`)."""
    return any(t is x for x in types_)


_MRO = type.__dict__["__mro__"]
_QUALNAME = types.FunctionType.__dict__["__qualname__"]
_FUNC = types.MethodType.__dict__["__func__"]
_BUILTIN_NAME = types.BuiltinFunctionType.__dict__["__name__"]
_BUILTIN_SELF = types.BuiltinFunctionType.__dict__["__self__"]
_WRAPPER_NAME = types.MethodWrapperType.__dict__["__name__"]
_WRAPPER_SELF = types.MethodWrapperType.__dict__["__self__"]


def describe_value(value: Any, name: str = "") -> tuple[str, str]:
    """(type name, summary) of a value, from its type alone; `name` is the variable's name."""
    t = type(value)
    type_name = _type_name(t)
    if name and is_secret_name(name):
        return type_name, _withheld(value, t, "its name looks like a credential")
    if t is str and looks_like_credential(value[: STRING_START + 200]):
        return type_name, _withheld(value, t, "it looks like a credential")
    if t is types.ModuleType:
        module_name = object.__getattribute__(value, "__dict__").get("__name__")
        return "module", module_name if type(module_name) is str else "?"
    if _is(t, types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.MethodWrapperType):
        return "function", _function_name(value, t)
    if issubclass(t, type):  # a class (issubclass reads the MRO; isinstance could call a `__class__` property)
        return "class", _type_name(value)
    return type_name, _summary(value, t)


def _withheld(value: Any, t: type, why: str) -> str:
    """Only the size, read through the builtin base type's own slot, and why."""
    base = next((b for b in _MRO.__get__(t) if _is(b, *_SIZED)), None)
    if base is None:
        return f"value not shown: {why}"
    unit = "characters" if base is str else "bytes" if _is(base, bytes, bytearray) else "items"
    return f"{_length(base, value):,} {unit}, value not shown: {why}"


_SIZED = (str, bytes, bytearray, list, tuple, dict, set, frozenset)


def _length(base: type, value: Any) -> int:
    """`len(value)` by a builtin base type's own slot: a subclass's `__len__` is not called."""
    return int(base.__dict__["__len__"](value))


def _summary(value: Any, t: type) -> str:
    if t is int and int.bit_length(value) > 128:  # repr of a huge int is slow, or refused past 4300 digits
        return f"an integer of {int.bit_length(value):,} bits"
    if _is(t, int, float, complex, bool) or value is None:
        return repr(value)[:STRING_START]  # exact builtin types: their own repr
    if t is str:
        text = str.__repr__(value[:STRING_START])
        more = f"… ({str.__len__(value):,} characters)" if str.__len__(value) > STRING_START else ""
        return text + more
    if _is(t, bytes, bytearray):
        return f"{_length(t, value):,} bytes"
    if _is(t, list, tuple, set, frozenset, dict):
        return f"{_length(t, value):,} items"
    if t is range:
        return range.__repr__(value)
    if issubclass(t, (list, tuple, set, frozenset, dict, str, bytes)):
        base = next(b for b in _MRO.__get__(t) if _is(b, list, tuple, set, frozenset, dict, str, bytes))
        return f"subclass of {base.__name__}, {_length(base, value):,} items (its own methods not called)"
    if _exact(t, "numpy", "ndarray"):
        return f"shape {value.shape}, dtype {value.dtype}"
    if _exact(t, "pandas", "DataFrame"):
        cols = [f"{_label(c)}: {d}" for c, d in list(value.dtypes.items())[:MAX_COLUMNS]]
        more = f", … ({value.shape[1]} columns)" if value.shape[1] > MAX_COLUMNS else ""
        return f"shape {value.shape}, columns [{', '.join(cols)}{more}]"
    if _exact(t, "pandas", "Series"):
        return f"length {value.shape[0]:,}, dtype {value.dtype}, name {_label(value.name)}"
    return "(not described: no code of this type is run to look at it)"


def _function_name(value: Any, t: type) -> str:
    """A function's qualified name, read through the function type's own descriptor; a bound
    method's through the function it wraps when that is a plain function (any other callable
    would answer the attribute lookup with its own code)."""
    if t is types.MethodType:
        value = _FUNC.__get__(value)
        t = type(value)
    if t is types.FunctionType:
        return str(_QUALNAME.__get__(value))
    if t is types.BuiltinFunctionType:
        return _bound_builtin_name(_BUILTIN_NAME.__get__(value), _BUILTIN_SELF.__get__(value))
    if t is types.MethodWrapperType:
        return _bound_builtin_name(_WRAPPER_NAME.__get__(value), _WRAPPER_SELF.__get__(value))
    return f"a bound method of a {_type_name(t)} (not described)"


def _bound_builtin_name(name: object, bound_to: object) -> str:
    """`Owner.name` of a builtin function or method, from its own C-level name and the object it
    is bound to: the owner is that object when it is a class, else its type, named through
    `type`'s descriptors. (The builtin's own `__qualname__` would look the owner's name up the
    ordinary way, running a metaclass's `__getattribute__`.)"""
    text = name if type(name) is str else "?"
    owner_type = type(bound_to)
    if bound_to is None or issubclass(owner_type, types.ModuleType):
        return text  # a module-level builtin (`len`, `math.sqrt`)
    owner = cast(type, bound_to) if issubclass(owner_type, type) else owner_type
    return f"{_qualname(owner)}.{text}"


def _label(label: Any) -> str:
    t = type(label)
    if _is(t, str, int, float, bool) or label is None:
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
        if type(key) is not str or key not in ns:  # a key of another type could run code when compared
            continue
        if names is None:
            if key in _HIDDEN or (key in hidden and hidden[key] is ns[key]):
                continue
            if key.startswith("_") and not include_private:
                continue
        type_name, summary = describe_value(ns[key], key)
        if names is None and type_name == "module":
            continue
        detail = _detail(ns[key], key) if names is not None else None
        found.append(VariableInfo(name=key, type=type_name, summary=summary, detail=detail))
        if len(found) >= MAX_ITEMS:
            break
    return found


def _detail(value: Any, name: str) -> str | None:
    if type(name) is str and is_secret_name(name):
        return None
    try:
        return describe_detail(value)
    except Exception as e:  # the library's own code failed on its data: say so, never fail the tool
        return f"(no detail: {type(e).__name__} from the library)"


def describe_detail(value: Any) -> str | None:
    """More about a value of a common data type, from the library's own code on its own data:
    columns, dtypes, null counts and numeric ranges (pandas, polars), dtype, shape and range
    (numpy), dims and coords (xarray). None for other types. No code of an object column's
    elements runs (their nulls are counted by exact type, `_null_count`), and a frame whose
    `attrs` hold objects is described by its dtypes only (each derived frame deep-copies them)."""
    t = type(value)
    if _exact(t, "pandas", "DataFrame"):
        return _pandas_detail(value)
    if _exact(t, "pandas", "Series"):
        if not _plain_data(value.attrs):  # to_frame would deep-copy them
            return f"{value.shape[0]:,} rows, dtype {value.dtype}\n{_ATTRS_WITHHELD}"
        return _pandas_detail(value.to_frame(name=value.name if _label(value.name)[0] != "<" else "value"))
    if _exact(t, "numpy", "ndarray"):
        return _numpy_detail(value)
    if _exact(t, "polars", "DataFrame"):
        return _polars_detail(value)
    if _exact(t, "xarray", "DataArray") or _exact(t, "xarray", "Dataset"):
        dims = ", ".join(f"{_label(k)}: {int(v):,}" for k, v in dict(value.sizes).items())
        coords = ", ".join(_label(k) for k in list(value.coords)[:MAX_COLUMNS])
        extra = ""
        if _exact(t, "xarray", "Dataset"):
            extra = f"; data variables: {', '.join(_label(k) for k in list(value.data_vars)[:MAX_COLUMNS])}"
        return f"dims ({dims}); coords: {coords or 'none'}{extra}"
    return None


_ATTRS_WITHHELD = "(no column statistics: its attrs hold objects whose copy would run their own code)"


def _pandas_detail(frame: Any) -> str:
    import pandas as pd

    rows = [f"{frame.shape[0]:,} rows × {frame.shape[1]:,} columns"]  # noqa: RUF001
    if not _plain_data(frame.attrs):
        # Each derived frame (a column, `isna()`) deep-copies `attrs`: an object there runs its
        # own `__deepcopy__`. Only the dtypes, which derive nothing, are read then.
        rows.extend(f"{_label(c)}: {d}" for c, d in list(frame.dtypes.items())[:MAX_COLUMNS])
        rows.append(_ATTRS_WITHHELD)
        return "\n".join(rows)
    for i, (col, dtype) in enumerate(frame.dtypes.items()):
        if i >= MAX_COLUMNS:
            rows.append(f"… {frame.shape[1] - MAX_COLUMNS} more columns")
            break
        column = frame.iloc[:, i]
        line = f"{_label(col)}: {dtype}, {_null_count(column, dtype)}"
        if pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype) and frame.shape[0]:
            line += f", range {_number(column.min())} to {_number(column.max())}"
        rows.append(line)
    return "\n".join(rows)


_MOST_OBJECTS_COUNTED = 1_000_000


def _null_count(column: Any, dtype: Any) -> str:
    """`'3 null'` for a column, with no code of its elements' classes run: pandas' own `isna`
    asks an object element `isinstance(x, Decimal)` (a `__class__` property runs) and an extension
    array of another library its own `isna`; an object column's elements are looked at by
    exact type instead, and a column of an unknown dtype is not counted."""
    import numpy as np

    if issubclass(type(dtype), np.dtype):
        if dtype.kind != "O":
            return f"{int(column.isna().sum()):,} null"
        values = column.to_numpy()
        if len(values) > _MOST_OBJECTS_COUNTED:
            return "nulls not counted (object column)"
        return f"{sum(1 for x in values if _is_null_object(x)):,} null"
    array_type = type(column.array)
    if any(_exact(array_type, "pandas.arrays", name) for name in _PANDAS_ARRAYS):
        return f"{int(column.isna().sum()):,} null"
    return "nulls not counted (an array type of another library)"


# pandas' own extension arrays, whose `isna` reads no element's class (not the object-holding ones).
_PANDAS_ARRAYS = (
    "IntegerArray",
    "FloatingArray",
    "BooleanArray",
    "StringArray",
    "ArrowStringArray",
    "ArrowExtensionArray",
    "Categorical",
    "DatetimeArray",
    "TimedeltaArray",
    "PeriodArray",
    "IntervalArray",
)


def _is_null_object(x: object) -> bool:
    """What `pd.isna` counts as missing, by exact type and identity only."""
    import decimal

    import numpy as np
    import pandas as pd

    t = type(x)
    if x is None or x is pd.NA or x is pd.NaT:
        return True
    # The base type's own comparison, so a subclass's `__ne__` is not called.
    if issubclass(t, float):
        return bool(float.__ne__(cast(float, x), cast(float, x)))
    if issubclass(t, complex):
        return bool(complex.__ne__(cast(complex, x), cast(complex, x)))
    if issubclass(t, decimal.Decimal):
        return decimal.Decimal.is_nan(cast(decimal.Decimal, x))
    if t is np.datetime64 or t is np.timedelta64:
        return bool(np.isnat(cast(Any, x)))
    return False


def _plain_data(value: object, depth: int = 0) -> bool:
    """Whether `value` is made of exact builtin data only (str, numbers, None, and lists, tuples
    and dicts of them), so that copying it runs no code of a class; at most 6 levels deep."""
    t = type(value)
    if value is None or _is(t, str, int, float, bool, bytes):
        return True
    if depth >= 6:
        return False
    if t is dict:
        return all(
            _plain_data(k, depth + 1) and _plain_data(v, depth + 1)
            for k, v in cast(dict[object, object], value).items()
        )
    if _is(t, list, tuple):
        return all(_plain_data(v, depth + 1) for v in cast(list[object], value))
    return False


def _numpy_detail(array: Any) -> str:
    import numpy as np

    text = f"dtype {array.dtype}, shape {tuple(int(n) for n in array.shape)}"
    if array.size and np.issubdtype(array.dtype, np.number) and not np.issubdtype(array.dtype, np.complexfloating):
        text += f", min {_number(np.nanmin(array))}, max {_number(np.nanmax(array))}"
        if np.issubdtype(array.dtype, np.floating):
            text += f", {int(np.isnan(array).sum()):,} NaN"
    return text


def _polars_detail(frame: Any) -> str:
    rows = [f"{frame.height:,} rows × {frame.width:,} columns"]  # noqa: RUF001
    nulls = frame.null_count().row(0)
    for i, (col, dtype) in enumerate(frame.schema.items()):
        if i >= MAX_COLUMNS:
            rows.append(f"… {frame.width - MAX_COLUMNS} more columns")
            break
        line = f"{_label(col)}: {dtype}, {int(nulls[i]):,} null"
        if dtype.is_numeric() and frame.height:
            column = frame.get_column(col)
            line += f", range {_number(column.min())} to {_number(column.max())}"
        rows.append(line)
    return "\n".join(rows)


def _number(x: Any) -> str:
    """A library's scalar as text: its float or int value, never its own repr."""
    try:
        f = float(x)
    except (TypeError, ValueError):
        return "?"
    return f"{int(f):,}" if f.is_integer() and abs(f) < 1e15 else f"{f:.6g}"
