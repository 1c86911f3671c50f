"""`Conversation`: what the layers around the loop need from a conversation, as a Protocol.

The context window (context/), the person's views (ui/), saved conversations (config/) and the
magics work on a conversation without holding the loop's class: they read its history, read
state, trace and usage, emit events, and ask what the next request would carry. `Agent`
(loop/agent.py) is the one implementation; a test may pass any object with these members. The
loop keeps everything else (its executor, its MCP servers, how a turn ends) to itself.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from ipy_agent.contract.checkpoints import Checkpoints
from ipy_agent.contract.decision import PermissionMode
from ipy_agent.contract.hooks import Hooks
from ipy_agent.contract.read_state import ReadState
from ipy_agent.contract.tool import Tool
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.history.blocks import Message, ToolSpec
from ipy_agent.models.base import Model, Usage
from ipy_agent.permissions.rules import PermissionRules

from .meter import Meter
from .registry import Exposure
from .trace import AgentEvent, CallRecord, TurnRecord

__all__ = ["Conversation", "Listener"]

Listener = Callable[[AgentEvent], None]


class Conversation(Protocol):
    """A conversation with a model: its history and what the runtime recorded along the way."""

    model: Model
    cwd: Path
    permission_mode: PermissionMode
    messages: list[Message]
    read_state: ReadState
    trace: list[CallRecord]
    turns: list[TurnRecord]
    usage: Usage
    hooks: Hooks
    rules: PermissionRules

    @property
    def running(self) -> bool:
        """Whether a run is in progress (nothing may change the history meanwhile)."""
        ...

    @property
    def meter(self) -> Meter:
        """The meter of the run in progress (or the last one): every model request passes it."""
        ...

    @property
    def checkpoints(self) -> Checkpoints:
        """What each prompt's run changed, kept for a rewind; its prompts are numbered from 1."""
        ...

    @property
    def tools(self) -> list[Tool]:
        """Every tool the conversation has, offered or not."""
        ...

    @property
    def context_window(self) -> int:
        """Tokens the next request may take: the model's window or the one configured."""
        ...

    def tool(self, name: str) -> Tool | None:
        """The tool of that name, offered or not."""
        ...

    def tool_context(self, tool_use_id: str | None = None) -> ToolContext:
        """What a tool call is given now (the rules and mode may change between calls)."""
        ...

    def exposure(self) -> Exposure:
        """The tools the model would be offered now, and why the others are hidden."""
        ...

    def request_parts(self) -> tuple[str, list[ToolSpec]]:
        """The system prompt and the tool list the next request would carry."""
        ...

    def instruction_text(self) -> str:
        """The part of that system prompt that holds the standing instructions (AGENTS.md,
        CLAUDE.md, the notebook's); "" when there are none."""
        ...

    def emit(self, event: AgentEvent) -> None:
        """Tell every listener; a listener that fails does not stop the others."""
        ...

    def on_event(self, listener: Listener) -> Listener: ...

    def remove_listener(self, listener: Listener) -> None: ...

    def interrupt(self) -> None:
        """Stop the current run as soon as possible; safe from any thread."""
        ...
