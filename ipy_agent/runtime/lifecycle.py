"""One tool call through every stage: the single path all calls take.

find -> parse -> validate -> PreToolUse hooks -> permission -> (validate again if a person
approved) -> call -> map -> budget -> PostToolUse / PostToolUseFailure hooks.

Each stage is a small function of the `Call` so far that returns `GoOn` (the next stage runs)
or `Finished` (the call ends here with an `is_error` tool_result whose text the model can act
on). `run_stages` times each one into the call's `CallRecord`. find and parse run in `prepare`,
when the executor takes the call in: it needs the parsed input's safety flags to schedule the
call, and the input is parsed only there. Nothing raises out of here except cancellation,
which the executor turns into a synthetic result.

This module writes every field of a `CallRecord` except the ones that say which call it is
(set by the executor when it creates the record) and its batch (the executor's scheduling);
status changes and the call's end go through run_env.py, which the executor shares.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from ipy_agent.base.secrets import redact, redact_block
from ipy_agent.contract.decision import UNDECIDED, Behavior, CallDecision
from ipy_agent.contract.hooks import HookEvent
from ipy_agent.contract.tool import PermissionPreview, Tool, ToolError
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.contract.tool_input import dump_input, parse_input
from ipy_agent.history.blocks import ToolResultBlock, ToolUseBlock
from ipy_agent.permissions.decide import decide_permission, denial_text

from .run_env import RunEnv, error_result, set_status, settle
from .trace import CallRecord, CallStatus, Stage, now

__all__ = [
    "Call",
    "Finished",
    "GoOn",
    "prepare",
    "run_call",
]


@dataclass(frozen=True, kw_only=True)
class GoOn:
    """The stage passed; `outcome` and `detail` go into the trace."""

    outcome: str = "ok"
    detail: str = ""


@dataclass(frozen=True, kw_only=True)
class Finished:
    """The call ends at this stage with `block` (an `is_error` tool_result)."""

    block: ToolResultBlock
    status: CallStatus = "error"
    outcome: str = "error"
    detail: str = ""


@dataclass(kw_only=True)
class Call:
    """One call between its stages: what the stages so far found, for the stages after them."""

    block: ToolUseBlock
    env: RunEnv
    record: CallRecord
    tool: Tool | None = None
    inp: BaseModel | None = None  # parsed once, in `prepare`; replaced only by a hook's rewrite
    ended: Finished | None = None  # find or parse ended the call before it was scheduled
    rewritten: bool = False
    hook_decision: tuple[Behavior, str] | None = None
    context: list[str] = field(default_factory=list)  # additional context from hooks, appended at the end
    output: Any = None
    failure: str | None = None  # the tool itself failed (in call or map): what the model is told
    result: ToolResultBlock | None = None  # the tool_result as it stands after the last stage
    decided: CallDecision = UNDECIDED  # what the permission stage decided, for the tool's `call`
    _ctx: ToolContext | None = None

    @property
    def ctx(self) -> ToolContext:
        if self._ctx is None:
            self._ctx = self.env.make_ctx(self.record.tool_use_id)
        return self._ctx

    @property
    def parsed(self) -> tuple[Tool, BaseModel]:
        assert self.tool is not None and self.inp is not None, "a stage after parse ran on a call that did not parse"
        return self.tool, self.inp


# A stage after scheduling: the call so far in, "go on" or "finished" out.
StageFn = Callable[[Call], Awaitable["GoOn | Finished"]]


def _timed_sync(call: Call, name: str, step: Callable[[Call], GoOn | Finished]) -> GoOn | Finished:
    stage = Stage(name=name, outcome="ok", start=now())
    call.record.stages.append(stage)
    result = step(call)
    stage.outcome, stage.detail, stage.end = result.outcome, result.detail, now()
    return result


async def _timed(call: Call, name: str, step: StageFn) -> GoOn | Finished:
    stage = Stage(name=name, outcome="ok", start=now())
    call.record.stages.append(stage)
    try:
        result = await step(call)
    except asyncio.CancelledError:
        stage.outcome, stage.end = "cancelled", now()
        raise
    stage.outcome, stage.detail, stage.end = result.outcome, result.detail, now()
    return result


# --- taking the call in: find and parse ----------------------------------------------------


def prepare(block: ToolUseBlock, env: RunEnv, record: CallRecord) -> Call:
    """Find the tool and parse the input (timed stages); the safety flags go on the record."""
    call = Call(block=block, env=env, record=record)
    for name, step in (("find", _find), ("parse", _parse)):
        result = _timed_sync(call, name, step)
        if isinstance(result, Finished):
            call.ended = result
            return call
    tool, inp = call.parsed
    record.concurrency_safe = tool.is_concurrency_safe(inp)
    record.read_only = tool.is_read_only(inp)
    record.destructive = tool.is_destructive(inp)
    record.summary_use = _safe(lambda: tool.summarize_use(inp), "")
    return call


def _find(call: Call) -> GoOn | Finished:
    name = call.record.tool_name
    call.tool = call.env.tools.get(name)
    if call.tool is None:
        names = ", ".join(sorted(call.env.tools)) or "none"
        text = f"No such tool available: {name!r}. The tools you can call are: {names}."
        return Finished(block=error_result(call.record.tool_use_id, text), detail="unknown tool")
    return GoOn()


def _parse(call: Call) -> GoOn | Finished:
    assert call.tool is not None
    parsed = parse_input(call.tool, call.block.get("input"))
    if isinstance(parsed, str):
        return Finished(block=error_result(call.record.tool_use_id, parsed), detail=parsed)
    call.inp = parsed
    return GoOn()


# --- running it: the stages after scheduling -----------------------------------------------


async def _validate(call: Call) -> GoOn | Finished:
    tool, inp = call.parsed
    try:
        problem = await tool.validate_input(inp, call.ctx)
    except ToolError as e:
        problem = str(e)
    except Exception as e:
        problem = f"{tool.name} could not check its input ({type(e).__name__}: {e})."
    if problem:
        return Finished(block=error_result(call.record.tool_use_id, problem), detail=problem)
    try:  # the row names what the call acts on as the person sees it, now that the input is valid
        described = await tool.describe_use(inp, call.ctx)
    except Exception:
        described = None
    if described:
        call.record.summary_use = described
    return GoOn()


async def _pre_hooks(call: Call) -> GoOn | Finished:
    tool, inp = call.parsed
    env, tid = call.env, call.record.tool_use_id
    hr = await env.hooks.run(HookEvent(event="PreToolUse", tool_name=tool.name, input=dump_input(inp), tool_use_id=tid))
    call.context.extend(hr.additional_context)
    if hr.stop:
        env.stop_requested, env.stop_reason = True, hr.reason or "a PreToolUse hook stopped the run"
        text = f"Not run: a hook stopped the run. {hr.reason}".strip()
        return Finished(block=error_result(tid, text), status="denied", outcome="stop", detail=env.stop_reason)
    if hr.updated_input is not None:
        reparsed = parse_input(tool, hr.updated_input)
        if isinstance(reparsed, str):
            text = f"A PreToolUse hook rewrote the input, and the result is invalid: {reparsed}"
            return Finished(block=error_result(tid, text), detail="hook rewrote the input into something invalid")
        call.inp, call.rewritten = reparsed, True
        # The prompt and the person's row must name what will run, not what the model asked.
        call.record.summary_use = _safe(lambda: tool.summarize_use(reparsed), "")
    if hr.decision is not None:
        call.hook_decision = (hr.decision, hr.reason)
    return GoOn(outcome=hr.decision or ("error" if hr.errors else "ok"), detail=hr.reason)


async def _permission(call: Call) -> GoOn | Finished:
    tool, inp = call.parsed
    record = call.record
    record.final_input = dump_input(inp)
    env = call.env

    def before_prompt(preview: PermissionPreview | None, preview_error: str) -> None:
        record.preview = preview
        if preview_error:
            record.detail = preview_error
        set_status(env, record, "waiting")

    decision = await decide_permission(
        tool,
        inp,
        call.ctx,
        rules=env.rules,
        mode=env.mode(),
        hook_decision=call.hook_decision,
        approver=env.approver,
        lock=env.approval_lock,
        summary=record.summary_use,
        before_prompt=before_prompt,
    )
    record.decision = decision
    # Given to the tool's `call`: it may contain what no one approved (Bash's sandbox), it reads
    # what the person answered to the call's questions, and it writes where its check looked.
    call.decided = CallDecision(source=decision.source, answers=decision.answers, writes=decision.writes)
    detail = f"{decision.source}: {decision.reason}"
    if decision.behavior == "deny":
        block = error_result(record.tool_use_id, denial_text(tool, decision))
        return Finished(block=block, status="denied", outcome="deny", detail=detail)
    return GoOn(outcome=decision.behavior, detail=detail)


async def _call(call: Call) -> GoOn | Finished:
    tool, inp = call.parsed
    set_status(call.env, call.record, "running")
    try:
        call.output = await tool.call(inp, call.ctx, call.decided)
    except asyncio.CancelledError:
        raise
    except Exception as e:
        # A ToolError is the tool steering the model; anything else is named by its type.
        call.failure = (
            (str(e) or f"{tool.name} failed.")
            if isinstance(e, ToolError)
            else f"{tool.name} failed with {type(e).__name__}: {e}"
        )
        return GoOn(outcome="error", detail=call.failure)
    call.record.summary_result = _safe(lambda: tool.summarize_result(call.output), "done")
    call.record.detail = redact(_safe(lambda: tool.detail_for_person(inp, call.output), ""))
    return GoOn()


async def _map(call: Call) -> GoOn | Finished:
    tool, _ = call.parsed
    tid = call.record.tool_use_id
    try:
        mapped = tool.map_result(call.output, tid)  # a ToolResultBlock, by the contract's type
        block = mapped.copy()
        block["tool_use_id"] = tid
    except Exception as e:
        call.failure = f"{tool.name} produced a result that could not be converted for you ({type(e).__name__}: {e})."
        return GoOn(outcome="error", detail=call.failure)
    # A credential from the kernel's environment never reaches the model, the trace, a spill file
    # or the notebook.
    call.result = redact_block(block)
    return GoOn()


async def _budget(call: Call) -> GoOn | Finished:
    tool, _ = call.parsed
    assert call.result is not None
    block = call.env.budget.fill_empty(call.result, tool.name)
    call.result, spilled = call.env.budget.apply_tool_limit(block, call.env.result_limit(tool))
    if spilled is not None:
        call.record.spilled_to = str(spilled)
        return GoOn(outcome="spilled", detail=str(spilled))
    return GoOn()


async def _post_hooks(call: Call) -> GoOn | Finished:
    tool, inp = call.parsed
    env, tid = call.env, call.record.tool_use_id
    result = call.result if call.failure is None else error_result(tid, call.failure)
    event = (
        "PostToolUseFailure"
        if call.failure is not None or (result is not None and result.get("is_error"))
        else "PostToolUse"
    )
    hr = await env.hooks.run(
        HookEvent(
            event=event,
            tool_name=tool.name,
            input=dump_input(inp),
            tool_use_id=tid,
            output=call.output if call.failure is None else None,
            error=call.failure,
            result=result,
        )
    )
    call.context.extend(hr.additional_context)
    if hr.decision == "deny" and hr.reason and call.failure is None:
        call.context.append(f"A PostToolUse hook flagged this result: {hr.reason}")
    if hr.stop:
        env.stop_requested, env.stop_reason = True, hr.reason or f"a {event} hook stopped the run"
    return GoOn(outcome=hr.decision or ("stop" if hr.stop else "ok"), detail=hr.reason)


def _post_event(call: Call) -> str:
    if call.failure is not None or (call.result is not None and call.result.get("is_error")):
        return "PostToolUseFailure"
    return "PostToolUse"


# Each stage with when it applies; a stage that does not apply leaves no entry in the trace.
_STAGES: tuple[tuple[str, StageFn, Callable[[Call], bool]], ...] = (
    ("validate", _validate, lambda c: True),
    ("pre_hooks", _pre_hooks, lambda c: c.env.hooks.has("PreToolUse")),
    ("validate_rewritten", _validate, lambda c: c.rewritten),
    ("permission", _permission, lambda c: True),
    # The file may have changed while the prompt was open.
    ("validate_after_approval", _validate, lambda c: getattr(c.record.decision, "source", "") == "person"),
    ("call", _call, lambda c: True),
    ("map", _map, lambda c: c.failure is None),
    ("budget", _budget, lambda c: c.failure is None),
    ("post_hooks", _post_hooks, lambda c: c.env.hooks.has(_post_event(c))),
)


async def run_stages(call: Call) -> Finished:
    """The stages after scheduling; the call's final tool_result and status."""
    if call.ended is not None:
        return call.ended
    for name, step, applies in _STAGES:
        if not applies(call):
            continue
        result = await _timed(call, name, step)
        if isinstance(result, Finished):
            return result
    tid = call.record.tool_use_id
    if call.failure is not None:
        call.record.call_failed = True
        block = error_result(tid, call.failure)
    else:
        assert call.result is not None
        block = call.result
        call.record.call_failed = bool(block.get("is_error"))
    block = _with_context(block, call.context)
    return Finished(block=block, status="error" if block.get("is_error") else "done", outcome="ok")


async def run_call(call: Call) -> ToolResultBlock:
    """Run a prepared, started call to its end; its record is settled and emitted."""
    end = await run_stages(call)
    block = redact_block(end.block)  # failures and hook context too: no credential reaches the model
    settle(call.env, call.record, block, end.status)
    assert block.get("tool_use_id") == call.record.tool_use_id
    return block


def _with_context(block: ToolResultBlock, context: list[str]) -> ToolResultBlock:
    if not context:
        return block
    note = "\n".join(context)
    content = block.get("content")
    if isinstance(content, str):
        return {**block, "content": f"{content}\n\n{note}"}
    return {**block, "content": [*(content or []), {"type": "text", "text": note}]}


def _safe(fn: Callable[[], Any], default: Any) -> Any:
    try:
        return fn()
    except Exception:
        return default
