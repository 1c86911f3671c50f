"""The Model protocol: what the agent loop needs from any model, scripted or real.

A model streams events for one assistant message. `BlockComplete` is emitted as soon as a
content block is whole, so the loop can hand a finished tool_use block to the executor while
the rest of the message is still streaming (what Claude Code's streaming executor does). The
message ends with exactly one `MessageComplete`, whose `content` is authoritative for history.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

__all__ = [
    "BlockComplete",
    "CountsTokens",
    "MessageComplete",
    "Model",
    "ModelError",
    "ModelEvent",
    "ModelRequest",
    "RequestPurpose",
    "TextDelta",
    "ThinkingDelta",
    "Usage",
]


@dataclass(kw_only=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0

    def __iadd__(self, other: Usage) -> Usage:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cache_read_input_tokens += other.cache_read_input_tokens
        self.cache_creation_input_tokens += other.cache_creation_input_tokens
        return self

    @property
    def context_tokens(self) -> int:
        """Tokens of prompt the model saw for one request (fresh, cached and cache-written)."""
        return self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens


RequestPurpose = Literal["turn", "compaction"]


@dataclass(frozen=True, kw_only=True)
class ModelRequest:
    """One request. `messages` is the agent's history itself, not a copy (copying a long
    history's list on every turn would make each turn cost the conversation's length): a model
    reads it while it answers and must not change it; one that keeps a request past its answer
    keeps a copy of the list (the history's messages are never edited in place)."""

    system: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    # "compaction": a request for a summary of the conversation (ipy_agent/context), not a turn
    # of it. A real model answers it like any request; ScriptedModel answers it with a fixed
    # summary, so scripted transcripts stay as written.
    purpose: RequestPurpose = "turn"


@dataclass(frozen=True, kw_only=True)
class TextDelta:
    text: str
    type: Literal["text_delta"] = "text_delta"


@dataclass(frozen=True, kw_only=True)
class ThinkingDelta:
    text: str
    type: Literal["thinking_delta"] = "thinking_delta"


@dataclass(frozen=True, kw_only=True)
class BlockComplete:
    """A whole content block (text, thinking, tool_use...) in Anthropic format."""

    block: dict[str, Any]
    index: int
    type: Literal["block_complete"] = "block_complete"


@dataclass(frozen=True, kw_only=True)
class MessageComplete:
    content: list[dict[str, Any]]
    stop_reason: str
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    type: Literal["message_complete"] = "message_complete"


ModelEvent = TextDelta | ThinkingDelta | BlockComplete | MessageComplete


class ModelError(Exception):
    """A model request failed for good (after the client's own retries).

    `kind` is a closed set the UI can explain: "authentication", "permission", "not_found", "overloaded",
    "rate_limit", "context_too_long", "invalid_request", "connection", "missing_key", "other".
    """

    def __init__(self, message: str, *, kind: str = "other") -> None:
        super().__init__(message)
        self.kind = kind


@runtime_checkable
class CountsTokens(Protocol):
    """A model that can count a request's input tokens the way its provider bills them."""

    async def count_tokens(self, request: ModelRequest) -> int: ...


@runtime_checkable
class Model(Protocol):
    @property
    def name(self) -> str:
        """The model's name as its provider knows it (prices and windows are looked up by it)."""
        ...

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Yield the events of one assistant message; raise ModelError on final failure."""
        ...
