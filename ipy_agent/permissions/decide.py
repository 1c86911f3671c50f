"""The permission decision for one tool call: rules, mode, the tool's and the hooks' opinions.

Order (first that applies wins), modelled on Claude Code and stricter where it helps:
1. a deny rule (whole tool or content) -> deny; a built-in one (builtin.py: credential stores)
   only where no explicit allow rule lifts it
2. the tool's own deny (`check_permissions`) -> deny
3. plan mode and the call is not read-only -> deny
4. an ask rule, the tool's insistent ask (`PermissionCheck.always`), or a hook's ask -> ask
5. a hook's allow -> allow (deny and ask rules were already applied)
6. bypassPermissions -> allow
7. acceptEdits and an edit inside the working directories -> allow
8. an allow rule, or the tool's allow -> allow
9. the tool's ask (e.g. a read outside the working directories) -> ask
10. read-only, and inside the working directories when it names a path -> allow
11. anything else -> ask
The decision records which of these made it, for the trace and `%agent_inspect`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ipy_agent.contract.tool import DecisionSource, PermissionCheck, PermissionPreview, RuleSubject, Tool, ToolContext

from .builtin import BUILTIN, ENV_FILES, builtin_read_denies, lifts, read_deny_specs
from .rules import Rule, gitignore_match, matches_subject, parse_rule

__all__ = [
    "PERMISSION_MODES",
    "Decision",
    "PermissionAnswer",
    "PermissionMode",
    "PermissionRequest",
    "PermissionRules",
    "decide",
    "normalize_answer",
]

PermissionMode = Literal["default", "acceptEdits", "plan", "bypassPermissions"]
PERMISSION_MODES: tuple[str, ...] = ("default", "acceptEdits", "plan", "bypassPermissions")
Behavior = Literal["allow", "ask", "deny"]
Source = DecisionSource


@dataclass(frozen=True, kw_only=True)
class Decision:
    behavior: Behavior
    source: Source
    reason: str
    rule: str | None = None


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
    # For "always": the rule to add; defaults to the request's suggested rule.
    rule: str | None = None
    # True when no person answered (a non-interactive run, a prompt that timed out): the model
    # is then told the call was not approved, not that someone declined it.
    automatic: bool = False


def normalize_answer(answer: Any) -> PermissionAnswer:
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

    def denies_whole(self, tool: Tool) -> Rule | None:
        names = {tool.name, *tool.rule_groups}
        return next((r for r in self.deny if r.tool in names and r.whole_tool), None)

    def find(
        self, kind: Behavior, tool: Tool, subject: RuleSubject | None, cwd: Path, dirs: tuple[Path, ...] = ()
    ) -> Rule | None:
        """The first rule of `kind` covering the call. A built-in deny rule is skipped where an
        explicit allow rule lifts it, or for `.env*`, inside the working directories `dirs`."""
        names = {tool.name, *tool.rule_names, *tool.rule_groups}
        for rule in getattr(self, kind):
            if rule.tool not in names:
                continue
            if rule.source == BUILTIN and kind == "deny":
                if matches_subject(rule.specifier or "", subject, cwd=cwd, kind=kind) and not self._lifted(
                    rule, subject, cwd, dirs
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

    def _lifted(self, rule: Rule, subject: RuleSubject | None, cwd: Path, dirs: tuple[Path, ...]) -> bool:
        if subject is None or subject.kind != "path":
            return False
        path = subject.value
        if rule.specifier == ENV_FILES and any(_under(path, d) for d in dirs):
            return True
        return any(
            lifts(a, rule, cwd) and gitignore_match(a.specifier or "", path, cwd=cwd)
            for a in self.allow
            if not a.whole_tool
        )

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
    subject = tool.rule_subject(inp, ctx)
    cwd = ctx.cwd
    read_only = tool.is_read_only(inp)

    # A symlink is judged as itself and as its target: a deny rule on either denies, an allow
    # rule must cover both (a link inside `src/` must not open `~/.ssh/id_rsa`).
    target = _link_target(subject)
    if (denial := _rule_denial(tool, subject, target, rules, ctx)) is not None:
        return denial
    if tool_check.behavior == "deny":
        return Decision(behavior="deny", source="tool", reason=tool_check.message or f"{tool.name} refused this call")
    if hook_decision is not None and hook_decision[0] == "deny":
        return Decision(behavior="deny", source="hook", reason=hook_decision[1] or "denied by a PreToolUse hook")
    if mode == "plan" and not read_only:
        return Decision(
            behavior="deny",
            source="mode",
            reason="plan mode: only read-only tools run. Describe the change you would make instead of making it.",
        )
    if (r := rules.find("ask", tool, subject, cwd)) is not None:
        return Decision(behavior="ask", source="rule", rule=r.text, reason=f"rule {r.text!r} asks for approval")
    if tool_check.behavior == "ask" and tool_check.always:
        # Before hooks, modes and allow rules: a write that changes what runs asks every time.
        return Decision(behavior="ask", source="tool", reason=tool_check.message or f"{tool.name} asks for approval")
    if hook_decision is not None and hook_decision[0] == "ask":
        return Decision(behavior="ask", source="hook", reason=hook_decision[1] or "a PreToolUse hook asks for approval")
    if hook_decision is not None and hook_decision[0] == "allow":
        return Decision(behavior="allow", source="hook", reason=hook_decision[1] or "allowed by a PreToolUse hook")
    if mode == "bypassPermissions":
        return Decision(behavior="allow", source="mode", reason="bypassPermissions mode")
    if mode == "acceptEdits" and tool.kind == "edit" and _subject_inside(subject, ctx):
        return Decision(
            behavior="allow", source="mode", reason="acceptEdits mode: an edit inside the working directories"
        )
    r = rules.find("allow", tool, subject, cwd) or rules.find_allow_for_parts(tool, subject, cwd)
    if r is not None and target is not None and rules.find("allow", tool, target, cwd) is None:
        r = None
    if r is not None:
        return Decision(behavior="allow", source="rule", rule=r.text, reason=f"allowed by rule {r.text!r} ({r.source})")
    if tool_check.behavior == "allow":
        return Decision(behavior="allow", source="tool", reason=tool_check.message or f"{tool.name} allows this call")
    if tool_check.behavior == "ask":
        # The tool's "ask" withholds the automatic pass (a read outside the working
        # directories); a rule the person wrote, or a mode they chose, still decides first.
        return Decision(behavior="ask", source="tool", reason=tool_check.message or f"{tool.name} asks for approval")
    if read_only and (subject is None or subject.kind != "path" or ctx.is_readable_without_prompt(subject.value)):
        return Decision(behavior="allow", source="default", reason="read-only")
    why = "reads outside the working directories" if read_only else "can change things here"
    return Decision(behavior="ask", source="default", reason=f"{tool.name} {why}, and no rule or mode allows this call")


def _rule_denial(
    tool: Tool, subject: RuleSubject | None, target: RuleSubject | None, rules: PermissionRules, ctx: ToolContext
) -> Decision | None:
    cwd, dirs = ctx.cwd, ctx.all_dirs()
    r = rules.find("deny", tool, subject, cwd, dirs) or (target and rules.find("deny", tool, target, cwd, dirs))
    if not r:
        return None
    hidden = f": {subject.hidden}, so the rule could apply to it" if subject is not None and subject.hidden else ""
    why = f"denied by rule {r.text!r} ({r.source}){hidden}"
    if r.source == BUILTIN:
        why += (
            ": it keeps credentials from every tool. Do not look for another way to read it; if the person "
            f"wants it read, they can add an allow rule naming the file, e.g. {r.tool}({_example(subject, r)})"
        )
    return Decision(behavior="deny", source="rule", rule=r.text, reason=why)


def _link_target(subject: RuleSubject | None) -> RuleSubject | None:
    """The resolved target of a path subject when it differs (a symlink on the way)."""
    if subject is None or subject.kind != "path":
        return None
    real = os.path.realpath(subject.value)
    return RuleSubject(kind="path", value=real) if real != os.path.normpath(subject.value) else None


def _example(subject: RuleSubject | None, rule: Rule) -> str:
    """An allow rule specifier that would lift a built-in rule for this path."""
    if subject is None or subject.kind != "path":
        return rule.specifier or ""
    home = os.path.expanduser("~")
    value = os.path.normpath(subject.value)
    if value.startswith(home.rstrip(os.sep) + os.sep):
        return "~/" + value[len(home.rstrip(os.sep)) + 1 :]
    return "/" + value


def _under(path: str, directory: Path) -> bool:
    base = os.path.normpath(str(directory))
    path = os.path.normpath(path)
    return path == base or path.startswith(base.rstrip(os.sep) + os.sep)


def _subject_inside(subject: RuleSubject | None, ctx: ToolContext) -> bool:
    return subject is not None and subject.kind == "path" and ctx.is_inside_working_dirs(subject.value)
