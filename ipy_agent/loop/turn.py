"""One turn: a model request and its tool calls, from building the request to the turn's end.

`run_turn(agent)` is the whole turn, and the agent's loop (agent.py: `Agent._run`) calls it once
per turn until one returns how the run ends. It reads top to bottom:

1. **The request**: MCP servers started or brought up to date (`sync_mcp`), then `begin_turn`:
   the tools the registry exposes this turn in their API form (`offer_tools`: a tool whose
   description fails is hidden, not the request); what tools have to tell the model since its
   last turn (`remind`: a background command ended); the turn's record and its executor; the
   system prompt for the tools offered, the history itself, and how the previous turn's calls
   ended (`previous_calls`: what a replay branches on).
2. **The model** (`stream_reply`, through the context manager, which keeps the window in bounds
   and every request passing the meter): text goes to the person as it comes, and a tool call
   starts as soon as its block is whole; `take_reply` puts the whole message in the history and
   starts the calls not started while streaming.
3. **The tool calls** run through the runtime's lifecycle (runtime/executor.py); `answer_tools`
   puts every result in the history, in order, and the loop goes on unless a hook stopped the run.
4. **The turn's end**, when no tool was called (`after_reply`): after pause_turn the loop goes
   on; a refusal or the max_tokens limit ends the run with a notice (the person asks the agent
   to continue); otherwise the run ends, unless a Stop hook sends the agent on, or the verify
   gate has the model answer NotebookVerify's report first (`verify_first`, loop/verify_gate.py). When the model
   fails (`model_failed`), tools already started from complete blocks finish and their results
   are kept; an interrupt or an internal error ends the turn early (`close_early`), answering
   every tool_use once.

Each way leaves the history a valid conversation (`Turn` keeps what the turn has put into it so
far) and tells the person what happened through `emit`. The records a run returns and keeps
(`RunResult`, `TurnRecord`) are in runtime/trace.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

from ipy_agent.context import ContextManager
from ipy_agent.contract.hooks import HookEvent, Hooks
from ipy_agent.contract.tool import Tool
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.history.blocks import ContentBlock, Message, ToolSpec, ToolUseBlock
from ipy_agent.history.messages import append_assistant, append_user, clean_content, close_turn, last_text
from ipy_agent.history.tool_ids import HistoryIds, ToolUseIds
from ipy_agent.mcp import McpManager
from ipy_agent.models.base import (
    BlockComplete,
    CallOutcome,
    MessageComplete,
    Model,
    ModelError,
    ModelRequest,
    TextDelta,
    ThinkingDelta,
)
from ipy_agent.permissions.decide import Approver
from ipy_agent.permissions.rules import PermissionRules
from ipy_agent.runtime.budget import ResultBudget
from ipy_agent.runtime.conversation import Conversation
from ipy_agent.runtime.executor import INTERRUPTED_TEXT, ToolExecutor
from ipy_agent.runtime.registry import Exposure, ToolRegistry
from ipy_agent.runtime.run_env import RunEnv
from ipy_agent.runtime.trace import (
    AgentEvent,
    CallRecord,
    NoticeEvent,
    RunResult,
    StopReason,
    TextEvent,
    ThinkingEvent,
    TurnEvent,
    TurnRecord,
    now,
)

from .verify_gate import VerifyGate

__all__ = ["INTERRUPTED_NOTICE", "Turn", "TurnAgent", "interrupted", "offer_tools", "run_turn"]

Messages = list[Message]
Emit = Callable[[AgentEvent], None]

INTERRUPT_NOTE = "[The person interrupted this request.]"
INTERRUPTED_NOTICE = "Interrupted."  # the notice of an interrupted run (UIs that show the outcome skip it)
_ASKED = ("person", "approver")


class TurnAgent(Conversation, Protocol):
    """What a turn needs of the agent whose turn it is (`Agent`), besides the conversation."""

    registry: ToolRegistry
    mcp: McpManager
    budget: ResultBudget
    context_manager: ContextManager  # the model, as the turn streams it
    spill_dir: Path
    simple: bool
    streaming_tools: bool
    max_concurrency: int
    # The loop's own state across turns: batch numbers, and the tool_use ids in the history.
    _batches: list[int]
    _history_ids: HistoryIds
    verify_before_done: bool
    verify_gate: VerifyGate
    stop_hook_active: bool  # a Stop hook sent the agent on in this run (the hook's input says so)

    def system(self, exposure: Exposure | None = None) -> str: ...

    @property
    def ask_person(self) -> Approver | None: ...  # the approver, firing the Notification hooks (ask_person.py)


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


async def run_turn(agent: TurnAgent) -> RunResult | None:
    """One model request and its tool calls. None: the loop goes on."""
    turn: Turn | None = None
    try:
        await sync_mcp(agent.mcp, agent.registry, agent.ask_person, agent.emit, roots=agent.tool_context().all_dirs())
        turn, request = begin_turn(agent)
        try:
            # The context window is managed here, and only here: the context manager streams the
            # model's reply after clearing or compacting the history to fit, and retries a
            # "prompt is too long" once after compacting.
            reply = await stream_reply(
                agent.context_manager, request, turn, emit=agent.emit, streaming_tools=agent.streaming_tools
            )
        except ModelError as e:
            return await model_failed(e, turn, agent.messages, agent.emit)
        agent.usage += reply.usage  # its cost was settled by the meter the request passed
        take_reply(turn, reply, agent.messages, agent.emit)
        if turn.tool_uses:
            return await answer_tools(turn, agent.messages, agent.emit)
        end = await after_reply(reply, agent.messages, agent.hooks, agent.emit, stop_hook_active=agent.stop_hook_active)
        if end is None and reply.stop_reason != "pause_turn":
            agent.stop_hook_active = True  # a Stop hook sent the agent on: the next Stop says so
        if end is not None and end.stop_reason == "end_turn" and await verify_first(agent, turn):
            return None  # the model answers the verify report first (loop/verify_gate.py)
        return end
    except asyncio.CancelledError:
        await close_early(turn, agent.messages, INTERRUPTED_TEXT, INTERRUPT_NOTE)
        return interrupted(agent.messages, agent.emit, len(agent.turns))
    except Exception as e:
        # A bug in the runtime or in a custom tool's contract: end the run, keep the history valid.
        error = f"internal error ({type(e).__name__}: {e}); the run was stopped"
        await close_early(turn, agent.messages, f"Not run: the agent stopped because of an {error}.", None)
        agent.emit(NoticeEvent(text=error.capitalize(), level="error"))
        return RunResult(stop_reason="error", text=error, error=error, error_kind="internal")


# --- 1. the request -------------------------------------------------------------------------------


def begin_turn(agent: TurnAgent) -> tuple[Turn, ModelRequest]:
    """Offer the tools, open the turn's record and executor, and build the request."""
    exposure, api_tools = offer_tools(
        agent.registry, agent.rules, agent.tool_context(), simple=agent.simple, emit=agent.emit
    )
    remind(agent.messages, agent.tools, agent.tool_context(), agent.emit)  # a background command ended...
    record = TurnRecord(turn=len(agent.turns) + 1, offered=exposure.names, hidden=dict(exposure.hidden))
    agent.turns.append(record)
    env = RunEnv(
        tools={t.name: t for t in exposure.offered},
        rules=agent.rules,
        hooks=agent.hooks,
        budget=agent.budget,
        make_ctx=agent.tool_context,
        mode=lambda: agent.permission_mode,
        approver=agent.ask_person,
        emit=agent.emit,
        result_limit=agent.registry.result_limit,
    )
    executor = ToolExecutor(
        env, turn=record.turn, trace=agent.trace, batch_counter=agent._batches, max_concurrency=agent.max_concurrency
    )
    # The history itself, not a copy (a model that keeps the request copies it: ModelRequest).
    calls = previous_calls(agent.trace, record.turn - 1, agent.messages)  # what a replay branches on
    places = (("<cwd>", str(agent.cwd)), ("<spill>", str(agent.spill_dir)))
    request = ModelRequest(system=agent.system(exposure), messages=agent.messages, tools=api_tools, calls=calls)
    agent.emit(TurnEvent(turn=record.turn, phase="start"))
    ids = ToolUseIds(agent._history_ids.synced(agent.messages))
    return Turn(record=record, env=env, executor=executor, ids=ids), replace(request, places=places)


