"""Hooks: Python callables the runtime calls at fixed points of a run.

Events: PreToolUse, PostToolUse, PostToolUseFailure, UserPromptSubmit, Stop, SubagentStart and
SubagentStop (a Task's subagent, with its `agent_type`, its `prompt` or `last_message`), PreCompact (before
the conversation is summarised; `trigger` is "auto" or "manual", and the hook may add
instructions for the summary with `additional_context` or block it with "deny"), SessionStart (before the
first prompt of a conversation; `additional_context` joins it) and Notification (the run waits
for the person: `message` says for what, `notification_type` is Claude Code's kind of it,
"permission_prompt", "elicitation_dialog" or "idle_prompt", and is what a Notification hook's
matcher matches; its answer is ignored, it only tells). Command hooks from settings files
(config/command_hooks.py) run after the Python ones, whenever either was added. A hook receives a
`HookEvent` and returns None (no opinion) or a `HookOutcome`. Several hooks on one event combine
deny > ask > allow. A hook that raises fails closed: the call it guards is blocked and the error
is shown, because a guard that silently stops guarding is worse than no guard (Claude Code
users were bitten by exactly that).
"""

from __future__ import annotations

import re
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from ipy_agent.history.blocks import ToolResultBlock

from .decision import Behavior
from .tool import maybe_await

__all__ = ["HOOK_EVENTS", "NOTIFY_PERSON", "HookEvent", "HookOutcome", "HookResult", "Hooks", "NotifyPerson"]

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

# Runs the Notification hooks: (message, notification_type). The agent keeps one in its
# conversation's session under NOTIFY_PERSON, for a tool that waits for the person (TodoHuman).
NotifyPerson = Callable[[str, str], Awaitable[None]]
NOTIFY_PERSON = "ipy_agent.notify_person"


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
    message: str | None = None  # Notification: what the run waits for
    notification_type: str | None = None  # Notification: permission_prompt, elicitation_dialog, idle_prompt
    stop_hook_active: bool = False  # Stop: a Stop hook already sent the agent on in this run

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
    command: bool = False  # a command hook (config/command_hooks.py): runs after the Python ones

    def matches(self, name: str | None) -> bool:
        if self.matcher in (None, "", "*") or name is None:
            return True
        if re.fullmatch(r"[A-Za-z0-9_|\-]+", self.matcher):
            return name in self.matcher.split("|")
        return bool(self.pattern and self.pattern.search(name))


class Hooks:
    def __init__(self) -> None:
        self._hooks: list[_Registered] = []

    def add(
        self, event: str, fn: Callable[[HookEvent], Any], matcher: str | None = None, *, command: bool = False
    ) -> Callable[[HookEvent], Any]:
        """Register `fn` for `event`; `matcher` is an exact name, `A|B`, or a regex (unanchored),
        matched against the tool's name (a Notification's `notification_type`). `command`: a
        command hook, run after every Python hook whenever it was added."""
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
        self._hooks.append(_Registered(event=event, fn=fn, matcher=matcher, pattern=pattern, command=command))
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
        name = event.notification_type if event.event == "Notification" else event.tool_name
        for h in sorted(self._hooks, key=lambda h: h.command):  # stable: Python hooks, then command hooks
            if h.event != event.event or not h.matches(name):
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
