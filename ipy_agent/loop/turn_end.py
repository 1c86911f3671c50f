"""How a turn ends: each way one model request and its tool calls can finish, and what it leaves.

The loop (loop/agent.py: `Agent._turn`) says which of these applies; each one leaves the history a
valid conversation and tells the person what happened through `emit`. A turn ends

- with its tool calls answered (`answer_tools`): the loop goes on, unless a hook stopped the run;
- with a reply that calls no tools (`after_reply`): after pause_turn the loop goes on; a refusal
  or the max_tokens limit ends the run with a notice; otherwise the run ends, unless a Stop hook
  sends the agent on;
- with the model failing (`model_failed`): tools already started from complete blocks finish,
  and their results are kept;
- early (`close_early`): an interrupt or an internal error answers every tool_use once.

Before the first turn, a UserPromptSubmit hook may end the run (`prompt_blocks`). A prompt the
model never answered (no key, network down) is taken out of the history (`forget_prompt`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from ipy_agent.contract.hooks import HookEvent, Hooks
from ipy_agent.history.blocks import ContentBlock, Message
from ipy_agent.history.messages import append_user, clean_content, close_turn, last_text
from ipy_agent.models.base import MessageComplete, ModelError
from ipy_agent.runtime.trace import AgentEvent, NoticeEvent, RunResult, StopReason, now

from .turn import Turn

__all__ = [
    "after_reply",
    "answer_tools",
    "close_early",
    "forget_prompt",
    "forget_unanswered",
    "model_failed",
    "prompt_blocks",
]

Messages = list[Message]
Emit = Callable[[AgentEvent], None]


async def answer_tools(turn: Turn, messages: Messages, emit: Emit) -> RunResult | None:
    """Every tool_use answered in order (within the message budget); a hook may stop the run."""
    append_user(messages, await turn.executor.results())
    turn.answered = True
    if turn.env.stop_requested:
        emit(NoticeEvent(text=f"Stopped by a hook: {turn.env.stop_reason}", level="warning"))
        return RunResult(stop_reason="stopped_by_hook", text=turn.env.stop_reason)
    return None


async def after_reply(reply: MessageComplete, messages: Messages, hooks: Hooks, emit: Emit) -> RunResult | None:
    """A reply without tool calls: go on after pause_turn, else end (Stop hooks may object)."""
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
    return await _stop_hooks(messages, hooks, emit)


async def _stop_hooks(messages: Messages, hooks: Hooks, emit: Emit) -> RunResult | None:
    text = last_text(messages)
    if not hooks.has("Stop"):
        return RunResult(stop_reason="end_turn", text=text)
    hr = await hooks.run(HookEvent(event="Stop", last_message=text))
    if hr.errors:
        # A broken Stop hook must not keep the agent going (its error is no instruction).
        emit(NoticeEvent(text="A Stop hook failed: " + "; ".join(hr.errors), level="error"))
        return RunResult(stop_reason="end_turn", text=text)
    if hr.decision == "deny" and not hr.stop:
        # A Stop hook that blocks stopping sends its reason back and the agent goes on.
        append_user(messages, [{"type": "text", "text": hr.reason or "A Stop hook asked you to continue."}])
        return None
    return RunResult(stop_reason="stopped_by_hook" if hr.stop else "end_turn", text=text)


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


async def prompt_blocks(prompt: str | list[ContentBlock], hooks: Hooks, emit: Emit) -> list[ContentBlock] | RunResult:
    """The person's request as content blocks, with what UserPromptSubmit hooks add; or the
    run's end when a hook blocks it."""
    blocks: list[ContentBlock] = [{"type": "text", "text": prompt}] if isinstance(prompt, str) else list(prompt)
    text = "\n".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
    hr = await hooks.run(HookEvent(event="UserPromptSubmit", prompt=text))
    if hr.decision == "deny" or hr.stop:
        emit(NoticeEvent(text=f"Prompt blocked by a UserPromptSubmit hook: {hr.reason}", level="warning"))
        return RunResult(stop_reason="blocked_by_hook", text=hr.reason)
    return blocks + [{"type": "text", "text": c} for c in hr.additional_context]


def forget_unanswered(messages: Messages, before: Messages, emit: Emit) -> bool:
    """`forget_prompt` when no reply of the model reached the history since it looked like
    `before`; whether it did."""
    if any(m["role"] == "assistant" for m in messages[len(before) :]):
        return False
    forget_prompt(messages, before, emit)
    return True


def forget_prompt(messages: Messages, before: Messages, emit: Emit) -> None:
    """The model never answered: put the history back as it was before the prompt, or the prompt
    would be merged into the next request."""
    messages[:] = before
    emit(
        NoticeEvent(
            text="The model did not answer, so this request was not added to the "
            "conversation; run it again when the problem is fixed.",
            level="info",
        )
    )
