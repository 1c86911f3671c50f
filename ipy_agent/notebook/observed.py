"""What a cell run really changed in the namespace, observed, beside what the preview predicted.

The effect preview (effects.py) predicts from the source and can miss a change: a rebinding
through `globals()[...]`, `exec`, a function that assigns globals. So NotebookRun also looks:
`namespace_prints` takes a fingerprint (fingerprint.py) of every name before the run and
`observed_changes` compares after it, giving the names added, rebound (another object, or another
type) and deleted, and those changed in place where it shows (a list, dict, set, array or frame
of another size). A fingerprint is cheap by construction: an id, a type, a weak reference, a
builtin immutable's value or a container's length or shape; no value is copied, hashed (a long
`str` or `bytes` aside, whose hash Python keeps) or asked anything by its own class's code, so a
1 GB DataFrame costs what an int costs (`python -m bench`: the observed-effects row).

IPython's machinery (`In`, `Out`, `_`, `_i3`, `_3`, the shell's hidden names) is left out: every
run rebinds it. An in-place change that keeps the object and its size (`df.iloc[0, 0] = 9`) is not
seen, as for a rewind.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .effects import CellEffects
from .fingerprint import Fingerprint, fingerprint, unchanged

__all__ = ["ObservedChanges", "namespace_prints", "observed_changes", "observed_lines"]

# IPython's own names, rebound by every run (the output cache and the input history), and dunders.
_MACHINERY = re.compile(r"_+|__\w+__|_i+|_i?\d+|_(?:ih|oh|dh|exit_code)|In|Out|exit|quit|get_ipython")
_MOST_NAMED = 12


@dataclass(frozen=True, kw_only=True)
class ObservedChanges:
    """Names a run added, rebound, deleted or resized in place, each as `name (type shape)`."""

    added: tuple[str, ...] = ()
    rebound: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    resized: tuple[str, ...] = ()
    shown: Mapping[str, str] | None = None  # name -> `name (int)`, `name (DataFrame 10 by 2)`
    unpredicted: tuple[str, ...] = ()  # names changed that the preview did not name

    @property
    def names(self) -> tuple[str, ...]:
        return (*self.added, *self.rebound, *self.deleted, *self.resized)


def _person_names(namespace: Mapping[str, object], hidden: Mapping[str, object]) -> Iterable[str]:
    for name in list(namespace):
        if type(name) is not str or _MACHINERY.fullmatch(name):
            continue
        if name in hidden and hidden[name] is namespace.get(name):
            continue
        yield name


def namespace_prints(
    namespace: Mapping[str, object], hidden: Mapping[str, object] | None = None
) -> dict[str, Fingerprint]:
    """A fingerprint of each of the person's names (nothing copied; no code of theirs runs)."""
    return {name: fingerprint(namespace[name]) for name in _person_names(namespace, hidden or {}) if name in namespace}


def observed_changes(
    before: Mapping[str, Fingerprint],
    namespace: Mapping[str, object],
    effects: CellEffects | None = None,
    hidden: Mapping[str, object] | None = None,
) -> ObservedChanges:
    """How `namespace` differs from `before`; with `effects`, the changes the preview did not predict."""
    added: list[str] = []
    rebound: list[str] = []
    resized: list[str] = []
    shown: dict[str, str] = {}
    now = set()
    for name in _person_names(namespace, hidden or {}):
        if name not in namespace:
            continue
        now.add(name)
        value = namespace[name]
        print_ = before.get(name)
        if print_ is not None and unchanged(print_, value):
            continue
        after = fingerprint(value)
        shown[name] = f"{name} ({_kind(after)})"
        if print_ is None:
            added.append(name)
        elif _same_object(print_, value):
            resized.append(name)
        else:
            rebound.append(name)
            if print_.kind is not after.kind:
                shown[name] = f"{name} ({_kind(print_)} → {_kind(after)})"
    deleted = [n for n in before if n not in now]
    shown.update({n: f"{n} ({_kind(before[n])})" for n in deleted})
    predicted: set[str] = set()
    if effects is not None:
        predicted = {*effects.binds, *effects.deletes, *(m.split(" ", 1)[0] for m in effects.may_modify)}
    changed = [*added, *rebound, *deleted, *resized]
    return ObservedChanges(
        added=tuple(added),
        rebound=tuple(rebound),
        deleted=tuple(deleted),
        resized=tuple(resized),
        shown=shown,
        unpredicted=tuple(n for n in changed if effects is not None and n not in predicted),
    )


def _same_object(print_: Fingerprint, value: object) -> bool:
    if print_.has_value or type(value) is not print_.kind:
        return False
    if print_.ref is not None:
        return print_.ref() is value
    return id(value) == print_.ident


def _kind(print_: Fingerprint) -> str:
    name = str(type.__dict__["__name__"].__get__(print_.kind, type))  # not a metaclass's own `__name__`
    if print_.size is None:
        return name
    if len(print_.size) == 1 and any(print_.kind is k for k in (list, dict, set, bytearray)):
        return f"{name} of {print_.size[0]:,}"
    return f"{name} {' × '.join(f'{n:,}' for n in print_.size)}"  # noqa: RUF001


def observed_lines(changes: ObservedChanges, *, preview_blind: bool = False) -> list[str]:
    """The lines the result and the row show: what changed, then what the preview missed."""
    shown = changes.shown or {}

    def named(names: Iterable[str], plain: bool = False) -> str:
        items = [n if plain else shown.get(n, n) for n in names]
        more = len(items) - _MOST_NAMED
        return ", ".join(items[:_MOST_NAMED]) + (f", and {more} more" if more > 0 else "")

    parts = []
    if changes.added:
        parts.append(f"added {named(changes.added)}")
    if changes.rebound:
        parts.append(f"rebound {named(changes.rebound)}")
    if changes.deleted:
        parts.append(f"deleted {named(changes.deleted)}")
    if changes.resized:
        parts.append(f"changed in place {named(changes.resized)}")
    lines = ["observed: " + ("; ".join(parts) if parts else "no name added, rebound or deleted")]
    if changes.unpredicted:
        why = "the preview could not see all of its effects" if preview_blind else "the preview did not predict it"
        lines.append(f"not predicted ({why}): {named(changes.unpredicted, plain=True)}")
    return lines