async def sync_mcp(
    mcp: McpManager, registry: ToolRegistry, approver: Approver | None, emit: Emit, *, roots: tuple[Path, ...] = ()
) -> None:
    """MCP servers: start them at the first request that needs them (asking about project
    ones), pick up changed tool lists, tell the person what is down; then offer their tools."""
    if mcp.idle:
        return

    def record(text: str, question_id: str) -> None:  # a server's question and the answer, in the run's record
        emit(NoticeEvent(text=text, level="info", question_id=question_id))

    for level, text in await mcp.sync(approver, notify=record, roots=roots or None):
        emit(NoticeEvent(text=text, level=level))
    mcp.skipped.update(registry.set_group("mcp", mcp.tools()))


def offer_tools(
    registry: ToolRegistry, rules: PermissionRules, ctx: ToolContext, *, simple: bool, emit: Emit | None
) -> tuple[Exposure, list[ToolSpec]]:
    """The tools for this request and their API form; a tool whose description fails is hidden
    (and the person is told, when `emit` is given)."""
    exposure = registry.exposed(ctx, rules, simple=simple)
    offered, hidden = [], dict(exposure.hidden)
    api: list[ToolSpec] = []
    for tool in exposure.offered:
        try:
            api.append(tool.to_api(ctx))
            offered.append(tool)
        except Exception as e:
            hidden[tool.name] = f"its description failed ({type(e).__name__}: {e})"
            if emit is not None:
                emit(NoticeEvent(text=f"Tool {tool.name} is hidden this turn: {hidden[tool.name]}", level="warning"))
    return Exposure(offered=tuple(offered), hidden=hidden), api


