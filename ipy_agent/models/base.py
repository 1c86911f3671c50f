"""The Model protocol: what the agent loop needs from any model, scripted or real.

A model streams events for one assistant message. `BlockComplete` is emitted as soon as a
content block is whole, so the loop can hand a finished tool_use block to the executor while
the rest of the message is still streaming (what Claude Code's streaming executor does). The
message ends with exactly one `MessageComplete`, whose `content` is authoritative for history.

The conversation is kept in the Anthropic Messages format whatever the provider: that is what
the agent's history, its tools and its context management speak. A model for another wire format
translates at its own edge (models/openai_wire.py), in both directions.

Besides `name` and `stream`, a model may offer (each optional, looked up by the loop and the UI):
`provider` (who serves it: "anthropic", "bedrock", "openai", "ollama", ...), `context_window`,
`count_tokens` (`CountsTokens`), `cost(usage)` (`Priced`), `discover()` (`Discovers`: learn
about its server before the first request) and `offline = True` (it runs without network).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

from ipy_agent.history.blocks import ContentBlock, Message, ToolSpec

__all__ = [
    "BlockComplete",
    "CallOutcome",
    "Cost",
    "CountsTokens",
    "Discovers",
    "MessageComplete",
    "Model",
    "ModelError",
    "ModelEvent",
    "ModelRequest",
    "Outcome",
    "Priced",
    "RequestPurpose",
    "TextDelta",
    "ThinkingDelta",
    "Usage",
    "model_label",
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
# How a tool call of the previous turn ended: it ran ("allowed"), it was denied (by a rule, a
# hook or the person), or it failed (bad input, the tool raised, it was interrupted).
Outcome = Literal["allowed", "denied", "error"]


@dataclass(frozen=True, kw_only=True)
class CallOutcome:
    """One tool call of the previous turn, as it ended. A real model reads the tool_result
    blocks instead; a replay (ScriptedModel) chooses its branch by these."""

    tool_use_id: str
    name: str
    outcome: Outcome
    reason: str = ""  # why it was denied or failed, in the words the trace keeps
    asked: bool = False  # a permission prompt was answered for it (by a person or an approver)


@dataclass(frozen=True, kw_only=True)
class ModelRequest:
    """One request. `messages` is the agent's history itself, not a copy (copying a long
    history's list on every turn would make each turn cost the conversation's length): a model
    reads it while it answers and must not change it; one that keeps a request past its answer
    keeps a copy of the list (the history's messages are never edited in place)."""

    system: str
    messages: list[Message]
    tools: list[ToolSpec]
    # "compaction": a request for a summary of the conversation (ipy_agent/context), not a turn
    # of it. A real model answers it like any request; ScriptedModel answers it with a fixed
    # summary, so scripted transcripts stay as written.
    purpose: RequestPurpose = "turn"
    # The previous turn's tool calls, in order (empty after a person's prompt).
    calls: tuple[CallOutcome, ...] = ()
    # (placeholder, path) pairs such as ("<cwd>", "/home/me/project"): where this run's files
    # are, so a replay can compare tool results recorded in another directory.
    places: tuple[tuple[str, str], ...] = ()


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

    block: ContentBlock
    index: int
    type: Literal["block_complete"] = "block_complete"


@dataclass(frozen=True, kw_only=True)
class MessageComplete:
    content: list[ContentBlock]
    stop_reason: str
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    # The usage was reported by the provider (False: made up by an offline model; the context
    # manager calibrates its estimates only on measured usage).
    measured: bool = True
    type: Literal["message_complete"] = "message_complete"


ModelEvent = TextDelta | ThinkingDelta | BlockComplete | MessageComplete


class ModelError(Exception):
    """A model request failed for good (after the client's own retries).

    `kind` is a closed set the UI can explain: "authentication", "permission", "not_found", "overloaded",
    "rate_limit", "context_too_long", "invalid_request", "connection", "missing_key", "no_tools"
    (the model cannot call tools), "replay_diverged" (a replay's world differs from its
    recording), "budget_exceeded" (a key gateway refused: over budget), "other".
    """

    def __init__(self, message: str, *, kind: str = "other") -> None:
        super().__init__(message)
        self.kind = kind


@runtime_checkable
class CountsTokens(Protocol):
    """A model that can count a request's input tokens the way its provider bills them."""

    async def count_tokens(self, request: ModelRequest) -> int: ...


@dataclass(frozen=True, kw_only=True)
class Cost:
    """What a run's usage cost, as well as it can be told. `usd` None: nothing is charged (an
    offline or local model). `note` says how sure the figure is ("estimate", "prices from
    settings", "estimate, unknown model priced as Sonnet", "local model")."""

    usd: float | None
    note: str


@runtime_checkable
class Priced(Protocol):
    """A model that knows what its usage costs (by its provider's price table or settings)."""

    def cost(self, usage: Usage) -> Cost: ...


@runtime_checkable
class Discovers(Protocol):
    """A model that asks its server about itself before the first request (its context window,
    whether it calls tools). Called once by the context manager; it never raises: what it could
    not learn keeps its default, and a problem it found is reported by the next request."""

    async def discover(self) -> None: ...


@runtime_checkable
class Model(Protocol):
    @property
    def name(self) -> str:
        """The model's name as its provider knows it (prices and windows are looked up by it)."""
        ...

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Yield the events of one assistant message; raise ModelError on final failure."""
        ...


def model_label(model: object) -> str:
    """`provider:name` as `%agent --model` takes it (the name alone when the model names no
    provider, or its name already starts with it); "" when the name cannot be read."""
    try:
        name = str(getattr(model, "name", "") or "")
        provider = str(getattr(model, "provider", "") or "")
    except Exception:  # a model whose name needs a network call must not break a footer
        return ""
    if not provider or name.startswith(f"{provider}:"):
        return name
    return f"{provider}:{name}"
