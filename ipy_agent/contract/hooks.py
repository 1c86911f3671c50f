"""Hooks: Python callables the runtime calls at fixed points of a run.

Events: PreToolUse, PostToolUse, PostToolUseFailure, UserPromptSubmit, Stop, SubagentStart and
SubagentStop (a Task's subagent, with its `agent_type`, its `prompt` or `last_message`), PreCompact (before
the conversation is summarised; `trigger` is "auto" or "manual", and the hook may add
instructions for the summary with `additional_context` or block it with "deny"), SessionStart (before the
first prompt of a conversation; `additional_context` joins it) and Notification (the agent waits
for the person: `reason` says why). Command hooks from settings files (config/command_hooks.py)
are registered here too, after the Python ones. A hook receives a
`HookEvent` and returns None (no opinion) or a `HookOutcome`. Several hooks on one event combine
deny > ask > allow. A hook that raises fails closed: the call it guards is blocked and the error
is shown, because a guard that silently stops guarding is worse than no guard (Claude Code
users were bitten by exactly that).
"""

from __future__ import annotations

import re
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from ipy_agent.history.blocks import ToolResultBlock

from .decision import Behavior
from .tool import maybe_await

__all__ = ["HOOK_EVENTS", "HookEvent", "HookOutcome", "HookResult", "Hooks"]

HOOK_EVENTS: tuple[str, ...] = (
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "UserPromptSubmit",
    "Stop",
    "PreCompact",
    "SubagentStart",
    "SubagentStop",
    "SessionStart",
    "Notification",
)
_PRECEDENCE = {"deny": 3, "ask": 2, "allow": 1}


@dataclass(frozen=True, kw_only=True)
class HookEvent:
    event: str
    tool_name: str | None = None
    input: dict[str, Any] | None = None
    tool_use_id: str | None = None
    output: Any = None
    result: ToolResultBlock | None = None
    error: str | None = None
    prompt: str | None = None
    last_message: str | None = None
    trigger: Literal["auto", "manual"] | None = None  # PreCompact: why the conversation is compacted
    instructions: str | None = None  # PreCompact: what the person asked the summary to keep
    agent_type: str | None = None  # SubagentStart, SubagentStop: the Task's subagent type

    def __getitem__(self, key: str) -> Any:
        # Hooks written for dict-shaped events (`event["tool_name"]`) work too.
        return getattr(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key, default)


@dataclass(frozen=True, kw_only=True)
class HookOutcome:
    decision: Behavior | None = None
    reason: str | None = None
    updated_input: dict[str, Any] | None = None
    additional_context: str | None = None
    stop: bool = False


@dataclass(frozen=True, kw_only=True)
class HookResult:
    """All matching hooks of one event, combined."""

    decision: Behavior | None = None
    reason: str = ""
    updated_input: dict[str, Any] | None = None
    additional_context: tuple[str, ...] = ()
    stop: bool = False
    errors: tuple[str, ...] = ()
    ran: int = 0


@dataclass
class _Registered:
    event: str
    fn: Callable[[HookEvent], Any]
    matcher: str | None
    pattern: re.Pattern[str] | None = field(default=None)

    def matches(self, tool_name: str | None) -> bool:
        if self.matcher in (None, "", "*") or tool_name is None:
            return True
        if re.fullmatch(r"[A-Za-z0-9_|\-]+", self.matcher):
            return tool_name in self.matcher.split("|")
        return bool(self.pattern and self.pattern.search(tool_name))


class Hooks:
    def __init__(self) -> None:
        self._hooks: list[_Registered] = []

    def add(self, event: str, fn: Callable[[HookEvent], Any], matcher: str | None = None) -> Callable[[HookEvent], Any]:
        """Register `fn` for `event`; `matcher` is an exact name, `A|B`, or a regex (unanchored)."""
        if event not in HOOK_EVENTS:
            raise ValueError(f"unknown hook event {event!r}; use one of {', '.join(HOOK_EVENTS)}")
        if not callable(fn):
            raise TypeError(f"a hook must be callable, not {fn!r}")
        pattern = None
        if matcher not in (None, "", "*") and not re.fullmatch(r"[A-Za-z0-9_|\-]+", matcher or ""):
            try:
                pattern = re.compile(matcher or "")
            except re.error as e:
                raise ValueError(f"hook matcher {matcher!r} is not a valid regex: {e}") from None
        self._hooks.append(_Registered(event=event, fn=fn, matcher=matcher, pattern=pattern))
        return fn

    def remove(self, fn: Callable[[HookEvent], Any]) -> None:
        self._hooks = [h for h in self._hooks if h.fn is not fn]

    def clear(self) -> None:
        self._hooks.clear()

    def has(self, event: str) -> bool:
        return any(h.event == event for h in self._hooks)

    async def run(self, event: HookEvent) -> HookResult:
        decision: Behavior | None = None
        reasons: list[str] = []
        updated: dict[str, Any] | None = None
        context: list[str] = []
        errors: list[str] = []
        stop = False
        ran = 0
        for h in self._hooks:
            if h.event != event.event or not h.matches(event.tool_name):
                continue
            ran += 1
            try:
                out = await maybe_await(h.fn(event))
                if out is not None and not isinstance(out, HookOutcome):
                    raise TypeError(f"a hook must return None or a HookOutcome, not {type(out).__name__}")
            except Exception as e:  # fail closed: an erroring guard blocks what it guards
                name = getattr(h.fn, "__name__", repr(h.fn))
                tb = traceback.format_exception_only(type(e), e)[-1].strip()
                errors.append(f"hook {name!r} raised {tb}")
                decision = "deny"
                continue
            if out is None:
                continue
            if out.decision is not None:
                if out.decision not in _PRECEDENCE:
                    errors.append(f"hook returned an unknown decision {out.decision!r}")
                    decision = "deny"
                elif decision is None or _PRECEDENCE[out.decision] > _PRECEDENCE[decision]:
                    decision = out.decision
            if out.reason:
                reasons.append(out.reason)
            if out.updated_input is not None:
                updated = dict(out.updated_input)
            if out.additional_context:
                context.append(out.additional_context)
            stop = stop or out.stop
        reason = "; ".join([*errors, *reasons])
        return HookResult(
            decision=decision,
            reason=reason,
            updated_input=updated,
            additional_context=tuple(context),
            stop=stop,
            errors=tuple(errors),
            ran=ran,
        )
