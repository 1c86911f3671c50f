"""The permission decision for one tool call: rules, mode, the tool's and the hooks' opinions.

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
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, get_args

from ipy_agent.contract.tool import PermissionCheck, PermissionPreview, RuleSubject, Tool
from ipy_agent.contract.tool_context import DecisionSource, ToolContext

from .rules import BUILTIN, PermissionRules, Rule, allow_example

__all__ = [
    "PERMISSION_MODES",
    "STEPS",
    "AnswerLike",
    "Approver",
    "Decision",
    "PermissionAnswer",
    "PermissionMode",
    "PermissionRequest",
    "decide",
    "normalize_answer",
]

PermissionMode = Literal["default", "acceptEdits", "plan", "bypassPermissions"]
PERMISSION_MODES: tuple[PermissionMode, ...] = get_args(PermissionMode)
Behavior = Literal["allow", "ask", "deny"]
Source = DecisionSource


@dataclass(frozen=True, kw_only=True)
class Decision:
    behavior: Behavior
    source: Source
    reason: str
    rule: str | None = None
    answers: dict[str, str] | None = None  # the person's answers to the call's questions


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


@dataclass(frozen=True, kw_only=True)
class _Call:
    """One call as the permission steps see it."""

    tool: Tool
    inp: Any
    ctx: ToolContext
    rules: PermissionRules
    mode: str
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
    mode: str,
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
