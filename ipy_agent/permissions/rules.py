"""Permission rules in Claude Code's syntax: `Tool` or `Tool(specifier)`, how they match, and
the built-in Read deny rules nobody writes.

Three kinds of specifier, chosen by what the tool says its calls are about (`RuleSubject`):
- command (Bash): a prefix with a word boundary, `Bash(git diff:*)` or `Bash(npm test *)`; `*`
  anywhere is a wildcard. A compound command matches an allow rule only if every simple command
  in it does. The tool that runs commands splits them (`RuleSubject.parts`); this module only
  matches text, so the project has one shell parser, the Bash tool's.
- path (Read, Edit and the tools that answer to them): gitignore patterns relative to cwd, `//`
  for an absolute path, `~/` for home.
- value (custom tools): the specifier is a glob of the subject's value.

Built-in deny rules: the places where credentials are kept.

A prompt-injected model's first target is the key that opens something else: `~/.ssh`, the
cloud CLIs' credentials, a `.netrc`, a `.env` of another project, the kernel's own connection
file (its HMAC key lets anyone who can reach the kernel's sockets run code in it). So these
are Read deny rules from the start, with the source "built-in": they hide the files from Read,
NotebookRead, Glob, Grep and the paths a Bash command names, and the sandbox masks them like any
other Read deny rule (`ToolContext.read_deny`).

Precedence, strongest first:
1. a deny rule the person wrote (settings, `%agent --deny`, `Agent(deny=...)`): nothing lifts it;
2. an explicit allow rule: a `Read(...)` allow rule whose fixed part (the path before its first
   wildcard) names a place inside a built-in rule's territory lifts that rule for the paths it
   matches. `Read(~/.ssh/config)` lets `~/.ssh/config` be read and keeps the rest of `~/.ssh`
   denied; `Read(~/**)`, `Read(//**)` and a whole-tool `Read` are not explicit about any store
   and lift nothing;
3. a built-in deny rule;
4. everything else (modes, allow rules, the tools' own checks).
`.env*` files are denied outside the working directories only: the project's own `.env` is the
person's to work on (a deny rule of their own, e.g. `Read(.env)`, hides it too).

The decision (`PermissionRules.find`) and the path checks every tool makes (`read_deny_specs`, an
ordered gitignore list: built-ins, then `!` exceptions, then the person's denies) apply the
same precedence, so a tool and the rule engine cannot disagree.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ipy_agent.base.gitignore import gitignore_match
from ipy_agent.base.paths import mcp_token_dir, signing_key
from ipy_agent.contract.tool import CommandPart, RuleSubject, Tool

__all__ = [
    "BUILTIN",
    "CREDENTIAL_STORES",
    "ENV_FILES",
    "PermissionRules",
    "Rule",
    "RuleKind",
    "RuleSpec",
    "allow_example",
    "builtin_listing",
    "builtin_read_denies",
    "builtin_specs",
    "command_matches",
    "env_lift",
    "lifted",
    "lifts",
    "matches_everything",
    "matches_subject",
    "parse_rule",
    "part_matches",
    "read_deny_specs",
]

RuleKind = Literal["allow", "ask", "deny"]

_RULE_RE = re.compile(r"^\s*([A-Za-z0-9_\-]+)\s*(?:\((.*)\))?\s*$", re.S)


@dataclass(frozen=True, kw_only=True)
class Rule:
    tool: str
    specifier: str | None  # None (or "*") means the whole tool
    text: str
    source: str = "argument"

    @property
    def whole_tool(self) -> bool:
        return self.specifier is None or self.specifier.strip() in ("", "*")

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True, kw_only=True)
class RuleSpec:
    """One rule as configured: its kind, its text and where it was written."""

    kind: RuleKind
    text: str
    source: str


def parse_rule(text: str, source: str = "argument") -> Rule:
    if not isinstance(text, str):
        raise ValueError(f"a permission rule must be a string like 'Bash(git status:*)', not {text!r}")
    m = _RULE_RE.match(text)
    if not m:
        raise ValueError(
            f"permission rule {text!r} is not valid: write a tool name, optionally with a specifier, "
            "e.g. 'Read', 'Bash(git diff:*)' or 'Edit(src/**)'"
        )
    tool, spec = m.group(1), m.group(2)
    return Rule(tool=tool, specifier=spec, text=text.strip(), source=source)


# --- commands -----------------------------------------------------------------------------


def _command_pattern(spec: str) -> re.Pattern[str]:
    spec = spec.strip()
    if spec.endswith(":*"):
        spec = spec[:-2] + " *"
    word_boundary_tail = spec.endswith(" *")
    if word_boundary_tail:
        spec = spec[:-2]
    body = ".*".join(re.escape(piece) for piece in spec.split("*"))
    if word_boundary_tail:
        # `ls *` matches `ls` and `ls -la`, never `lsof`.
        return re.compile(rf"^{body}(?:\s.*)?$", re.S)
    return re.compile(rf"^{body}$", re.S)


def command_matches(spec: str, command: str) -> bool:
    """Whether one command's text fits a command specifier (whitespace runs count as one)."""
    return bool(_command_pattern(spec).match(" ".join(command.split())))


