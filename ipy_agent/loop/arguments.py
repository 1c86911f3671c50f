"""Checks of `Agent`'s and `Agent.configure`'s arguments, with messages that say what is allowed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeVar

from ipy_agent.contract.tool_context import SANDBOX_SETTINGS, SandboxLimits, SandboxSetting

__all__ = ["KEEP", "Keep", "check_choice", "check_sandbox", "check_turns"]

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


def check_sandbox(
    sandbox: SandboxSetting, limits: SandboxLimits | Mapping[str, int] | None
) -> tuple[SandboxSetting, SandboxLimits]:
    """Bash's sandbox setting, and what one sandboxed command may use: `SandboxLimits`, a dict of
    some of its fields (memory and tmp in bytes, processes), or None for the defaults."""
    check_choice("sandbox", sandbox, SANDBOX_SETTINGS)
    if limits is None or isinstance(limits, SandboxLimits):
        return sandbox, limits or SandboxLimits()
    unknown = set(limits) - {"memory", "processes", "tmp"}
    if unknown:
        raise ValueError(
            f"sandbox_limits has no {', '.join(sorted(unknown))}: give memory (bytes), processes or tmp (bytes)"
        )
    return sandbox, SandboxLimits(**dict(limits))
