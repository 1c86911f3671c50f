"""AnthropicModel: the Messages API behind `%agent`, streamed through the official SDK.

Claude is served by Anthropic's API and by the clouds (Amazon Bedrock, Google Vertex AI,
Microsoft Foundry); the SDK has a client for each, all speaking this request and these events,
so one model class serves them all: `AnthropicModel("...", platform="bedrock")`, or any SDK
client passed as `client=` (models/platforms.py says what each needs).

Why a module of its own: the agent loop speaks the small Model protocol (models/base.py), and
everything specific to the API lives here. The raw stream events are folded into whole content
blocks in request format, and each block is handed on at its `content_block_stop`, so a finished
tool_use reaches the executor while the rest of the message is still streaming. The request gets
prompt-cache breakpoints (tool list, system prompt, the latest message and the user message
before it) so later turns read the prefix from cache. SDK exceptions become `ModelError` with a closed `kind` and a message that
says what to do next, because the person sees that message, not a traceback
(anthropic_errors.py).

`anthropic` takes over a second to import, so it is imported when the first request is made,
never at module import (`import ipy_agent` stays cheap).
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import re
import typing
from collections.abc import AsyncIterator
from typing import Any, TypedDict, cast

from ipy_agent.history.blocks import ContentBlock, JsonObject, Message, TextBlock, ToolSpec

from .anthropic_errors import to_model_error
from .base import (
    BlockComplete,
    Cost,
    MessageComplete,
    ModelError,
    ModelEvent,
    ModelRequest,
    TextDelta,
    ThinkingDelta,
    Usage,
)
from .platforms import (
    PLATFORMS,
    Platform,
    default_name,
    is_regional,
    make_client,
    platform_of,
    through_gateway,
    where,
)

__all__ = ["MISSING_KEY_MESSAGE", "AnthropicModel", "default_model"]

# Used only when the installed SDK lists no Sonnet alias at all.
FALLBACK_MODEL = "claude-sonnet-4-6"
DEFAULT_MAX_TOKENS = 16_000

MISSING_KEY_MESSAGE = (
    "No Anthropic API key found: ANTHROPIC_API_KEY is not set. Set it before running %agent, "
    "for example `export ANTHROPIC_API_KEY=sk-ant-...` in the shell that starts Jupyter, or "
    "`os.environ['ANTHROPIC_API_KEY'] = '...'` in a cell (keys: https://console.anthropic.com). "
    "To try the agent offline, replay a transcript with `%agent --script PATH`."
)


class MessagesParams(TypedDict, total=False):
    """The keyword arguments of the SDK's `messages.create` that the agent sends."""

    model: str
    max_tokens: int
    messages: list[Message]
    system: list[TextBlock]
    tools: list[ToolSpec]
    thinking: JsonObject
    extra_headers: dict[str, str]


_SONNET_ALIAS = re.compile(r"claude-sonnet-(\d{1,2}(?:-\d{1,2})?)")


def newest_sonnet() -> str:
    """The newest `claude-sonnet-*` alias (no date snapshot) that the installed SDK lists."""
    try:
        from anthropic.types.model import Model  # deferred: importing anthropic is slow
    except Exception:
        return FALLBACK_MODEL
    names = [a for arg in typing.get_args(Model) for a in typing.get_args(arg) if isinstance(a, str)]
    best: tuple[tuple[int, ...], str] | None = None
    for name in names:
        m = _SONNET_ALIAS.fullmatch(name)
        if m:
            version = tuple(int(p) for p in m.group(1).split("-"))
            if best is None or version > best[0]:
                best = (version, name)
    return best[1] if best else FALLBACK_MODEL


def default_model() -> str:
    """`IPY_AGENT_MODEL` when set, else the newest Sonnet the SDK knows."""
    return os.environ.get("IPY_AGENT_MODEL", "").strip() or newest_sonnet()