def part_matches(spec: str, part: CommandPart) -> bool:
    """Whether an allow specifier covers one simple command, as written or in another form."""
    return any(command_matches(spec, text) for text in (part.text, *part.forms))


# --- dispatch -----------------------------------------------------------------------------


def matches_subject(spec: str, subject: RuleSubject | None, *, cwd: Path, kind: RuleKind) -> bool:
    """Whether a content rule `Tool(spec)` covers this call.

    For commands, deny and ask rules match when the command or any command it may run matches
    (a denied command stays denied inside a pipeline, behind `env` or in `bash -c`); allow
    rules only when every part does, and never when the tool gave no parts (see `RuleSubject`).
    """
    if subject is None:
        return False
    if subject.kind == "path":
        return gitignore_match(spec, subject.value, cwd=cwd)
    if subject.kind == "value":
        return fnmatch.fnmatchcase(subject.value, spec)
    if kind == "allow":
        return bool(subject.parts) and all(part_matches(spec, p) for p in subject.parts or ())
    # A command that hides what it runs may run what the rule names: deny and ask rules hold.
    return bool(subject.hidden) or any(command_matches(spec, c) for c in (subject.value, *subject.spellings))


# --- built-in deny rules ------------------------------------------------------------------

BUILTIN = "built-in"
CREDENTIAL_STORES: tuple[str, ...] = (
    "~/.ssh",
    "~/.aws",
    "~/.gnupg",
    "~/.netrc",
    "~/.docker/config.json",
    "~/.kube",
    "~/.config/gcloud",
    "~/.git-credentials",
    "~/.pypirc",
)
# Every `.env`, `.env.local`, `.envrc`... anywhere; lifted inside the working directories.
ENV_FILES = "//**/.env*"
_GLOB = set("*?[")


@functools.lru_cache(maxsize=1)
def _jupyter_runtime_dir() -> str | None:
    """Where Jupyter keeps kernels' connection files (`jupyter_core.paths`), found once."""
    try:
        from jupyter_core.paths import jupyter_runtime_dir
    except ImportError:
        return None
    try:
        return os.path.normpath(os.path.abspath(jupyter_runtime_dir()))
    except Exception:  # a broken Jupyter configuration must not stop the agent
        return None


def builtin_specs() -> frozenset[str]:
    """The built-in rules' specifiers, as `ToolContext.read_deny` holds them (found once per
    settings folder: the Jupyter runtime directory is looked up the first time, not at import)."""
    return _builtin_specs(str(signing_key()), str(mcp_token_dir()))


@functools.lru_cache(maxsize=4)
def _builtin_specs(key: str, tokens: str) -> frozenset[str]:
    return frozenset(r.specifier or "" for r in builtin_read_denies())


def builtin_read_denies() -> list[Rule]:
    """The built-in Read deny rules, `.env*` first (see `read_deny_specs` for why the order)."""
    specs = [ENV_FILES, *CREDENTIAL_STORES]
    runtime = _jupyter_runtime_dir()
    if runtime:
        specs.append("/" + runtime)  # `//abs/path`
    # The key that signs what a command could otherwise forge (saved grants): read by no tool.
    specs.append("/" + os.path.normpath(os.path.abspath(signing_key())))
    # The MCP servers' OAuth tokens (mcp/oauth.py): never shown to the model or a tool.
    specs.append("/" + os.path.normpath(os.path.abspath(mcp_token_dir())))
    return [parse_rule(f"Read({s})", BUILTIN) for s in specs]


def env_lift(directory: Path | str) -> str:
    """The `!` exception that gives back the `.env*` files under one working directory."""
    return "!/" + os.path.normpath(str(directory)) + "/**/.env*"


def matches_everything(rule: Rule) -> bool:
    """A rule that covers every call of its tool: the whole tool, `Bash(*)`, `Read(**)`,
    `Edit(//**)`... Made of wildcards and separators only, whatever its anchor."""
    if rule.whole_tool:
        return True
    spec = (rule.specifier or "").strip()
    for anchor in ("//", "~/", "./", "/"):
        if spec.startswith(anchor):
            spec = spec[len(anchor) :]
            break
    return bool(spec) and set(spec) <= {"*", "/", ":", " ", "?"}


def _fixed_part(spec: str, cwd: Path) -> str | None:
    """The absolute path a path specifier pins down before its first wildcard; None for an
    unanchored pattern (a bare name matches at any depth, so it pins down nothing)."""
    spec = spec.strip()
    if spec.startswith("//"):
        base, rest = "/", spec[2:]
    elif spec.startswith("~/"):
        base, rest = os.path.expanduser("~"), spec[2:]
    elif spec.startswith("./"):
        base, rest = str(cwd), spec[2:]
    elif spec.startswith("/"):
        base, rest = str(cwd), spec[1:]
    elif "/" in spec.rstrip("/") and not spec.startswith("**"):
        base, rest = str(cwd), spec
    else:
        return None
    fixed: list[str] = []
    for part in rest.split("/"):
        if not part or part == ".":
            continue
        if _GLOB & set(part):
            break
        fixed.append(part)
    return os.path.normpath(os.path.join(base, *fixed))


