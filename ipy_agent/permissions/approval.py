"""The permission stage's work: decide, ask a person when the decision is "ask", word a denial.

`decide()` (permissions.py) is pure: rules, mode, the tool's and the hooks' opinions. Here is
what surrounds it for one call: prompts come one at a time, the decision is taken again once it
is this call's turn (an "always" answer to the prompt before may cover it now), a run with no
approver denies instead of asking (fail closed), and the model is told why in words it can act
on. The call's record is written by the lifecycle; this module only reports back through
`before_prompt`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace

from pydantic import BaseModel

from ipy_agent.contract.decision import Behavior, PermissionMode
from ipy_agent.contract.review import ReviewAnswer, StagedReview
from ipy_agent.contract.tool import PermissionCheck, PermissionPreview, Tool, maybe_await
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.contract.tool_input import dump_input

from .decide import (
    Approver,
    Decision,
    PermissionAnswer,
    PermissionRequest,
    PermissionRules,
    decide,
    normalize_answer,
)

__all__ = ["decide_permission", "denial_text"]


async def decide_permission(
    tool: Tool,
    inp: BaseModel,
    ctx: ToolContext,
    *,
    rules: PermissionRules,
    mode: PermissionMode,
    hook_decision: tuple[Behavior, str] | None,
    approver: Approver | None,
    lock: asyncio.Lock,
    summary: str,
    before_prompt: Callable[[PermissionPreview | None, str], None],
) -> Decision:
    """The final decision for this call, asking the approver when the rules say "ask".

    `before_prompt(preview, preview_error)` runs just before the approver is called."""
    try:
        check = await tool.check_permissions(inp, ctx)
    except Exception as e:
        check = PermissionCheck(
            behavior="ask", message=f"{tool.name}'s permission check failed ({type(e).__name__}: {e})"
        )

    def decision_now() -> Decision:
        return decide(
            tool=tool,
            inp=inp,
            ctx=ctx,
            rules=rules,
            mode=mode,
            tool_check=check,
            hook_decision=hook_decision,
        )

    decision = decision_now()
    if decision.behavior != "ask":
        return replace(decision, writes=check.writes)
    # One prompt at a time; decide again once it is our turn, since an "always" answer to the
    # prompt before may cover this call now.
    async with lock:
        decision = decision_now()
        if decision.behavior == "ask":
            decision = await _ask(tool, inp, ctx, rules, approver, summary, decision, before_prompt)
    return replace(decision, writes=check.writes)  # the call writes where the check looked


async def _ask(
    tool: Tool,
    inp: BaseModel,
    ctx: ToolContext,
    rules: PermissionRules,
    approver: Approver | None,
    summary: str,
    asked: Decision,
    before_prompt: Callable[[PermissionPreview | None, str], None],
) -> Decision:
    suggested = _safe_rule(tool, inp, ctx)
    if approver is None:
        return Decision(
            behavior="deny",
            source="approver",
            reason=(
                f"{asked.reason}, and no one is available to approve it in this non-interactive run. "
                f"A person can allow it with the rule {suggested!r} (allow=[...]) or a permission mode."
            ),
        )
    preview_error = ""
    try:
        preview = await tool.preview(inp, ctx)
    except Exception as e:
        preview, preview_error = None, f"(preview failed: {type(e).__name__}: {e})"
    request = PermissionRequest(
        tool_name=tool.name,
        input=dump_input(inp),
        summary=summary,
        suggested_rule=suggested,
        tool_use_id=ctx.tool_use_id or "",
        reason=asked.reason,
        diff=getattr(preview, "diff", None),
        preview=preview,
        read_only=tool.is_read_only(inp),
        destructive=tool.is_destructive(inp),
        display_name=tool.display_name(),
    )
    before_prompt(preview, preview_error)
    review = preview.review if preview is not None else None
    answer = await (_answer(approver, request) if review is None else _reviewed(approver, request, review))
    if answer.behavior == "deny":
        reason = await _apply_action(preview, answer) if answer.action else answer.message
        return Decision(behavior="deny", source="approver" if answer.automatic else "person", reason=reason)
    if answer.behavior == "always":
        rule = rules.add("allow", answer.rule or suggested, source="granted")
        return Decision(behavior="allow", source="person", rule=rule.text, reason=f"always allowed: {rule.text}")
    if answer.answers is not None:
        return Decision(behavior="allow", source="person", reason="answered", answers=dict(answer.answers))
    return Decision(behavior="allow", source="person", reason="allowed once")


async def _answer(approver: Approver, request: PermissionRequest) -> PermissionAnswer:
    try:
        return normalize_answer(await maybe_await(approver(request)))
    except asyncio.CancelledError:
        raise
    except Exception as e:
        return PermissionAnswer(behavior="deny", message=f"the approval prompt failed ({type(e).__name__}: {e})")


def _from_review(answer: ReviewAnswer) -> PermissionAnswer:
    return PermissionAnswer(behavior=answer.behavior, message=answer.message, automatic=answer.automatic)


async def _reviewed(approver: Approver, request: PermissionRequest, review: StagedReview) -> PermissionAnswer:
    """The approver and the page where the change is staged answer one question; the first wins.

    An approver that follows the review (the `%agent` cell's prompt) is resolved by the page's
    answer, so its answer is the decision either way; one that does not is cancelled when the
    page answers first. The page is told the outcome, whoever gave it."""
    preset = review.preset()
    if preset is not None:  # Accept all / Reject all, earlier in this run
        await review.close(preset.behavior, preset.message, automatic=preset.automatic, where="all")
        return _from_review(preset)
    if getattr(approver, "interactive", True) is False:
        # No one answers this run's prompts (--no-widgets, a background run): a change drawn in
        # the cell would only flash there and be taken back.
        return await _answer(approver, request)
    shown = False
    try:
        shown = await review.open()
    except Exception:  # the page could not draw it: the prompt alone asks, as without a page
        shown = False
    if not shown:
        return await _answer(approver, request)
    asking = asyncio.ensure_future(_answer(approver, request))
    page = asyncio.ensure_future(review.decision())
    try:
        await asyncio.wait({asking, page}, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        asking.cancel()
        page.cancel()
        await review.close("deny", "", automatic=True, where="none")
        raise
    page_answered = page.done() and not page.cancelled() and page.exception() is None
    if page_answered and review.followed:
        answer = await asking  # the prompt resolves with the page's answer (or its own, if it was first)
    elif page_answered and not asking.done():
        asking.cancel()
        answer = _from_review(page.result())
    else:
        page.cancel()
        answer = await asking
    where = "cell" if review.answered_in_page else "prompt"
    await review.close(
        "deny" if answer.behavior == "deny" else "allow", answer.message, automatic=answer.automatic, where=where
    )
    return answer


async def _apply_action(preview: PermissionPreview | None, answer: PermissionAnswer) -> str:
    """Carry out the PromptAction the person chose with their denial; what the model is told."""
    action = next((a for a in (preview.actions if preview is not None else ()) if a.label == answer.action), None)
    if action is None:
        return answer.message or f"the person chose {answer.action!r}"
    try:
        await action.apply()
    except Exception as e:  # the call is denied either way; say what did not stick
        return f"{action.message} (but recording it failed: {type(e).__name__}: {e})"
    return action.message + (f" {answer.message}" if answer.message else "")


def _safe_rule(tool: Tool, inp: BaseModel, ctx: ToolContext) -> str:
    try:
        return tool.suggest_rule(inp, ctx) or tool.name
    except Exception:
        return tool.name


def denial_text(tool: Tool, d: Decision) -> str:
    """What the model reads when a call was denied, by who denied it."""
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
