"""`AgentConfig`: every setting of an agent, in one frozen value checked once.

An `Agent` is its configuration plus its live state. The configuration is what a person or a
program chooses: the model, the working directory, the permission mode and rules, the tools, the
limits (turns, results, the sandbox, the budget), the system prompt and the standing instructions,
the notebook, who answers the permission prompts. The state is what a conversation accumulates or
holds open: the history, the session's background commands, the rules granted with "Always allow",
the MCP servers' processes, the run's meter, the recording of a model.

A config is never changed: `config.replace(max_turns=5)` is a new one, checked like the first,
and `Agent.configure(config)` puts it in force. Every bad value is a ValueError (TypeError for an
unknown setting) that names the setting and says what is allowed, at the moment the config is made.

`Agent(model, max_turns=5, ...)` builds its config from its keyword arguments (`AgentSettings`),
so the agent's attributes (`agent.max_turns`, ...) read the config (`FromConfig`), and setting one
makes a new config.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypedDict, TypeVar, Unpack, overload

from ipy_agent.contract.decision import PERMISSION_MODES, PermissionMode
from ipy_agent.contract.limits import MESSAGE_RESULT_CHARS
from ipy_agent.contract.tool import Tool
from ipy_agent.contract.tool_context import SANDBOX_SETTINGS, SandboxLimits, SandboxSetting
from ipy_agent.mcp.config import McpAuthorize
from ipy_agent.models.base import Model
from ipy_agent.permissions.decide import Approver
from ipy_agent.permissions.rules import RuleKind, RuleSpec, parse_rule

from .output_styles import find_output_style
from .policy import Policy

if TYPE_CHECKING:
    from ipy_agent.notebook.bridge import NotebookBridge

__all__ = [
    "FIXED_SETTINGS",
    "KEEP",
    "AgentChanges",
    "AgentConfig",
    "AgentSettings",
    "FromConfig",
    "Keep",
    "check_choice",
    "given_rules",
    "setting_names",
]

_V = TypeVar("_V")

# Settings an agent builds its state from once, when it is made: a new config may not change them
# (make a new Agent instead).
FIXED_SETTINGS: frozenset[str] = frozenset(
    {"tools", "mcp_servers", "mcp_authorize", "spill_dir", "context_window", "context_threshold", "policy", "record"}
)


class Keep:
    """The default of `Agent.configure` arguments where None is a value: leave it as it is."""

    def __repr__(self) -> str:
        return "KEEP"


KEEP = Keep()


def check_choice(name: str, value: _V, allowed: Sequence[_V]) -> _V:
    if value not in allowed:
        raise ValueError(f"{name} {value!r} is not one of {', '.join(map(str, allowed))}")
    return value


class AgentSettings(TypedDict, total=False):
    """`Agent`'s keyword arguments: each field of `AgentConfig` but the model, in the forms it
    accepts (a path as a string, a list for a tuple, a dict of sandbox limits)."""

    cwd: str | Path | None
    permission_mode: PermissionMode
    allow: Sequence[str] | None
    ask: Sequence[str] | None
    deny: Sequence[str] | None
    rules: Sequence[RuleSpec]
    approver: Approver | None
    tools: Sequence[Tool] | None
    max_turns: int
    working_dirs: Sequence[str | Path]
    system_prompt: str | None
    append_system_prompt: str | None
    output_style: str | None
    simple: bool
    max_concurrency: int
    streaming_tools: bool
    verify_before_done: bool
    message_budget: int
    result_limit: int | None
    spill_dir: str | Path | None
    notebook: NotebookBridge | None
    notebook_path: str | None
    context_window: int | None
    context_threshold: float
    sandbox: SandboxSetting
    sandbox_limits: SandboxLimits | Mapping[str, int] | None
    mcp_servers: Mapping[str, Mapping[str, Any]] | None
    mcp_authorize: McpAuthorize | None
    record: str | Path | None
    instructions: bool
    max_budget_usd: float | None
    policy: Policy | None
    plugins: Sequence[str | Path]


class AgentChanges(AgentSettings, total=False):
    """`AgentConfig.replace`'s keyword arguments: any setting, the model too."""

    model: Model


