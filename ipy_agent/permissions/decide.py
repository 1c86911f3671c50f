"""The permission stage for one tool call: the decision, then asking a person when it is "ask".

The decision (`decide`) is pure: rules, mode, the tool's and the hooks' opinions, in `STEPS`.

Order (first that applies wins), modelled on Claude Code and stricter where it helps:
1. a deny rule (tool or content) -> deny; a built-in one (rules.py) unless an allow rule lifts it
2. the tool's own deny (`check_permissions`) -> deny
3. plan mode and the call is not read-only -> deny
4. an ask rule, the tool's insistent ask (`PermissionCheck.always`), or a hook's ask -> ask
5. a hook's allow -> allow (deny and ask rules were already applied)
6. bypassPermissions -> allow
7. acceptEdits and an edit inside the working directories -> allow
8. an allow rule, or the tool's allow -> allow
9. the tool's ask (e.g. a read outside the working directories) -> ask
10. read-only, and inside the working directories when it names a path -> allow
11. anything else -> ask (the decision records which step made it, for the trace and `%agent_inspect`)

Around it, for one call (`decide_permission`): prompts come one at a time, the decision is taken
again once it is this call's turn (an "always" answer to the prompt before may cover it now), a
run with no approver denies instead of asking (fail closed), and the model is told why in words
it can act on (`denial_text`). The call's record is written by the lifecycle; this module only
reports back through `before_prompt`.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from pydantic import BaseModel

from ipy_agent.contract.decision import Behavior, DecisionSource, PermissionMode, WriteDecision
from ipy_agent.contract.review import ReviewAnswer, StagedReview
from ipy_agent.contract.tool import PermissionCheck, PermissionPreview, RuleSubject, Tool, maybe_await
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.contract.tool_input import dump_input

from .rules import BUILTIN, PermissionRules, Rule, allow_example

__all__ = [
    "STEPS",
    "AnswerLike",
    "Approver",
    "Decision",
    "PermissionAnswer",
    "PermissionRequest",
    "decide",
    "decide_permission",
    "denial_text",
    "normalize_answer",
]

Source = DecisionSource


@dataclass(frozen=True, kw_only=True)
class Decision:
    behavior: Behavior
    source: Source
    reason: str
    rule: str | None = None
    answers: dict[str, str] | None = None  # the person's answers to the call's questions
    writes: Mapping[str, WriteDecision] = field(default_factory=dict)  # what the tool's check saw of its writes


@dataclass(frozen=True, kw_only=True)
class PermissionRequest:
    """What an approver is asked about. The answer is bound to exactly this input."""

    tool_name: str
    input: dict[str, Any]
    summary: str
    suggested_rule: str
    tool_use_id: str
    reason: str = ""
    diff: str | None = None
    preview: PermissionPreview | None = None
    read_only: bool = False
    destructive: bool = False
    display_name: str = ""


@dataclass(frozen=True, kw_only=True)
class PermissionAnswer:
    behavior: Literal["allow", "always", "deny"]
    message: str = ""
    rule: str | None = None  # for "always": the rule to add; defaults to the request's suggested rule
    # True when no person answered (a non-interactive run, a prompt that timed out): the model is
    # told the call was not approved, not that someone declined it.
    automatic: bool = False
    action: str | None = None  # "deny" by the preview's PromptAction of this label ("Never run this cell")
    answers: dict[str, str] | None = None  # to the questions the request showed (`preview.questions`)


# What an approver may answer: a PermissionAnswer, "allow" / "always" / "deny", or a bool
# (None denies); sync or async.
AnswerLike = PermissionAnswer | str | bool | None
Approver = Callable[[PermissionRequest], AnswerLike | Awaitable[AnswerLike]]


def normalize_answer(answer: object) -> PermissionAnswer:
    if isinstance(answer, PermissionAnswer):
        if answer.behavior not in ("allow", "always", "deny"):
            raise ValueError(f"PermissionAnswer.behavior must be 'allow', 'always' or 'deny', not {answer.behavior!r}")
        return answer
    if isinstance(answer, str) and answer in ("allow", "always", "deny"):
        return PermissionAnswer(behavior=answer)  # type: ignore[arg-type]
    if answer is True:
        return PermissionAnswer(behavior="allow")
    if answer is False or answer is None:
        return PermissionAnswer(behavior="deny")
    raise ValueError(f"an approver must answer 'allow', 'always', 'deny' or a PermissionAnswer, not {answer!r}")


# --- the stage: decide, and ask on "ask" --------------------------------------------------


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


# --- the decision -------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class _Call:
    """One call as the permission steps see it."""

    tool: Tool
    inp: Any
    ctx: ToolContext
    rules: PermissionRules
    mode: PermissionMode
    check: PermissionCheck  # the tool's own opinion
    hook: tuple[Behavior, str] | None  # what PreToolUse hooks said
    subject: RuleSubject | None
    target: RuleSubject | None  # a symlink's target, judged as well
    read_only: bool

    def find(self, kind: Behavior) -> Rule | None:
        return self.rules.find(kind, self.tool, self.subject, self.ctx.cwd)

    def hook_says(self, behavior: Behavior) -> str | None:
        return self.hook[1] if self.hook is not None and self.hook[0] == behavior else None


def decide(
    *,
    tool: Tool,
    inp: Any,
    ctx: ToolContext,
    rules: PermissionRules,
    mode: PermissionMode,
    tool_check: PermissionCheck,
    hook_decision: tuple[Behavior, str] | None,
) -> Decision:
    """The first step of `STEPS` with an answer decides; none: ask."""
    subject = tool.rule_subject(inp, ctx)
    call = _Call(
        tool=tool,
        inp=inp,
        ctx=ctx,
        rules=rules,
        mode=mode,
        check=tool_check,
        hook=hook_decision,
        subject=subject,
        # A symlink is judged as itself and as its target: a deny rule on either denies, an allow
        # rule must cover both (a link inside `src/` must not open `~/.ssh/id_rsa`).
        target=_link_target(subject),
        read_only=tool.is_read_only(inp),
    )
    for step in STEPS:
        if (decision := step(call)) is not None:
            return decision
    why = "reads outside the working directories" if call.read_only else "can change things here"
    return Decision(behavior="ask", source="default", reason=f"{tool.name} {why}, and no rule or mode allows this call")


def _deny_rule(c: _Call) -> Decision | None:
    cwd, dirs = c.ctx.cwd, c.ctx.all_dirs()
    r = c.rules.find("deny", c.tool, c.subject, cwd, dirs) or (
        c.target and c.rules.find("deny", c.tool, c.target, cwd, dirs)
    )
    if not r:
        return None
    hidden = (
        f": {c.subject.hidden}, so the rule could apply to it" if c.subject is not None and c.subject.hidden else ""
    )
    why = f"denied by rule {r.text!r} ({r.source}){hidden}"
    if r.source == BUILTIN:
        why += (
            ": it keeps credentials from every tool. Do not look for another way to read it; if the person "
            "wants it read, they can add an allow rule naming the file, e.g. "
            f"{r.tool}({allow_example(c.subject.value if c.subject is not None else None, r)})"
        )
    return Decision(behavior="deny", source="rule", rule=r.text, reason=why)


def _tool_denies(c: _Call) -> Decision | None:
    if c.check.behavior != "deny":
        return None
    return Decision(behavior="deny", source="tool", reason=c.check.message or f"{c.tool.name} refused this call")


def _hook_denies(c: _Call) -> Decision | None:
    if (why := c.hook_says("deny")) is None:
        return None
    return Decision(behavior="deny", source="hook", reason=why or "denied by a PreToolUse hook")


def _plan_mode(c: _Call) -> Decision | None:
    if c.mode != "plan" or c.read_only:
        return None
    return Decision(
        behavior="deny",
        source="mode",
        reason="plan mode: only read-only tools run. Describe the change you would make instead of making it.",
    )


def _ask_rule(c: _Call) -> Decision | None:
    if (r := c.find("ask")) is None:
        return None
    return Decision(behavior="ask", source="rule", rule=r.text, reason=f"rule {r.text!r} asks for approval")


def _tool_always_asks(c: _Call) -> Decision | None:
    # Before hooks, modes and allow rules: a write that changes what runs asks every time.
    if c.check.behavior != "ask" or not c.check.always:
        return None
    return Decision(behavior="ask", source="tool", reason=c.check.message or f"{c.tool.name} asks for approval")


def _hook_asks(c: _Call) -> Decision | None:
    if (why := c.hook_says("ask")) is None:
        return None
    return Decision(behavior="ask", source="hook", reason=why or "a PreToolUse hook asks for approval")


def _hook_allows(c: _Call) -> Decision | None:
    if (why := c.hook_says("allow")) is None:
        return None
    return Decision(behavior="allow", source="hook", reason=why or "allowed by a PreToolUse hook")


def _permissive_mode(c: _Call) -> Decision | None:
    if c.mode == "bypassPermissions":
        return Decision(behavior="allow", source="mode", reason="bypassPermissions mode")
    if c.mode == "acceptEdits" and c.tool.kind == "edit" and _subject_inside(c.subject, c.ctx):
        return Decision(
            behavior="allow", source="mode", reason="acceptEdits mode: an edit inside the working directories"
        )
    return None


def _allow_rule(c: _Call) -> Decision | None:
    r = c.find("allow") or c.rules.find_allow_for_parts(c.tool, c.subject, c.ctx.cwd)
    if r is None or (c.target is not None and c.rules.find("allow", c.tool, c.target, c.ctx.cwd) is None):
        return None
    return Decision(behavior="allow", source="rule", rule=r.text, reason=f"allowed by rule {r.text!r} ({r.source})")


def _tool_opinion(c: _Call) -> Decision | None:
    if c.check.behavior == "allow":
        return Decision(behavior="allow", source="tool", reason=c.check.message or f"{c.tool.name} allows this call")
    if c.check.behavior == "ask":
        # The tool's "ask" withholds the automatic pass (a read outside the working
        # directories); a rule the person wrote, or a mode they chose, still decides first.
        return Decision(behavior="ask", source="tool", reason=c.check.message or f"{c.tool.name} asks for approval")
    return None


def _read_only_default(c: _Call) -> Decision | None:
    s = c.subject
    if c.read_only and (s is None or s.kind != "path" or c.ctx.is_readable_without_prompt(s.value)):
        return Decision(behavior="allow", source="default", reason="read-only")
    return None


# The order is the policy (docs/ARCHITECTURE.md, "Deny wins"): deny rules > the tool's deny > a
# hook's deny > plan mode > ask rules > the tool's "always ask" > a hook's ask > a hook's allow >
# bypass and acceptEdits modes > allow rules > the tool's own opinion > read-only > ask.
STEPS: tuple[Callable[[_Call], Decision | None], ...] = (
    _deny_rule,
    _tool_denies,
    _hook_denies,
    _plan_mode,
    _ask_rule,
    _tool_always_asks,
    _hook_asks,
    _hook_allows,
    _permissive_mode,
    _allow_rule,
    _tool_opinion,
    _read_only_default,
)


def _link_target(subject: RuleSubject | None) -> RuleSubject | None:
    """The resolved target of a path subject when it differs (a symlink on the way)."""
    if subject is None or subject.kind != "path":
        return None
    real = os.path.realpath(subject.value)
    return RuleSubject(kind="path", value=real) if real != os.path.normpath(subject.value) else None


def _subject_inside(subject: RuleSubject | None, ctx: ToolContext) -> bool:
    return subject is not None and subject.kind == "path" and ctx.is_inside_working_dirs(subject.value)


# --- asking the person --------------------------------------------------------------------


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


# --- what the model is told ---------------------------------------------------------------


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
