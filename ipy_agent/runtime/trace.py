"""Trace records and the events the runtime emits while a run goes on.

One `CallRecord` per tool call: the input as the model sent it and as it ran, every stage with
its outcome and timing, the permission decision and what made it, the batch it ran in, the full
tool_result the model received, and the compact lines the person saw. `%agent_trace` and
`%agent_inspect` read these; the widgets and the terminal renderer follow the events.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from ipy_agent.contract.tool import PermissionPreview
from ipy_agent.history.blocks import JsonObject, ToolResultBlock
from ipy_agent.models.base import Usage
from ipy_agent.permissions.decide import Decision

__all__ = [
    "AgentEvent",
    "CallEvent",
    "CallRecord",
    "CallStatus",
    "ContextEvent",
    "Listeners",
    "NoticeEvent",
    "RunEndEvent",
    "RunResult",
    "Stage",
    "StopReason",
    "TextEvent",
    "ThinkingEvent",
    "TurnEvent",
    "TurnRecord",
    "nested_calls",
    "now",
]

StopReason = Literal[
    "end_turn",
    "max_turns",
    "interrupted",
    "stopped_by_hook",
    "blocked_by_hook",
    "error",
    "refusal",
    "max_tokens",
    "budget_exceeded",
]
CallStatus = Literal["queued", "waiting", "running", "done", "error", "denied", "cancelled"]


def now() -> float:
    return time.perf_counter()


@dataclass(kw_only=True)
class Stage:
    name: str
    outcome: str  # "ok", "error", "skipped", a decision, ...
    detail: str = ""
    start: float = 0.0
    end: float = 0.0

    @property
    def duration(self) -> float:
        return max(0.0, self.end - self.start)


@dataclass(kw_only=True)
class CallRecord:
    index: int
    tool_use_id: str
    tool_name: str
    input: JsonObject  # as the model sent it (not an object: under "_raw")
    turn: int
    batch: int = 0
    status: CallStatus = "queued"
    concurrency_safe: bool = False
    read_only: bool = False
    destructive: bool = False
    final_input: JsonObject | None = None
    stages: list[Stage] = field(default_factory=list)
    decision: Decision | None = None
    result: ToolResultBlock | None = None  # the tool_result block the model received
    is_error: bool = False
    call_failed: bool = False  # the tool itself failed (not a denial or a bad input)
    summary_use: str = ""
    summary_result: str = ""
    display_name: str = ""
    client: str = ""  # who made the call: "" the conversation's model, else an outside MCP client's name
    detail: str = ""  # what the person may expand: a diff, an output excerpt
    preview: PermissionPreview | None = None  # shown at the prompt
    read_state_key: str | None = None
    spilled_to: str | None = None
    queued_at: float = field(default_factory=now)
    start: float | None = None
    end: float | None = None

    def stage(self, name: str) -> Stage | None:
        return next((s for s in self.stages if s.name == name), None)

    @property
    def duration(self) -> float | None:
        if self.start is None or self.end is None:
            return None
        return self.end - self.start

    @property
    def waited(self) -> float:
        """Seconds the call waited for an answer to its approval prompt (0 when nobody was asked)."""
        stage = self.stage("permission")
        asked = getattr(self.decision, "source", "") in ("person", "approver") or (
            self.decision is None and stage is not None and stage.outcome == "cancelled"
        )
        return stage.duration if asked and stage is not None else 0.0


@dataclass(frozen=True, kw_only=True)
class RunResult:
    """How a run ended: why, the model's last text, how many turns, what it cost, and any error."""

    stop_reason: StopReason
    text: str = ""
    turns: int = 0
    usage: Usage = field(default_factory=Usage)
    error: str | None = None
    error_kind: str | None = None
    budget: str = ""  # spending against the budgets in force, e.g. "$0.0123 of $0.50 this run"
    verified: str | None = None  # the verify gate's verdict ("reproduces", or what does not); None: no gate ran


@dataclass(kw_only=True)
class TurnRecord:
    """One model request of a run: the tools offered and hidden, its usage and how it ended."""

    turn: int
    offered: list[str]
    hidden: dict[str, str]
    usage: Usage = field(default_factory=Usage)
    stop_reason: str | None = None
    start: float = field(default_factory=now)
    end: float | None = None


@dataclass(frozen=True, kw_only=True)
class TextEvent:
    text: str
    kind: Literal["text"] = "text"


@dataclass(frozen=True, kw_only=True)
class ThinkingEvent:
    text: str
    kind: Literal["thinking"] = "thinking"


@dataclass(frozen=True, kw_only=True)
class CallEvent:
    """A call changed status; `record` is the live record (read it, do not keep a copy)."""

    record: CallRecord
    kind: Literal["call"] = "call"


@dataclass(frozen=True, kw_only=True)
class TurnEvent:
    turn: int
    phase: Literal["start", "end"]
    usage: Usage | None = None
    stop_reason: str | None = None
    kind: Literal["turn"] = "turn"


@dataclass(frozen=True, kw_only=True)
class NoticeEvent:
    text: str
    level: Literal["info", "warning", "error"] = "info"
    # The id of the question to the person whose answer this notice records (an MCP server's
    # form): a view that shows that question in a row of its own, answer included, leaves it out.
    question_id: str = ""
    kind: Literal["notice"] = "notice"


@dataclass(frozen=True, kw_only=True)
class RunEndEvent:
    result: RunResult
    kind: Literal["run_end"] = "run_end"


@dataclass(frozen=True, kw_only=True)
class ContextEvent:
    """The context window was made smaller: old tool results cleared, or the conversation compacted.

    `before` and `after` are estimated tokens of the next request; `count` is the number of
    results cleared or of messages summarised."""

    action: Literal["cleared", "compacted"]
    before: int
    after: int
    count: int
    trigger: Literal["auto", "manual", "too_long"] = "auto"
    kind: Literal["context"] = "context"

    @property
    def text(self) -> str:
        sizes = f"{_k(self.before)} -> {_k(self.after)} tokens"
        if self.action == "cleared":
            return f"context: {self.count} old tool result{'s' if self.count != 1 else ''} cleared: {sizes}"
        return f"context compacted: {sizes} ({self.count} earlier message{'s' if self.count != 1 else ''} summarised)"


def _k(tokens: int) -> str:
    return f"{tokens / 1000:.0f}k" if tokens >= 10_000 else f"{tokens / 1000:.1f}k" if tokens >= 1000 else str(tokens)


AgentEvent = TextEvent | ThinkingEvent | CallEvent | TurnEvent | NoticeEvent | RunEndEvent | ContextEvent


def nested_calls(session: dict[str, object]) -> dict[str, list[CallRecord]]:
    """The calls made on behalf of a call (a Task's subagent), by that call's tool_use_id: kept in
    the conversation's session for `%agent_trace` and `%agent_inspect`."""
    calls = session.get("nested_calls")
    if not isinstance(calls, dict):
        calls = session["nested_calls"] = {}
    return calls


class Listeners:
    """Who follows a conversation's events: `on_event(f)`, `remove_listener(f)`, `emit(event)`.

    A listener that raises is ignored: a broken renderer must not break the run."""

    def __init__(self) -> None:
        self._listeners: list[Callable[[AgentEvent], None]] = []

    def on_event(self, listener: Callable[[AgentEvent], None]) -> Callable[[AgentEvent], None]:
        self._listeners.append(listener)
        return listener

    def remove_listener(self, listener: Callable[[AgentEvent], None]) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)

    def emit(self, event: AgentEvent) -> None:
        for listener in list(self._listeners):
            with contextlib.suppress(Exception):
                listener(event)