def lifts(allow: Rule, builtin: Rule, cwd: Path) -> bool:
    """Whether an allow rule is explicit about the territory of a built-in deny rule."""
    if allow.tool != "Read" or allow.source == BUILTIN or matches_everything(allow):
        return False
    fixed = _fixed_part(allow.specifier or "", cwd)
    return fixed is not None and gitignore_match(builtin.specifier or "", fixed, cwd=cwd)


def lifted(rule: Rule, path: str | None, allow: Iterable[Rule], cwd: Path, dirs: Iterable[Path]) -> bool:
    """Whether built-in `rule` is lifted for `path`: an explicit allow rule covers it, or for
    `.env*`, it is inside one of the working directories `dirs`."""
    if path is None:
        return False
    if rule.specifier == ENV_FILES and any(_under(path, d) for d in dirs):
        return True
    return any(
        lifts(a, rule, cwd) and gitignore_match(a.specifier or "", path, cwd=cwd) for a in allow if not a.whole_tool
    )


def allow_example(path: str | None, rule: Rule) -> str:
    """A specifier for an allow rule that would lift `rule` for `path` (`~/` where it can)."""
    if path is None:
        return rule.specifier or ""
    home = os.path.expanduser("~").rstrip(os.sep)
    value = os.path.normpath(path)
    if value.startswith(home + os.sep):
        return "~/" + value[len(home) + 1 :]
    return "/" + value


def _under(path: str, directory: Path) -> bool:
    base = os.path.normpath(str(directory))
    path = os.path.normpath(path)
    return path == base or path.startswith(base.rstrip(os.sep) + os.sep)


def read_deny_specs(deny: Iterable[Rule], allow: Iterable[Rule], cwd: Path, dirs: Iterable[Path]) -> tuple[str, ...]:
    """The Read deny specifiers in force, as the ordered gitignore list `ToolContext` matches
    (the last match decides): built-in denies (`.env*` first, then the exceptions that give
    the working directories their `.env*` back, then the stores, so a `.env` inside `~/.aws`
    stays denied), then the exceptions explicit allow rules make, then the person's denies."""
    reads = [r for r in deny if r.tool == "Read" and not r.whole_tool]
    builtin = [r for r in reads if r.source == BUILTIN]
    env = [r.specifier or "" for r in builtin if r.specifier == ENV_FILES]
    stores = [r.specifier or "" for r in builtin if r.specifier != ENV_FILES]
    lifted = [
        "!" + (a.specifier or "").strip()
        for a in allow
        if any(lifts(a, b, cwd) for b in builtin) and not (a.specifier or "").strip().startswith("!")
    ]
    own = [_literal(r.specifier or "") for r in reads if r.source != BUILTIN]
    env_lifts = [env_lift(d) for d in dict.fromkeys(dirs)] if env else []
    return (*env, *env_lifts, *stores, *dict.fromkeys(lifted), *own)


def builtin_listing(deny: Iterable[Rule], allow: Iterable[Rule], cwd: Path) -> list[str]:
    """Lines for `%agent_rules` and `%agent_tools`: each built-in rule, what lifts it, and how."""
    builtin = [r for r in deny if r.source == BUILTIN]
    if not builtin:
        return []
    allow = list(allow)
    lines = [
        "Built-in deny rules (credential stores, hidden from every tool and masked in the sandbox; "
        "an allow rule naming a path inside one, e.g. Read(~/.ssh/config), lifts it for that path; "
        "a deny rule of yours is never lifted):"
    ]
    for rule in builtin:
        by = [a.text for a in allow if lifts(a, rule, cwd)]
        note = " (outside the working directories)" if rule.specifier == ENV_FILES else ""
        if by:
            note += f"  lifted where {', '.join(by)} allow"
        lines.append(f"  {rule.text}{note}")
    return lines


def _literal(spec: str) -> str:
    """A person's specifier that starts with `!` names a file: escape it so it is not an exception."""
    spec = spec.strip()
    return "\\" + spec if spec.startswith("!") else spec


# --- a conversation's rules ---------------------------------------------------------------


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

    def add(self, kind: RuleKind, rule: str | Rule, source: str = "argument") -> Rule:
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
        that gives their precedence (see rules.py)."""
        return read_deny_specs(self.deny, self.allow, cwd, dirs)

    def of(self, kind: RuleKind) -> list[Rule]:
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
        self, kind: RuleKind, tool: Tool, subject: RuleSubject | None, cwd: Path, dirs: tuple[Path, ...] = ()
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