def remind(messages: list[Message], tools: Sequence[Tool], ctx: ToolContext, emit: Emit) -> None:
    """What tools have to tell the model since its last turn (`Tool.take_reminders`): added to
    the person's last message, which ends the history when a turn begins, and shown in the cell."""
    notes: list[str] = []
    for tool in tools:
        try:
            notes += tool.take_reminders(ctx)
        except Exception:  # news is a courtesy; a broken tool must not stop the turn
            continue
    if not notes or not messages or messages[-1]["role"] != "user":
        return
    for note in notes:
        emit(NoticeEvent(text=note, level="info"))
    text = "\n".join(notes)
    append_user(messages, [{"type": "text", "text": f"<system-reminder>\n{text}\n</system-reminder>"}])


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


# --- 2. the model's reply -------------------------------------------------------------------------


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


# --- 3. and 4. the tool calls answered, or the turn's end -----------------------------------------


async def answer_tools(turn: Turn, messages: Messages, emit: Emit) -> RunResult | None:
    """Every tool_use answered in order (within the message budget); a hook may stop the run."""
    append_user(messages, await turn.executor.results())
    turn.answered = True
    if turn.env.stop_requested:
        emit(NoticeEvent(text=f"Stopped by a hook: {turn.env.stop_reason}", level="warning"))
        return RunResult(stop_reason="stopped_by_hook", text=turn.env.stop_reason)
    return None


