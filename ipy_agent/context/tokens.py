"""A local estimate of how many tokens a request takes, block by block.

The context manager must know, before every request, whether the conversation still fits the
model's window. Asking the API each time costs a round trip, so the everyday answer is this
estimate: about four characters per token for text, tool inputs as their JSON, a flat charge
for images, and a few tokens of framing per block and message. It is deliberately simple and
deterministic; the context manager scales it by what the API reported for earlier requests.
Functions here take single blocks or messages so callers can add up incrementally instead of
rescanning a whole history.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from ipy_agent.history.blocks import Message, ToolSpec

__all__ = [
    "CHARS_PER_TOKEN",
    "IMAGE_TOKENS",
    "block_tokens",
    "content_tokens",
    "message_tokens",
    "messages_tokens",
    "request_tokens",
    "text_tokens",
    "tools_tokens",
]

CHARS_PER_TOKEN = 4
# An image costs about width*height/750 tokens; images we send are at most about 1.2 megapixels.
IMAGE_TOKENS = 1_600
BLOCK_OVERHEAD = 3
MESSAGE_OVERHEAD = 4


def text_tokens(text: str) -> int:
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def _json_tokens(value: object) -> int:
    try:
        return text_tokens(json.dumps(value, ensure_ascii=False, separators=(",", ":")))
    except (TypeError, ValueError):
        return text_tokens(str(value))


def content_tokens(content: object) -> int:
    """Tokens of a message's or tool_result's content (a string or a list of blocks)."""
    if content is None:
        return 0
    if isinstance(content, str):
        return text_tokens(content)
    if isinstance(content, list):
        return sum(block_tokens(b) for b in content)
    return _json_tokens(content)


def block_tokens(block: object) -> int:
    if not isinstance(block, dict):
        return _json_tokens(block)
    kind = block.get("type")
    if kind == "text":
        n = text_tokens(str(block.get("text", "")))
    elif kind == "tool_use":
        n = text_tokens(str(block.get("name", ""))) + _json_tokens(block.get("input", {}))
    elif kind == "tool_result":
        n = content_tokens(block.get("content"))
    elif kind == "thinking":
        n = text_tokens(str(block.get("thinking", "")))
    elif kind == "redacted_thinking":
        n = text_tokens(str(block.get("data", "")))
    elif kind in ("image", "document"):
        source = block.get("source") or {}
        n = (
            IMAGE_TOKENS
            if kind == "image" or source.get("type") != "text"
            else text_tokens(str(source.get("data", "")))
        )
    else:
        n = _json_tokens(block)
    return n + BLOCK_OVERHEAD


def message_tokens(message: Message) -> int:
    return content_tokens(message.get("content")) + MESSAGE_OVERHEAD


def messages_tokens(messages: Sequence[Message]) -> int:
    return sum(message_tokens(m) for m in messages)


def tools_tokens(tools: Sequence[ToolSpec]) -> int:
    return sum(_json_tokens(t) for t in tools)


def request_tokens(system: str, tools: Sequence[ToolSpec], messages: Sequence[Message]) -> int:
    """The whole request, scanned: for tests, `%agent_context` and the first request."""
    return text_tokens(system) + tools_tokens(tools) + messages_tokens(messages)
