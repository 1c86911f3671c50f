"""What the magics' configuration and a `%agent` line make of the agent's `AgentConfig`.

The traitlets of `AgentMagics` (`%config AgentMagics.max_turns = 20`) arrive as a plain
`SessionSettings` at each request; the line's options as a parsed `AgentLine`
(config/options.py). From them, `new_config` is the config of a conversation the magics start,
and `run_config` the config of the next run of a conversation that goes on: what it changes, the
session puts in force with one `Agent.configure(config)`. Plain Python (no IPython), so a test
reads the config a line gives without running anything.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ipy_agent.config.agent_config import AgentChanges, AgentConfig
from ipy_agent.config.options import AgentLine
from ipy_agent.contract.decision import PermissionMode
from ipy_agent.contract.tool import Tool
from ipy_agent.contract.tool_context import SandboxSetting
from ipy_agent.models.base import Model
from ipy_agent.permissions.rules import RuleSpec

if TYPE_CHECKING:
    from ipy_agent.notebook.bridge import NotebookBridge

__all__ = ["SessionSettings", "new_config", "run_config"]


@dataclass(frozen=True, kw_only=True)
class SessionSettings:
    """The magics' configuration as plain values (the traitlets of `AgentMagics`)."""

    model: str = ""
    permission_mode: PermissionMode = "default"
    sandbox: SandboxSetting = "auto"
    sandbox_limits: tuple[tuple[str, int], ...] = ()  # (name, value) given; the rest default
    allow: tuple[str, ...] = ()
    ask: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    max_turns: int = 50
    background: bool = False
    verify_before_done: bool = False  # the verify gate for every run (%agent --verify: one run)
    max_result_chars: int | None = None
    message_budget: int | None = None
    widgets: bool = True
    approval_timeout: float | None = None
    context_window: int | None = None
    # Options per provider: {"ollama": {"base_url": ..., "context_window": ...}, "openai": {"prices": ...}}
    providers: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    subagents: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # Task's types, by name

    def mode(self, request: AgentLine | None) -> PermissionMode:
        """The permission mode of a run: the line's `--mode`, else the configured one."""
        return (request.mode if request else None) or self.permission_mode


def new_config(
    model: Model, settings: SessionSettings, *, cwd: str | Path, tools: Sequence[Tool] | None
) -> AgentConfig:
    """The config of a new conversation (`tools` None: the built-in tools)."""
    return AgentConfig.build(
        model,
        cwd=cwd,
        permission_mode=settings.permission_mode,
        max_turns=settings.max_turns,
        tools=tools,
        context_window=settings.context_window,
        sandbox=settings.sandbox,
        sandbox_limits=dict(settings.sandbox_limits),
    )


def run_config(
    config: AgentConfig,
    settings: SessionSettings,
    request: AgentLine | None,
    *,
    rules: Sequence[RuleSpec],
    model: Model | None,
    notebook: NotebookBridge | None,
) -> AgentConfig:
    """`config` as the next run has it: the configured mode, turns, limits and budgets, the line's
    options over them (`request` None: a companion magic, which has no line to run), `rules` (the
    configured ones, the settings files' and the line's), `model` (None: the one it has) and the
    kernel's notebook. ValueError names a setting whose value is not allowed."""
    changes: AgentChanges = {
        "permission_mode": settings.mode(request),
        "max_turns": (request.max_turns if request else None) or settings.max_turns,
        "rules": rules,
        "result_limit": settings.max_result_chars,
        "notebook": notebook,
        "notebook_path": notebook.display_path if notebook is not None else None,
        "verify_before_done": (request.verify if request else False) or settings.verify_before_done,
    }
    if model is not None:
        changes["model"] = model
    if settings.message_budget is not None:
        changes["message_budget"] = settings.message_budget
    if request is not None:
        changes["instructions"] = not request.no_instructions
        changes["max_budget_usd"] = request.max_budget_usd  # this run's own; none: no limit of its own
        if request.style is not None:
            changes["output_style"] = request.style  # kept for the runs after it, like a choice in code
    return config.replace(**changes)