@dataclass(frozen=True, kw_only=True)
class AgentConfig:
    """Every setting of an agent (docs/ARCHITECTURE.md, "The agent's configuration").

    Build one with the settings you change; the rest keep the defaults below."""

    model: Model  # the model the agent talks to (`agent.model` records it with --record)
    cwd: Path = field(default_factory=Path.cwd)  # the working directory (resolved; it must exist)
    permission_mode: PermissionMode = "default"
    allow: tuple[str, ...] = ()  # rules given in code (Claude Code's syntax: `Tool(specifier)`)
    ask: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    rules: tuple[RuleSpec, ...] = ()  # rules configured for the next runs (settings files, the magics)
    approver: Approver | None = None  # who answers a permission prompt (None: nobody, so it is denied)
    tools: tuple[Tool, ...] | None = None  # None: the built-in tools and Task
    max_turns: int = 50  # model requests per run
    working_dirs: tuple[Path, ...] = ()  # more directories the tools may write in (resolved)
    system_prompt: str | None = None  # replaces our base prompt
    append_system_prompt: str | None = None
    output_style: str | None = None  # an output style's name (config/output_styles.py); None: settings', else ours
    simple: bool = False  # offer only the few tools marked for simple mode
    max_concurrency: int = 10  # concurrency-safe calls run together, at most this many
    streaming_tools: bool = True  # a tool starts when its block ends, before the message ends
    verify_before_done: bool = False  # a run that changed the notebook runs NotebookVerify before it ends
    message_budget: int = MESSAGE_RESULT_CHARS  # characters of results one message may carry
    result_limit: int | None = None  # caps every tool's result (None: each tool's own limit)
    spill_dir: Path | None = None  # where big results go (None: our own, removed at reset and exit)
    notebook: NotebookBridge | None = None  # the live notebook's bridge
    notebook_path: str | None = None  # the notebook's file, for its instructions and the prompt
    context_window: int | None = None  # tokens (None: the model's window)
    context_threshold: float = 0.8  # share of the window at which old results are cleared
    sandbox: SandboxSetting = "auto"  # Bash's OS sandbox
    sandbox_limits: SandboxLimits = field(default_factory=SandboxLimits)
    mcp_servers: Mapping[str, Mapping[str, Any]] | None = None  # .mcp.json's shape; trusted (given in code)
    # An HTTP server's OAuth: called with the authorization URL, returns the URL the browser was
    # redirected to (sync or async); None: the person follows a link, the redirect comes back here.
    mcp_authorize: McpAuthorize | None = None
    record: Path | None = None  # record the conversation into this transcript
    instructions: bool = True  # requests carry the standing instructions (AGENTS.md, ...)
    max_budget_usd: float | None = None  # what one run may spend (estimated)
    policy: Policy | None = None  # None: the managed policy's files, read before each run
    plugins: tuple[Path, ...] = ()  # Claude Code plugin or marketplace folders (config/plugins.py); trusted

    def __post_init__(self) -> None:
        for name, value in _normalised(self).items():
            object.__setattr__(self, name, value)
        _check(self)

    @classmethod
    def build(cls, model: Model | None, **settings: Unpack[AgentSettings]) -> AgentConfig:
        """The config of `Agent(model, **settings)`."""
        if model is None:
            raise TypeError("Agent needs a model: Agent(model, ...) or Agent(config=AgentConfig(model=..., ...))")
        _check_names(settings)
        return cls(model=model, **_exact(settings))

    def replace(self, **changes: Unpack[AgentChanges]) -> AgentConfig:
        """A new config with `changes`, checked like this one was; this one stays as it is."""
        _check_names(changes)
        return dataclasses.replace(self, **_exact(changes))

    def changed(self, other: AgentConfig) -> set[str]:
        """The names of the settings whose values differ in `other`."""
        return {n for n in setting_names() if _differs(getattr(self, n), getattr(other, n))}


def setting_names() -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(AgentConfig))


def given_rules(config: AgentConfig) -> list[RuleSpec]:
    """The config's `allow`, `ask` and `deny`, as the rules given in code."""
    kinds: tuple[tuple[RuleKind, tuple[str, ...]], ...] = (
        ("allow", config.allow),
        ("ask", config.ask),
        ("deny", config.deny),
    )
    return [RuleSpec(kind=kind, text=text, source="argument") for kind, texts in kinds for text in texts]


