"""What a call needs from the run it belongs to (`RunEnv`), and how its record reaches the person.

The agent makes one `RunEnv` per turn; the lifecycle's stages (lifecycle.py) and the executor
(executor.py) both read it and both change a call's `CallRecord` through the functions here:
every status change is emitted at once as a `CallEvent`, which is how the person's row follows
the call (queued, waiting, running, done). `settle` ends a call, whether it ran through every
stage or the executor ended it early (a cancelled sibling, an interrupt); `note_budget` records
the message budget replacing a result after the call had settled.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ipy_agent.contract.decision import PermissionMode
from ipy_agent.contract.hooks import Hooks
from ipy_agent.contract.tool import Tool
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.history.blocks import ToolResultBlock, tool_result
from ipy_agent.permissions.decide import Approver
from ipy_agent.permissions.rules import PermissionRules

from .budget import ResultBudget
from .trace import CallEvent, CallRecord, CallStatus, Stage, now

__all__ = ["RunEnv", "error_result", "mark_started", "note_budget", "set_status", "settle"]


@dataclass(kw_only=True)
class RunEnv:
    """Everything a call needs from the conversation it belongs to."""

    tools: dict[str, Tool]
    rules: PermissionRules
    hooks: Hooks
    budget: ResultBudget
    make_ctx: Callable[[str], ToolContext]
    mode: Callable[[], PermissionMode]
    approver: Approver | None = None
    emit: Callable[[Any], None] = lambda _e: None
    result_limit: Callable[[Tool], int] = lambda tool: tool.max_result_chars
    approval_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    stop_requested: bool = False
    stop_reason: str = ""
    # Who makes the calls: "" for the conversation's own model; an outside MCP client's name for
    # the calls it makes to the notebook served (loop/mcp_serve.py). Every record says so.
    client: str = ""


def error_result(tool_use_id: str, text: str) -> ToolResultBlock:
    return tool_result(tool_use_id, text, is_error=True)


def mark_started(env: RunEnv, record: CallRecord) -> None:
    """The executor starts the call now (it may still have to parse it)."""
    record.start = now()
    set_status(env, record, "running")


def settle(
    env: RunEnv, record: CallRecord, block: ToolResultBlock, status: CallStatus, *, summary: str | None = None
) -> None:
    """The call's final result, on its record and on the person's row.

    Also how the executor ends calls that never ran or never finished (cancelled siblings, an
    interrupt): they pass the `summary` the person's row shows."""
    record.result = block
    record.is_error = bool(block.get("is_error"))
    if record.start is None:
        record.start = now()
    record.end = now()
    if not record.summary_result:
        record.summary_result = summary if summary is not None else (_first_line(block) if record.is_error else "done")
    set_status(env, record, status)


def note_budget(env: RunEnv, record: CallRecord, block: ToolResultBlock, spilled: str | None, started: float) -> None:
    """The message budget replaced this call's result after the call had settled: record what
    the model receives now, as a stage of its own, and tell the person's row."""
    record.stages.append(
        Stage(
            name="message_budget",
            outcome="spilled" if spilled else "cut",
            detail=spilled or "",
            start=started,
            end=now(),
        )
    )
    record.result = block
    if spilled is not None:
        record.spilled_to = spilled
    env.emit(CallEvent(record=record))


def set_status(env: RunEnv, record: CallRecord, status: CallStatus) -> None:
    record.status = status
    env.emit(CallEvent(record=record))


def _first_line(block: ToolResultBlock) -> str:
    content = block.get("content")
    text = (
        content
        if isinstance(content, str)
        else " ".join(str(b.get("text", "")) for b in content or [] if isinstance(b, dict))
    )
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= 120 else line[:119] + "…"
