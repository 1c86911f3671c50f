"""One turn's pieces: the state an early end needs, and reading the model's stream.

The agent loop (agent.py) says what a turn does: request, answer the tool calls, decide to go
on. This module holds what that needs and is not the loop itself: what one turn has put into
the history so far (`Turn`, so an interrupt or a failure can close it validly), and
`stream_reply`, which turns the model's events into text on screen and tool calls started as
soon as their blocks are whole. The records a run returns and keeps (`RunResult`,
`TurnRecord`) are in runtime/trace.py; how a turn ends is turn_end.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ipy_agent.history.blocks import ContentBlock, Message, ToolUseBlock
from ipy_agent.history.messages import append_assistant, clean_content
from ipy_agent.history.tool_ids import ToolUseIds
from ipy_agent.models.base import (
    BlockComplete,
    CallOutcome,
    MessageComplete,
    Model,
    ModelError,
    ModelRequest,
    TextDelta,
    ThinkingDelta,
    Usage,
)
from ipy_agent.runtime.executor import ToolExecutor
from ipy_agent.runtime.run_env import RunEnv
from ipy_agent.runtime.trace import AgentEvent, CallRecord, TextEvent, ThinkingEvent, TurnEvent, TurnRecord, now

__all__ = ["Turn", "previous_calls", "stream_reply", "take_reply", "usage_delta"]

_ASKED = ("person", "approver")


@dataclass(kw_only=True)
class Turn:
    """One model request and its tool calls, and what it has put into the history so far."""

    record: TurnRecord
    env: RunEnv
    executor: ToolExecutor
    completed: list[ContentBlock] = field(default_factory=list)  # whole blocks streamed so far
    tool_uses: list[ToolUseBlock] = field(default_factory=list)  # of the complete message
    # The model's tool_use ids are untrusted: made well-formed and unique, the same streamed and final.
    ids: ToolUseIds = field(default_factory=ToolUseIds)
    appended: bool = False  # the assistant message of this turn is in the history
    answered: bool = False  # and its tool results are too


async def stream_reply(
    model: Model, request: ModelRequest, turn: Turn, *, emit: Callable[[AgentEvent], None], streaming_tools: bool
) -> MessageComplete:
    """The model's whole message; tool calls start as their blocks complete (with `streaming_tools`).

    Raises ModelError when the model fails, also for a bug in a model implementation or a
    stream that ends without a complete message."""
    final: MessageComplete | None = None
    try:
        async for event in model.stream(request):
            match event:
                case TextDelta():
                    emit(TextEvent(text=event.text))
                case ThinkingDelta():
                    emit(ThinkingEvent(text=event.text))
                case BlockComplete():
                    block = turn.ids.fix(event.block) if event.block["type"] == "tool_use" else event.block
                    turn.completed.append(block)
                    if block["type"] == "tool_use" and streaming_tools:
                        turn.executor.submit(block)
                case MessageComplete():
                    final = event
    except ModelError:
        raise
    except Exception as e:  # a model implementation bug must not break the history either
        raise ModelError(f"{type(e).__name__}: {e}") from e
    if final is None:
        raise ModelError("the model stream ended without a complete message")
    return final


def take_reply(turn: Turn, reply: MessageComplete, messages: list[Message], emit: Callable[[AgentEvent], None]) -> None:
    """The whole message goes into the history; tool calls not started while streaming start now."""
    record = turn.record
    record.usage, record.stop_reason, record.end = reply.usage, reply.stop_reason, now()
    content = turn.ids.fix_all(clean_content(reply.content))
    turn.tool_uses = [b for b in content if b["type"] == "tool_use"]
    for b in turn.tool_uses:
        if not turn.executor.has(str(b.get("id"))):
            turn.executor.submit(b)
    if content:
        append_assistant(messages, content)
        turn.appended = True
    emit(TurnEvent(turn=record.turn, phase="end", usage=reply.usage, stop_reason=reply.stop_reason))


def usage_delta(total: Usage, start: Usage) -> Usage:
    return Usage(
        input_tokens=total.input_tokens - start.input_tokens,
        output_tokens=total.output_tokens - start.output_tokens,
        cache_read_input_tokens=total.cache_read_input_tokens - start.cache_read_input_tokens,
        cache_creation_input_tokens=total.cache_creation_input_tokens - start.cache_creation_input_tokens,
    )


def previous_calls(trace: list[CallRecord], turn: int, messages: list[Message]) -> tuple[CallOutcome, ...]:
    """How the tool calls of `turn` ended, when the latest message answers them (a replay
    branches on it, a recording writes it down; see ModelRequest.calls)."""
    last = messages[-1] if messages else None
    content = last["content"] if last is not None and last["role"] == "user" else None
    answered = {b.get("tool_use_id") for b in content or [] if isinstance(b, dict) and b.get("type") == "tool_result"}
    records: list[CallRecord] = []
    for record in reversed(trace):
        if record.turn < turn:
            break
        if record.turn == turn and record.tool_use_id in answered:
            records.append(record)
    return tuple(_outcome(r) for r in reversed(records))


def _outcome(record: CallRecord) -> CallOutcome:
    decision = record.decision
    asked = decision is not None and decision.source in _ASKED
    if record.status == "denied":
        reason = decision.reason if decision is not None else record.summary_result
        return CallOutcome(
            tool_use_id=record.tool_use_id, name=record.tool_name, outcome="denied", reason=reason, asked=asked
        )
    if record.status == "done" and not record.is_error:
        return CallOutcome(tool_use_id=record.tool_use_id, name=record.tool_name, outcome="allowed", asked=asked)
    reason = record.summary_result or record.status
    return CallOutcome(
        tool_use_id=record.tool_use_id, name=record.tool_name, outcome="error", reason=reason, asked=asked
    )