def _check_names(settings: Mapping[str, object]) -> None:
    if unknown := sorted(set(settings) - set(setting_names())):
        raise TypeError(f"AgentConfig has no setting {', '.join(map(repr, unknown))}")


def _exact(settings: Mapping[str, object]) -> dict[str, Any]:
    """`settings` as the fields take them: the wider forms `AgentSettings` allows are made
    exact by `__post_init__` (`_normalised`), which every new config passes."""
    return dict(settings)


def _differs(a: object, b: object) -> bool:
    return a is not b and a != b


def _path(value: str | Path) -> Path:
    return Path(value).expanduser().resolve()


def _normalised(config: AgentConfig) -> dict[str, object]:
    """The values given in a wider form (`AgentSettings`), in the form the fields hold."""
    raw: Any = config  # checked here, whatever a caller without a type checker passed
    limits = raw.sandbox_limits
    if limits is None or isinstance(limits, Mapping):
        unknown = set(limits or {}) - {"memory", "processes", "tmp"}
        if unknown:
            raise ValueError(
                f"sandbox_limits has no {', '.join(sorted(unknown))}: give memory (bytes), processes or tmp (bytes)"
            )
        limits = SandboxLimits(**dict(limits or {}))
    return {
        "cwd": _path(raw.cwd if raw.cwd is not None else Path.cwd()),
        "allow": tuple(raw.allow or ()),
        "ask": tuple(raw.ask or ()),
        "deny": tuple(raw.deny or ()),
        "rules": tuple(raw.rules),
        "tools": None if raw.tools is None else tuple(raw.tools),
        "working_dirs": tuple(_path(d) for d in raw.working_dirs),
        "spill_dir": None if raw.spill_dir is None else Path(raw.spill_dir),
        "record": None if raw.record is None else Path(raw.record),
        "sandbox_limits": limits,
        "mcp_servers": None if raw.mcp_servers is None else dict(raw.mcp_servers),
        "plugins": tuple(_path(p) for p in raw.plugins),
    }


def _check(config: AgentConfig) -> None:
    """Each setting's own check; the messages say what is allowed."""
    if config.model is None:
        raise TypeError("an agent needs a model, e.g. AnthropicModel() or ScriptedModel([...])")
    check_choice("permission_mode", config.permission_mode, PERMISSION_MODES)
    check_choice("sandbox", config.sandbox, SANDBOX_SETTINGS)
    if not config.cwd.is_dir():
        raise ValueError(f"cwd {str(config.cwd)!r} is not a directory")
    for text in (*config.allow, *config.ask, *config.deny):
        parse_rule(text)  # a bad rule says what is wrong with it
    for name, least in (("max_turns", 1), ("max_concurrency", 1), ("message_budget", 1)):
        if getattr(config, name) < least:
            raise ValueError(f"{name} must be at least {least}, not {getattr(config, name)!r}")
    if config.result_limit is not None and config.result_limit < 1:
        raise ValueError(f"result_limit must be at least 1 (or None: each tool's own), not {config.result_limit!r}")
    if config.context_window is not None and config.context_window < 1_000:
        raise ValueError(f"context_window must be at least 1000 tokens, not {config.context_window!r}")
    if not 0.1 <= config.context_threshold <= 1.0:
        raise ValueError(
            f"context_threshold must be between 0.1 and 1.0 (a share of the window), not {config.context_threshold!r}"
        )
    if config.output_style is not None:
        find_output_style(config.output_style, config.cwd)  # an unknown name lists the styles there are
    if config.max_budget_usd is not None and config.max_budget_usd <= 0:
        raise ValueError(f"max_budget_usd: a budget must be more than $0, not {config.max_budget_usd!r}")


class Configured(Protocol):
    """What holds a config that its attributes read (an `Agent`)."""

    config: AgentConfig


class FromConfig(Generic[_V]):
    """An attribute that reads the setting of the same name from its owner's config; setting it
    gives the owner a new config with that setting changed."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type) -> FromConfig[_V]: ...
    @overload
    def __get__(self, obj: Configured, owner: type) -> _V: ...
    def __get__(self, obj: Configured | None, owner: type) -> _V | FromConfig[_V]:
        if obj is None:
            return self
        value: _V = getattr(obj.config, self.name)
        return value

    def __set__(self, obj: Configured, value: _V) -> None:
        obj.config = dataclasses.replace(obj.config, **_exact({self.name: value}))
