"""One tool call through every stage: the single path all calls take.

find -> parse -> validate -> PreToolUse hooks -> permission -> (validate again if a person
approved) -> call -> map -> budget -> PostToolUse / PostToolUseFailure hooks.

Each stage is a small function that either lets the call go on or produces the `is_error`
tool_result that ends it, with a reason the model can act on. Every stage is timed into the
call's `CallRecord`. Nothing raises out of here except cancellation, which the executor turns
into a synthetic result.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any
from collections.abc import Callable

from pydantic import BaseModel, ValidationError

from .budget import ResultBudget
from .hooks import HookEvent, Hooks
from .permissions import Decision, PermissionAnswer, PermissionRequest, PermissionRules, decide, normalize_answer
from .tool import PermissionCheck, Tool, ToolContext, ToolError, maybe_await
from .trace import CallEvent, CallRecord, CallStatus, Stage, now

__all__ = ["RunEnv", "run_tool_use", "error_result", "format_validation_error", "parse_input"]


@dataclass(kw_only=True)
class RunEnv:
    """Everything a call needs from the conversation it belongs to."""

    tools: dict[str, Tool]
    rules: PermissionRules
    hooks: Hooks
    budget: ResultBudget
    make_ctx: Callable[[str], ToolContext]
    mode: Callable[[], str]
    approver: Callable[[PermissionRequest], Any] | None = None
    emit: Callable[[Any], None] = lambda _e: None
    splitter: Callable[[str], list[str] | None] | None = None
    approval_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    stop_requested: bool = False
    stop_reason: str = ""


def error_result(tool_use_id: str, text: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": tool_use_id, "content": text, "is_error": True}


class _Stop(Exception):
    """Ends the pipeline with this result."""

    def __init__(self, block: dict[str, Any], status: CallStatus = "error") -> None:
        self.block = block
        self.status = status


class _Timer:
    def __init__(self, record: CallRecord, name: str) -> None:
        self.stage = Stage(name=name, outcome="ok", start=now())
        record.stages.append(self.stage)

    def done(self, outcome: str = "ok", detail: str = "") -> None:
        self.stage.outcome, self.stage.detail, self.stage.end = outcome, detail, now()


def _set_status(env: RunEnv, record: CallRecord, status: CallStatus) -> None:
    record.status = status
    env.emit(CallEvent(record=record))


# --- parsing ------------------------------------------------------------------------------

_JSON_TYPES = {
    "string": "string", "integer": "integer", "number": "number", "boolean": "boolean",
    "array": "array", "object": "object", "null": "null",
}


def _json_type(value: Any) -> str:
    match value:
        case bool():
            return "boolean"
        case int():
            return "integer"
        case float():
            return "number"
        case str():
            return "string"
        case list():
            return "array"
        case dict():
            return "object"
        case None:
            return "null"
    return type(value).__name__


def _expected_type(model: type[BaseModel], field_name: str) -> str:
    props = model.model_json_schema().get("properties", {})
    prop = props.get(field_name, {})
    if "type" in prop:
        return str(prop["type"])
    options = [o.get("type") for o in prop.get("anyOf", []) if o.get("type") and o.get("type") != "null"]
    return " or ".join(options) if options else "a valid value"


def format_validation_error(tool: Tool, err: ValidationError, raw: dict[str, Any]) -> str:
    lines: list[str] = []
    for e in err.errors():
        loc = ".".join(str(p) for p in e.get("loc", ())) or "(input)"
        top = str(e["loc"][0]) if e.get("loc") else ""
        kind = e.get("type", "")
        if kind == "missing":
            lines.append(f"The required parameter `{loc}` is missing.")
        elif kind == "extra_forbidden":
            lines.append(f"An unexpected parameter `{loc}` was provided.")
        elif kind.endswith("_type") or kind.endswith("_parsing"):
            got = _json_type(e.get("input"))
            expected = _expected_type(tool.input_model, top) if len(e.get("loc", ())) == 1 else kind.split("_")[0]
            lines.append(f"The parameter `{loc}` is expected as `{expected}` but was provided as `{got}`.")
        else:
            lines.append(f"The parameter `{loc}`: {e.get('msg', 'is invalid')}.")
    return (
        f"{tool.name} was called with invalid input:\n- " + "\n- ".join(lines)
        + "\nFix the input to match the tool's schema and call it again."
    )


def _allowed_keys(model: type[BaseModel]) -> set[str] | None:
    if model.model_config.get("extra") == "allow":
        return None
    keys: set[str] = set()
    for name, f in model.model_fields.items():
        keys.add(name)
        if f.alias:
            keys.add(f.alias)
        if isinstance(f.validation_alias, str):
            keys.add(f.validation_alias)
    return keys


def parse_input(tool: Tool, raw: Any) -> BaseModel | str:
    """The parsed input, or the message for the model (unexpected keys are reported too)."""
    if not isinstance(raw, dict):
        return f"{tool.name} input must be a JSON object with the tool's parameters, not {_json_type(raw)}."
    allowed = _allowed_keys(tool.input_model)
    extra = sorted(set(raw) - allowed) if allowed is not None else []
    try:
        parsed = tool.input_model.model_validate(raw)
    except ValidationError as e:
        msg = format_validation_error(tool, e, raw)
        if extra and "unexpected parameter" not in msg:
            msg = msg.replace("\n- ", "\n- " + "".join(f"An unexpected parameter `{k}` was provided.\n- " for k in extra), 1)
        return msg
    if extra:
        lines = "".join(f"\n- An unexpected parameter `{k}` was provided." for k in extra)
        return f"{tool.name} was called with invalid input:{lines}\nFix the input to match the tool's schema and call it again."
    return parsed


def _dump(inp: BaseModel) -> dict[str, Any]:
    return inp.model_dump(mode="json", by_alias=True, exclude_unset=False)


# --- the pipeline -------------------------------------------------------------------------


async def run_tool_use(block: dict[str, Any], env: RunEnv, record: CallRecord) -> dict[str, Any]:
    tool_use_id = str(block.get("id"))
    record.start = now()
    _set_status(env, record, "running")
    status: CallStatus = "done"
    try:
        result = await _pipeline(block, env, record)
        status = "error" if result.get("is_error") else "done"
    except _Stop as stop:
        result, status = stop.block, stop.status
    record.result = result
    record.is_error = bool(result.get("is_error"))
    record.end = now()
    if not record.summary_result:
        record.summary_result = _first_line(result) if record.is_error else "done"
    _set_status(env, record, status)
    assert result.get("tool_use_id") == tool_use_id
    return result


def _first_line(block: dict[str, Any]) -> str:
    content = block.get("content")
    text = content if isinstance(content, str) else " ".join(
        str(b.get("text", "")) for b in content or [] if isinstance(b, dict)
    )
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= 120 else line[:119] + "…"


async def _pipeline(block: dict[str, Any], env: RunEnv, record: CallRecord) -> dict[str, Any]:
    tid = record.tool_use_id
    # find
    t = _Timer(record, "find")
    tool = env.tools.get(record.tool_name)
    if tool is None:
        names = ", ".join(sorted(env.tools)) or "none"
        t.done("error", "unknown tool")
        raise _Stop(error_result(tid, f"No such tool available: {record.tool_name!r}. The tools you can call are: {names}."))
    t.done()
    record.display_name = tool.display_name()
    ctx = env.make_ctx(tid)

    # parse
    t = _Timer(record, "parse")
    parsed = parse_input(tool, block.get("input"))
    if isinstance(parsed, str):
        t.done("error", parsed)
        raise _Stop(error_result(tid, parsed))
    inp: BaseModel = parsed
    t.done()
    record.summary_use = _safe(lambda: tool.summarize_use(inp), "")

    # validate
    await _validate(tool, inp, ctx, record, "validate")

    # PreToolUse hooks
    hook_decision: tuple[str, str] | None = None
    extra_context: list[str] = []
    if env.hooks.has("PreToolUse"):
        t = _Timer(record, "pre_hooks")
        hr = await env.hooks.run(HookEvent(event="PreToolUse", tool_name=tool.name, input=_dump(inp), tool_use_id=tid))
        extra_context.extend(hr.additional_context)
        if hr.stop:
            env.stop_requested, env.stop_reason = True, hr.reason or "a PreToolUse hook stopped the run"
            t.done("stop", env.stop_reason)
            raise _Stop(error_result(tid, f"Not run: a hook stopped the run. {hr.reason}".strip()), "denied")
        if hr.updated_input is not None:
            reparsed = parse_input(tool, hr.updated_input)
            if isinstance(reparsed, str):
                t.done("error", "hook rewrote the input into something invalid")
                raise _Stop(error_result(tid, f"A PreToolUse hook rewrote the input, and the result is invalid: {reparsed}"))
            inp = reparsed
            # The prompt and the person's row must name what will run, not what the model asked.
            record.summary_use = _safe(lambda: tool.summarize_use(inp), "")
            await _validate(tool, inp, ctx, record, "validate_rewritten")
        if hr.decision is not None:
            hook_decision = (hr.decision, hr.reason)
        t.done(hr.decision or ("error" if hr.errors else "ok"), hr.reason)
    record.final_input = _dump(inp)

    # permission
    await _permission(tool, inp, ctx, env, record, hook_decision)

    # call
    _set_status(env, record, "running")
    t = _Timer(record, "call")
    try:
        output = await tool.call(inp, ctx)
    except asyncio.CancelledError:
        t.done("cancelled")
        raise
    except Exception as e:
        # A ToolError is the tool steering the model; anything else is named by its type.
        msg = (str(e) or f"{tool.name} failed.") if isinstance(e, ToolError) else f"{tool.name} failed with {type(e).__name__}: {e}"
        return await _failure(tool, inp, env, record, t, msg)
    t.done()
    record.summary_result = _safe(lambda: tool.summarize_result(output), "done")
    record.detail = _safe(lambda: tool.detail_for_person(inp, output), "")

    # map
    t = _Timer(record, "map")
    try:
        mapped = tool.map_result(output, tid)
        if not isinstance(mapped, dict) or mapped.get("type") != "tool_result":
            raise TypeError(f"map_result must return a tool_result block, not {type(mapped).__name__}")
        mapped = {**mapped, "tool_use_id": tid}
    except Exception as e:
        msg = f"{tool.name} produced a result that could not be converted for you ({type(e).__name__}: {e})."
        return await _failure(tool, inp, env, record, t, msg)
    t.done()
    if mapped.get("is_error"):
        record.call_failed = True

    # budget
    t = _Timer(record, "budget")
    mapped = env.budget.fill_empty(mapped, tool.name)
    mapped, spilled = env.budget.apply_tool_limit(mapped, tool.max_result_chars)
    if spilled is not None:
        record.spilled_to = str(spilled)
    t.done("spilled" if spilled else "ok", str(spilled or ""))

    # PostToolUse hooks
    event = "PostToolUseFailure" if mapped.get("is_error") else "PostToolUse"
    if env.hooks.has(event):
        t = _Timer(record, "post_hooks")
        hr = await env.hooks.run(
            HookEvent(event=event, tool_name=tool.name, input=_dump(inp), tool_use_id=tid, output=output, result=mapped)
        )
        extra_context.extend(hr.additional_context)
        if hr.decision == "deny" and hr.reason:
            extra_context.append(f"A PostToolUse hook flagged this result: {hr.reason}")
        if hr.stop:
            env.stop_requested, env.stop_reason = True, hr.reason or "a PostToolUse hook stopped the run"
        t.done(hr.decision or ("stop" if hr.stop else "ok"), hr.reason)
    return _with_context(mapped, extra_context)


async def _validate(tool: Tool, inp: BaseModel, ctx: ToolContext, record: CallRecord, stage: str) -> None:
    t = _Timer(record, stage)
    try:
        problem = await tool.validate_input(inp, ctx)
    except ToolError as e:
        problem = str(e)
    except Exception as e:
        problem = f"{tool.name} could not check its input ({type(e).__name__}: {e})."
    if problem:
        t.done("error", problem)
        raise _Stop(error_result(record.tool_use_id, problem))
    t.done()


async def _permission(
    tool: Tool, inp: BaseModel, ctx: ToolContext, env: RunEnv, record: CallRecord, hook_decision: tuple[str, str] | None
) -> None:
    t = _Timer(record, "permission")
    try:
        check = await tool.check_permissions(inp, ctx)
    except Exception as e:
        check = PermissionCheck(behavior="ask", message=f"{tool.name}'s permission check failed ({type(e).__name__}: {e})")
    def decision_now() -> Decision:
        return decide(
            tool=tool, inp=inp, ctx=ctx, rules=env.rules, mode=env.mode(), tool_check=check,
            hook_decision=hook_decision, splitter=env.splitter,  # type: ignore[arg-type]
        )

    decision = decision_now()
    if decision.behavior == "ask":
        # One prompt at a time; decide again once it is our turn, since an "always" answer to
        # the prompt before may cover this call now.
        async with env.approval_lock:
            decision = decision_now()
            if decision.behavior == "ask":
                decision = await _ask(tool, inp, ctx, env, record, decision)
    record.decision = decision
    t.done(decision.behavior, f"{decision.source}: {decision.reason}")
    if decision.behavior == "deny":
        raise _Stop(error_result(record.tool_use_id, _denial_text(tool, decision)), "denied")
    if decision.source == "person":
        # The file may have changed while the prompt was open.
        await _validate(tool, inp, ctx, record, "validate_after_approval")


async def _ask(tool: Tool, inp: BaseModel, ctx: ToolContext, env: RunEnv, record: CallRecord, asked: Decision) -> Decision:
    suggested = _safe(lambda: tool.suggest_rule(inp, ctx), tool.name) or tool.name
    if env.approver is None:
        return Decision(
            behavior="deny", source="approver",
            reason=(
                f"{asked.reason}, and no one is available to approve it in this non-interactive run. "
                f"A person can allow it with the rule {suggested!r} (allow=[...]) or a permission mode."
            ),
        )
    try:
        preview = await tool.preview(inp, ctx)
    except Exception as e:
        preview = None
        record.detail = f"(preview failed: {type(e).__name__}: {e})"
    record.preview = preview
    request = PermissionRequest(
        tool_name=tool.name, input=_dump(inp), summary=record.summary_use, suggested_rule=suggested,
        tool_use_id=record.tool_use_id, reason=asked.reason, diff=getattr(preview, "diff", None), preview=preview,
        read_only=tool.is_read_only(inp), destructive=tool.is_destructive(inp), display_name=tool.display_name(),
    )
    _set_status(env, record, "waiting")
    try:
        answer = normalize_answer(await maybe_await(env.approver(request)))
    except asyncio.CancelledError:
        raise
    except Exception as e:
        answer = PermissionAnswer(behavior="deny", message=f"the approval prompt failed ({type(e).__name__}: {e})")
    if answer.behavior == "deny":
        return Decision(behavior="deny", source="approver" if answer.automatic else "person", reason=answer.message)
    if answer.behavior == "always":
        rule = env.rules.add("allow", answer.rule or suggested, source="granted")
        return Decision(behavior="allow", source="person", rule=rule.text, reason=f"always allowed: {rule.text}")
    return Decision(behavior="allow", source="person", reason="allowed once")


def _denial_text(tool: Tool, d: Decision) -> str:
    if d.source == "person":
        base = f"The person declined this {tool.name} call, so nothing was run or changed."
        if d.reason:
            return f"{base} Their reason: {d.reason}\nAdjust your approach to what they said; do not retry the same call unchanged."
        return f"{base} Stop and wait for them to tell you how to proceed; do not retry the same call."
    if d.source == "approver":
        return d.reason or f"This {tool.name} call was not approved, so nothing was run."
    if d.source == "hook":
        return f"A PreToolUse hook blocked this {tool.name} call: {d.reason}"
    return f"Permission to use {tool.name} was denied ({d.reason}). Nothing was run."


async def _failure(tool: Tool, inp: BaseModel, env: RunEnv, record: CallRecord, stage: _Timer, error: str) -> dict[str, Any]:
    """The tool itself failed (in call or map): an error result, then PostToolUseFailure hooks."""
    stage.done("error", error)
    record.call_failed = True
    block = error_result(record.tool_use_id, error)
    context: list[str] = []
    if env.hooks.has("PostToolUseFailure"):
        t = _Timer(record, "post_hooks")
        hr = await env.hooks.run(
            HookEvent(event="PostToolUseFailure", tool_name=tool.name, input=_dump(inp), tool_use_id=record.tool_use_id,
                      error=error, result=block)
        )
        context.extend(hr.additional_context)
        if hr.stop:
            env.stop_requested, env.stop_reason = True, hr.reason or "a PostToolUseFailure hook stopped the run"
        t.done(hr.decision or "ok", hr.reason)
    return _with_context(block, context)


def _with_context(block: dict[str, Any], context: list[str]) -> dict[str, Any]:
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