async def after_reply(
    reply: MessageComplete, messages: Messages, hooks: Hooks, emit: Emit, *, stop_hook_active: bool = False
) -> RunResult | None:
    """A reply without tool calls: go on after pause_turn, else end (Stop hooks may object;
    `stop_hook_active`: one already did in this run, which a hook reads to let the agent stop)."""
    match reply.stop_reason:
        case "pause_turn":
            return None if clean_content(reply.content) else RunResult(stop_reason="end_turn", text="")
        case "refusal":
            emit(NoticeEvent(text="The model declined to continue with this request (refusal).", level="warning"))
            return RunResult(stop_reason="refusal", text=last_text(messages))
        case "max_tokens":
            emit(
                NoticeEvent(
                    text="The reply was cut off at the max_tokens limit; ask the agent to continue.", level="warning"
                )
            )
            return RunResult(stop_reason="max_tokens", text=last_text(messages))
    return await _stop_hooks(messages, hooks, emit, stop_hook_active)


async def _stop_hooks(messages: Messages, hooks: Hooks, emit: Emit, active: bool) -> RunResult | None:
    text = last_text(messages)
    if not hooks.has("Stop"):
        return RunResult(stop_reason="end_turn", text=text)
    hr = await hooks.run(HookEvent(event="Stop", last_message=text, stop_hook_active=active))
    if hr.errors:
        # A broken Stop hook must not keep the agent going (its error is no instruction).
        emit(NoticeEvent(text="A Stop hook failed: " + "; ".join(hr.errors), level="error"))
        return RunResult(stop_reason="end_turn", text=text)
    if hr.decision == "deny" and not hr.stop:
        # A Stop hook that blocks stopping sends its reason back and the agent goes on.
        append_user(messages, [{"type": "text", "text": hr.reason or "A Stop hook asked you to continue."}])
        return None
    return RunResult(stop_reason="stopped_by_hook" if hr.stop else "end_turn", text=text)


async def verify_first(agent: TurnAgent, turn: Turn) -> bool:
    """The verify gate: a run that changed the notebook hands NotebookVerify's report to the
    model before it ends; True: the run goes on."""
    return await agent.verify_gate.check(
        enabled=agent.verify_before_done,
        trace=agent.trace,
        turn=turn.record.turn,
        executor=turn.executor,
        messages=agent.messages,
        emit=agent.emit,
    )


async def model_failed(err: ModelError, turn: Turn, messages: Messages, emit: Emit) -> RunResult:
    turn.record.end, turn.record.stop_reason = now(), "error"
    if turn.executor.submitted:
        # Tools already started from complete blocks: let them finish and keep the truth.
        turn.appended, turn.answered = close_turn(
            messages,
            completed=turn.completed,
            results=await turn.executor.results(),
            appended=turn.appended,
            answered=turn.answered,
            note=None,
        )
    emit(NoticeEvent(text=str(err), level="error"))
    kind = getattr(err, "kind", "other")
    stop: StopReason = "budget_exceeded" if kind == "budget_exceeded" else "error"
    return RunResult(stop_reason=stop, text=str(err), error=str(err), error_kind=kind)


async def close_early(turn: Turn | None, messages: Messages, reason: str, note: str | None) -> None:
    """End a turn early (interrupt or internal error) with every tool_use answered once."""
    task = asyncio.current_task()
    if task is not None:
        while task.uncancel():
            pass
    if turn is None:
        return
    turn.appended, turn.answered = close_turn(
        messages,
        completed=turn.completed,
        results=turn.executor.interrupt(reason),
        appended=turn.appended,
        answered=turn.answered,
        note=note,
    )
    try:
        await turn.executor.drain()  # let cancelled tools kill their processes
    except asyncio.CancelledError:
        if task is not None:
            task.uncancel()  # a second interrupt while cleaning up: the history is already valid


def interrupted(messages: Messages, emit: Emit, turns: int) -> RunResult:
    emit(NoticeEvent(text=INTERRUPTED_NOTICE, level="warning"))
    return RunResult(stop_reason="interrupted", text=last_text(messages), turns=turns)