class AnthropicModel:
    """The Anthropic Messages API as a Model, on Anthropic's API or a cloud.

    `model`: a model name as the platform spells it ("us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    on Bedrock, "claude-sonnet-4-5@20250929" on Vertex); default `IPY_AGENT_MODEL`, else the
    newest Sonnet the SDK lists.
    `platform`: "anthropic" (default), "bedrock", "vertex" or "foundry"; taken from `client` when
    one is given. Prompt caching, streaming and tool use work the same on all four; Bedrock
    cannot count tokens (the context manager then estimates).
    `thinking`: passed through, e.g. `{"type": "enabled", "budget_tokens": 4000}`; thinking
    blocks come back with their signatures and must stay in the history verbatim.
    `betas`: `anthropic-beta` header values sent with every request, e.g.
    `[CONTEXT_1M_BETA]` (models/pricing.py) for the 1M-token window on models that offer it.
    `client`: an SDK client (`anthropic.AsyncAnthropic`, `AsyncAnthropicBedrock`, ...) to use as
    is. Otherwise one is made on the first request from `client_kwargs` (e.g. `api_key=`,
    `base_url=`, `aws_region=`, `region=`, `project_id=`, `access_token=`, `max_retries=`
    default 2); each client reads its platform's environment variables itself and retries 429,
    529 and connection errors.
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        thinking: JsonObject | None = None,
        betas: typing.Sequence[str] = (),
        platform: Platform | None = None,
        client: Any = None,
        **client_kwargs: Any,
    ) -> None:
        if platform is not None and platform not in PLATFORMS:
            raise ValueError(f"platform must be one of {', '.join(PLATFORMS)}, not {platform!r}")
        self.platform: Platform = platform or (platform_of(client) if client is not None else "anthropic")
        self._name = model or os.environ.get("IPY_AGENT_MODEL", "").strip() or None
        self.max_tokens = max_tokens
        self.thinking = dict(thinking) if thinking else None
        self.betas = tuple(betas)
        self._client = client
        self._client_is_ours = client is None
        self._client_loop: asyncio.AbstractEventLoop | None = None
        self._client_kwargs = {"max_retries": 2, **client_kwargs}
        if self.platform == "anthropic" and client is None:
            self._client_kwargs = through_gateway(self._client_kwargs)

    @property
    def name(self) -> str:
        if self._name is None:
            self._name = default_name(self.platform, newest_sonnet())
        return self._name

    @property
    def provider(self) -> str:
        return self.platform

    @property
    def where(self) -> str:
        """The platform, and its region or address when known (for `%agent_tools`)."""
        return where(self.platform, self._client_kwargs)

    def __repr__(self) -> str:
        extra = f", platform={self.platform!r}" if self.platform != "anthropic" else ""
        return f"AnthropicModel({self.name!r}{extra})"

    def cost(self, usage: Usage) -> Cost:
        """The estimated cost of `usage`: Anthropic's prices, +10% on a cloud's regional endpoint."""
        from .pricing import claude_cost

        target = self._client if self._client is not None else self._client_kwargs
        return claude_cost(self.name, usage, regional=is_regional(self.platform, self.name, target))

    @property
    def context_window(self) -> int:
        """Tokens of prompt this model accepts with the beta headers it sends."""
        from .pricing import context_window

        return context_window(self.name, betas=self.betas)

    # -- the request ---------------------------------------------------------------------------

    def request_params(self, request: ModelRequest) -> MessagesParams:
        """The keyword arguments for `messages.create`, with cache breakpoints on the tool
        list, the system prompt, the latest message and the user message before it (four, the
        API's most). `request` is never modified."""
        params: MessagesParams = {
            "model": self.name,
            "max_tokens": self.max_tokens,
            "messages": _messages_with_breakpoint(request.messages),
        }
        if request.system:
            params["system"] = [{"type": "text", "text": request.system, "cache_control": {"type": "ephemeral"}}]
        if request.tools:
            # Copy only what changes: the list and its last tool (the history is shared).
            params["tools"] = [*request.tools[:-1], {**request.tools[-1], "cache_control": {"type": "ephemeral"}}]
        if self.thinking:
            params["thinking"] = copy.deepcopy(self.thinking)
        if self.betas:
            params["extra_headers"] = {"anthropic-beta": ",".join(self.betas)}
        return params

    async def count_tokens(self, request: ModelRequest) -> int:
        """The API's own count of the request's input tokens (messages/count_tokens: no
        generation, no charge). Raises ModelError like `stream`; Bedrock cannot count."""
        if not PLATFORMS[self.platform].counts_tokens:
            raise ModelError(f"{PLATFORMS[self.platform].title} cannot count tokens.", kind="invalid_request")
        client = self._get_client()
        params = self.request_params(request)
        params.pop("max_tokens", None)
        try:
            counted = await client.messages.count_tokens(**params)
        except Exception as err:
            self._raise_model_error(err, client)
        return int(counted.input_tokens)

    def _get_client(self) -> Any:
        if not self._client_is_ours:
            return self._client
        loop = asyncio.get_running_loop()
        # A pooled connection belongs to the loop that opened it; terminal IPython runs each
        # %agent in a fresh asyncio.run, so a client from an earlier loop cannot be reused.
        if self._client is None or self._client_loop is not loop:
            self._client = make_client(self.platform, self._client_kwargs, missing_key_message=MISSING_KEY_MESSAGE)
            self._client_loop = loop
        return self._client

    async def aclose(self) -> None:
        """Close the HTTP client this model made (a client passed in is left to its owner)."""
        if self._client_is_ours and self._client is not None:
            client, self._client = self._client, None
            await client.close()

    # -- the stream ----------------------------------------------------------------------------

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        client = self._get_client()
        params = self.request_params(request)
        try:
            response = await client.messages.create(**params, stream=True)
        except Exception as err:
            self._raise_model_error(err, client)
        folder = _MessageFolder(self.name, PLATFORMS[self.platform].title)
        try:
            async for event in response:
                for out in folder.feed(event):
                    yield out
        except ModelError:
            raise
        except Exception as err:
            self._raise_model_error(err, client)
        finally:
            # Also on cancellation and when the consumer stops early: an unread response
            # would otherwise hold its connection open.
            await response.close()
        yield folder.finish()

    def _raise_model_error(self, err: Exception, client: Any) -> typing.NoReturn:
        error = to_model_error(err, model=self.name, client=client, platform=self.platform)
        if error is None:
            raise err  # not an API failure: a bug, keep its traceback
        raise error from err


class _MessageFolder:
    """Folds raw stream events into whole blocks, in request format, for one message."""

    def __init__(self, model: str, title: str = "the Anthropic API") -> None:
        self.model = model
        self.title = title
        self.open: dict[int, JsonObject] = {}  # blocks being streamed, as the SDK dumps them
        self.json_parts: dict[int, list[str]] = {}
        self.content: list[ContentBlock] = []
        self.usage = Usage()
        self.stop_reason: str | None = None
        self.stopped = False
        self.broken_tool: tuple[str, str] | None = None  # (name, raw input) of a call cut short

    def feed(self, event: Any) -> list[ModelEvent]:
        kind = getattr(event, "type", None)
        if kind == "message_start":
            self.model = event.message.model or self.model
            self._update_usage(event.message.usage)
        elif kind == "content_block_start":
            block = event.content_block.model_dump(mode="json", exclude_none=True)
            self.open[event.index] = block
            if "input" in block:
                self.json_parts[event.index] = []
        elif kind == "content_block_delta":
            return self._delta(self.open[event.index], event.index, event.delta)
        elif kind == "content_block_stop":
            return self._close(event.index)
        elif kind == "message_delta":
            self.stop_reason = event.delta.stop_reason or self.stop_reason
            self._update_usage(event.usage)
        elif kind == "message_stop":
            self.stopped = True
        return []

    def _delta(self, block: JsonObject, index: int, delta: Any) -> list[ModelEvent]:
        match delta.type:
            case "text_delta":
                block["text"] = str(block.get("text", "")) + delta.text
                return [TextDelta(text=delta.text)]
            case "thinking_delta":
                block["thinking"] = str(block.get("thinking", "")) + delta.thinking
                return [ThinkingDelta(text=delta.thinking)]
            case "signature_delta":
                block["signature"] = str(block.get("signature", "")) + delta.signature
            case "input_json_delta":
                self.json_parts.setdefault(index, []).append(delta.partial_json)
            case "citations_delta":
                citations = block.setdefault("citations", [])
                if isinstance(citations, list):
                    citations.append(delta.citation.model_dump(mode="json", exclude_none=True))
        return []

    def _close(self, index: int) -> list[ModelEvent]:
        block = self.open.pop(index)
        parts = self.json_parts.pop(index, None)
        # A call without arguments streams one empty `partial_json`: its input stays {}.
        raw = "".join(parts or ()).strip()
        if raw:
            try:
                block["input"] = json.loads(raw)
            except json.JSONDecodeError:
                # Usually the reply hit max_tokens in the middle of this call; message_delta
                # says so only after this block. Leave the call out and decide in finish().
                self.broken_tool = (str(block.get("name")), raw)
                return []
        # The API rejects an empty text block in a later request, so one never enters history.
        if block.get("type") == "text" and not block.get("text"):
            return []
        # The SDK's own block, dumped as JSON in request format: the edge where it becomes ours.
        whole = cast(ContentBlock, block)
        self.content.append(whole)
        return [BlockComplete(block=copy.deepcopy(whole), index=len(self.content) - 1)]

    def _update_usage(self, usage: Any) -> None:
        # message_start carries the prompt side; message_delta carries cumulative totals.
        for field in ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"):
            value = getattr(usage, field, None)
            if value is not None:
                setattr(self.usage, field, value)

    def finish(self) -> MessageComplete:
        if not self.stopped:
            raise ModelError(
                f"The response stream from {self.title} ended before the message was complete "
                "(no message_stop). Run the prompt again.",
                kind="connection",
            )
        if self.broken_tool is not None and self.stop_reason != "max_tokens":
            name, raw = self.broken_tool
            raise ModelError(
                f"The model sent tool input for {name!r} that is not valid JSON: {raw[:200]!r}. Run the prompt again.",
                kind="other",
            )
        # At max_tokens the cut-off call is simply not part of the message; the loop reports
        # the limit (raise max_tokens, or ask the agent to continue in smaller steps).
        return MessageComplete(
            content=self.content, stop_reason=self.stop_reason or "end_turn", usage=self.usage, model=self.model
        )


def _messages_with_breakpoint(messages: list[Message]) -> list[Message]:
    """`messages` with a cache breakpoint on the last block of the latest message, and one on
    the last block of the user message before it.

    The second is where the previous request had its breakpoint: the API looks for a cached
    prefix only up to 20 blocks before a breakpoint, and a turn with ten parallel calls adds
    more than that (ten tool_use blocks, ten tool_result blocks, the text), so with the latest
    breakpoint alone the whole conversation would be written to the cache again. Breakpoints
    cost nothing by themselves: only the tokens written or read are billed.

    Only the list and the messages that get a breakpoint are copied: the rest is the agent's
    history, shared and left as it is, so a turn costs the same however long the conversation is."""
    if not messages:
        return list(messages)
    out = list(messages)
    out[-1] = _with_breakpoint(out[-1])
    for i in range(len(out) - 2, -1, -1):
        if out[i].get("role") == "user":
            out[i] = _with_breakpoint(out[i])
            break
    return out


def _with_breakpoint(message: Message) -> Message:
    """A copy of `message` whose last block that may carry one has a cache breakpoint."""
    content = message.get("content")
    if isinstance(content, str):
        if not content:
            return message
        content = [{"type": "text", "text": content}]
    blocks = list(content or [])
    for i in range(len(blocks) - 1, -1, -1):
        block = blocks[i]
        # Thinking blocks cannot carry a cache breakpoint (the API rejects cache_control on them).
        if block["type"] != "thinking" and block["type"] != "redacted_thinking":
            cached = block.copy()
            cached["cache_control"] = {"type": "ephemeral"}
            blocks[i] = cached
            return {**message, "content": blocks}
    return message
