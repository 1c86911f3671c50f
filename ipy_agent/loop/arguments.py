"""Checks of `Agent`'s and `Agent.configure`'s arguments, with messages that say what is allowed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

__all__ = ["KEEP", "Keep", "check_choice", "check_turns"]

_V = TypeVar("_V")


class Keep:
    """The default of `Agent.configure` arguments where None is a value: leave it as it is."""

    def __repr__(self) -> str:
        return "KEEP"


KEEP = Keep()


def check_choice(name: str, value: _V, allowed: Sequence[_V]) -> _V:
    if value not in allowed:
        raise ValueError(f"{name} {value!r} is not one of {', '.join(map(str, allowed))}")
    return value


def check_turns(max_turns: int) -> int:
    if max_turns < 1:
        raise ValueError(f"max_turns must be at least 1, not {max_turns!r}")
    return max_turns
