"""A kernel value's fingerprint, taken and compared without running any code of its class.

A rewind puts a variable back only if it still holds what the agent's run left there (see
contract/checkpoints.py and loop/rewind.py): the person's later work is kept. Comparing values
with `==`, `hash()`, `repr()` or `len()` would run the person's (or a library's) methods, which
can be slow, have effects, or lie; so a fingerprint holds only what the interpreter knows:

- the value's type, by identity (`type(v)`, never `v.__class__`), and its `id`;
- a weak reference when the type allows one: identity then survives the reuse of an id;
- for the builtin immutables (`int`, `float`, `complex`, `str`, `bytes`, `bool`, `None`, and
  tuples and frozensets of them; exact types, no subclasses) the value itself (a long `str` or
  `bytes`: its length and builtin hash), so an equal value counts as unchanged;
- for the builtin containers (`list`, `dict`, `set`, `bytearray`; exact types) their length
  from the builtin `len`, and for a numpy array or a pandas DataFrame or Series (exact types, the
  modules already loaded) their shape: growing or shrinking one in place is seen.

What it cannot see: a change made in place that keeps the object and its size (`lst[0] = 9`,
`df.iloc[0, 0] = 9`, an attribute of the person's own object). Such a value counts as unchanged,
and a rewind puts the run's before-value back over it.
"""

from __future__ import annotations

import sys
import weakref
from dataclasses import dataclass

__all__ = ["Fingerprint", "fingerprint", "unchanged"]

_SCALARS: tuple[type, ...] = (int, float, complex, str, bytes, bool, type(None))
_CONTAINERS: tuple[type, ...] = (list, dict, set, bytearray)
_LONG = 4096  # a str or bytes longer than this is kept as its length and hash
_MOST_ITEMS = 256  # a tuple or frozenset with more items is compared by identity


@dataclass(frozen=True, kw_only=True)
class Fingerprint:
    """What a name held when the agent's run ended."""

    kind: type
    ident: int
    ref: weakref.ref[object] | None = None
    value: object = None  # a builtin immutable's value (with `has_value`)
    has_value: bool = False
    size: tuple[int, ...] | None = None


def fingerprint(value: object) -> Fingerprint:
    kind = type(value)
    if _plain(value, depth=0):
        if (kind is str or kind is bytes) and len(value) > _LONG:  # type: ignore[arg-type]
            kept: object = (len(value), hash(value))  # type: ignore[arg-type]
        else:
            kept = value
        return Fingerprint(kind=kind, ident=id(value), value=kept, has_value=True)
    try:
        ref: weakref.ref[object] | None = weakref.ref(value)
    except TypeError:
        ref = None
    return Fingerprint(kind=kind, ident=id(value), ref=ref, size=_size(value))


def unchanged(print_: Fingerprint, value: object) -> bool:
    """Whether `value` is still what `print_` was taken of (equal, for builtin immutables)."""
    kind = type(value)
    if kind is not print_.kind:
        return False
    if print_.has_value:
        if not _plain(value, depth=0):
            return False
        if (kind is str or kind is bytes) and len(value) > _LONG:  # type: ignore[arg-type]
            return print_.value == (len(value), hash(value))  # type: ignore[arg-type]
        return _same_plain(print_.value, value)
    if print_.ref is not None:
        if print_.ref() is not value:
            return False
    elif id(value) != print_.ident:
        return False
    return _size(value) == print_.size


def _plain(value: object, depth: int) -> bool:
    """A builtin immutable (exact types), tuples and frozensets of them included."""
    kind = type(value)
    if id(kind) in _SCALAR_IDS:
        return True
    if (kind is tuple or kind is frozenset) and depth < 3:
        items: tuple[object, ...] | frozenset[object] = value  # type: ignore[assignment]
        return len(items) <= _MOST_ITEMS and all(_plain(v, depth + 1) for v in items)
    return False


def _one_of(kind: type, kinds: tuple[object, ...]) -> bool:
    """`kind in kinds` by identity: `in` would call a metaclass's `__eq__`."""
    return any(kind is k for k in kinds)


# The same test by the types' ids, for the builtin types (they live as long as the interpreter):
# NotebookRun fingerprints every name of the namespace around each run (notebook/observed.py).
_SCALAR_IDS = frozenset(id(k) for k in _SCALARS)
_CONTAINER_IDS = frozenset(id(k) for k in _CONTAINERS)


def _same_plain(a: object, b: object) -> bool:
    """Equality of two builtin immutables (builtin comparisons only); NaN equals NaN here."""
    if type(a) is float and type(b) is float and a != a and b != b:
        return True
    return type(a) is type(b) and bool(a == b)


def _size(value: object) -> tuple[int, ...] | None:
    """The size of a builtin container, or the shape of an array or frame, by exact type."""
    kind = type(value)
    if id(kind) in _CONTAINER_IDS:
        return (len(value),)  # type: ignore[arg-type]
    numpy = sys.modules.get("numpy")
    if numpy is not None and kind is getattr(numpy, "ndarray", None):
        return tuple(value.shape)  # type: ignore[attr-defined]
    pandas = sys.modules.get("pandas")
    if pandas is not None and _one_of(kind, (getattr(pandas, "DataFrame", None), getattr(pandas, "Series", None))):
        return tuple(value.shape)  # type: ignore[attr-defined]
    return None
