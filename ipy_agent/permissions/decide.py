"""The permission decision for one tool call: rules, mode, the tool's and the hooks' opinions.

Order (first that applies wins), modelled on Claude Code and stricter where it helps:
1. a deny rule (tool or content) -> deny; a built-in one (builtin.py) unless an allow rule lifts it
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
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ipy_agent.contract.decision import Behavior, DecisionSource, PermissionMode, WriteDecision
from ipy_agent.contract.tool import PermissionCheck, PermissionPreview, RuleSubject, Tool
from ipy_agent.contract.tool_context import ToolContext

from .builtin import BUILTIN, allow_example, builtin_read_denies, lifted, read_deny_specs
from .rules import Rule, RuleSpec, matches_subject, parse_rule

__all__ = [
    "STEPS",
    "AnswerLike",
    "Approver",
    "Decision",
    "PermissionAnswer",
    "PermissionRequest",
    "PermissionRules",
    "decide",
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


@dataclass
class PermissionRules:
    """allow / ask / deny rules for one conversation, plus those granted by "always"."""

    allow: list[Rule] = field(default_factory=list)
    ask: list[Rule] = field(default_factory=list)
    deny: list[Rule] = field(default_factory=list)

    @classmethod
    def from_lists(
        cls,
        allow: list[str] | None = None,
        ask: list[str] | None = None,
        deny: list[str] | None = None,
        source: str = "argument",
    ) -> PermissionRules:
        return cls(
            allow=[parse_rule(r, source) for r in allow or []],
            ask=[parse_rule(r, source) for r in ask or []],
            deny=[parse_rule(r, source) for r in deny or []],
        )

    def add(self, kind: Behavior, rule: str | Rule, source: str = "argument") -> Rule:
        r = rule if isinstance(rule, Rule) else parse_rule(rule, source)
        bucket = getattr(self, kind)
        if all(existing.text != r.text for existing in bucket):
            bucket.append(r)
        return r

    @classmethod
    def with_builtin(
        cls, allow: list[str] | None = None, ask: list[str] | None = None, deny: list[str] | None = None
    ) -> PermissionRules:
        """`from_lists` with the built-in Read deny rules (credential stores) in front."""
        rules = cls.from_lists(allow, ask, deny)
        rules.deny[:0] = builtin_read_denies()
        return rules

    def read_deny(self, cwd: Path, dirs: tuple[Path, ...]) -> tuple[str, ...]:
        """The Read deny specifiers every tool honours (`ToolContext.read_deny`), in the order
        that gives their precedence (see builtin.py)."""
        return read_deny_specs(self.deny, self.allow, cwd, dirs)

    def of(self, kind: Behavior) -> list[Rule]:
        """The rules of one kind (the list itself: changing it changes the rules)."""
        bucket: list[Rule] = getattr(self, kind)
        return bucket

    def replace(self, previous: Sequence[Rule], specs: Iterable[RuleSpec]) -> list[Rule]:
        """Take `previous` (rules an earlier call added) off and add `specs`; return what was added.

        Rules granted by the person ("always") and rules given in code stay untouched, so a
        settings file or a `%config` change applies at the next run without losing a grant."""
        gone = {id(r) for r in previous}
        for kind in ("allow", "ask", "deny"):
            bucket: list[Rule] = getattr(self, kind)
            bucket[:] = [r for r in bucket if id(r) not in gone]
        added: list[Rule] = []
        for spec in specs:
            rule = self.add(spec.kind, spec.text, source=spec.source)
            if all(r is not rule for r in added) and any(r is rule for r in getattr(self, spec.kind)):
                added.append(rule)  # not a duplicate of a rule that stays
        return added

    def denies_whole(self, tool: Tool) -> Rule | None:
        names = {tool.name, *tool.rule_groups}
        return next((r for r in self.deny if r.tool in names and r.whole_tool), None)

    def find(
        self, kind: Behavior, tool: Tool, subject: RuleSubject | None, cwd: Path, dirs: tuple[Path, ...] = ()
    ) -> Rule | None:
        """The first rule of `kind` covering the call. A built-in deny rule is skipped where an
        explicit allow rule lifts it, or for `.env*`, inside the working directories `dirs`."""
        names = {tool.name, *tool.rule_names, *tool.rule_groups}
        for rule in self.of(kind):
            if rule.tool not in names:
                continue
            if rule.source == BUILTIN and kind == "deny":
                path = subject.value if subject is not None and subject.kind == "path" else None
                if matches_subject(rule.specifier or "", subject, cwd=cwd, kind=kind) and not lifted(
                    rule, path, self.allow, cwd, dirs
                ):
                    return rule
                continue
            if rule.whole_tool:
                # `Edit` whole-tool rules name Edit only; Write answers to Edit(...) content rules.
                # A group (`mcp__srv`) names every tool in it.
                if rule.tool == tool.name or rule.tool in tool.rule_groups:
                    return rule
                continue
            if matches_subject(rule.specifier or "", subject, cwd=cwd, kind=kind):
                return rule
        return None

    def find_allow_for_parts(self, tool: Tool, subject: RuleSubject | None, cwd: Path) -> Rule | None:
        """A compound command is allowed when each of its commands is allowed by some rule."""
        if subject is None or subject.kind != "command" or subject.parts is None or len(subject.parts) < 2:
            return None
        found: Rule | None = None
        for part in subject.parts:
            rule = self.find("allow", tool, RuleSubject(kind="command", value=part.text, parts=(part,)), cwd)
            if rule is None:
                return None
            found = found or rule
        return found


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
