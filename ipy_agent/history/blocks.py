"""The wire data, typed: a Messages API message, its content blocks, a tool definition, and JSON.

The conversation is kept in the Anthropic Messages format whatever the model (models/base.py),
and these TypedDicts are that format: a `Message` is exactly the dict the API takes and a saved
conversation holds, so nothing is converted to send or to save. The model adapters (`models/`)
are the only place where other shapes become these: the SDK's own types, an OpenAI-compatible
stream, a transcript file. Everything above reads them by their fields.

A block may carry keys its TypedDict does not name (the API adds some, such as `citations`); they
are kept and sent back as they came. `JsonValue` and `JsonObject` stand for JSON whose shape is
genuinely open: a tool's input before it is validated, a JSON Schema, an MCP payload; a reader
narrows them with `isinstance`.
"""

from __future__ import annotations

import base64
from typing import Literal, NotRequired, TypeAlias, TypedDict, TypeGuard

__all__ = [
    "Base64Source",
    "CacheControl",
    "ContentBlock",
    "DocumentBlock",
    "ImageBlock",
    "ImageSource",
    "JsonObject",
    "JsonValue",
    "Message",
    "RedactedThinkingBlock",
    "ResultPart",
    "Role",
    "TextBlock",
    "ThinkingBlock",
    "ToolResultBlock",
    "ToolSpec",
    "ToolUseBlock",
    "UrlSource",
    "image_block",
    "is_content_block",
    "is_tool_result",
    "text_block",
    "tool_result",
]

JsonValue: TypeAlias = "bool | int | float | str | list[JsonValue] | dict[str, JsonValue] | None"
JsonObject: TypeAlias = "dict[str, JsonValue]"

Role = Literal["user", "assistant"]


class CacheControl(TypedDict):
    type: Literal["ephemeral"]


class TextBlock(TypedDict):
    type: Literal["text"]
    text: str
    cache_control: NotRequired[CacheControl]


class Base64Source(TypedDict):
    type: Literal["base64"]
    media_type: str
    data: str


class UrlSource(TypedDict):
    type: Literal["url"]
    url: str


ImageSource = Base64Source | UrlSource


class ImageBlock(TypedDict):
    type: Literal["image"]
    source: ImageSource
    cache_control: NotRequired[CacheControl]


class DocumentBlock(TypedDict):
    """A PDF or text document given in a prompt (the agent passes it on; it makes none)."""

    type: Literal["document"]
    source: JsonObject
    title: NotRequired[str]
    cache_control: NotRequired[CacheControl]


class ToolUseBlock(TypedDict):
    """A call the model asks for; `input` is as the model sent it, validated by the tool."""

    type: Literal["tool_use"]
    id: str
    name: str
    input: JsonObject
    cache_control: NotRequired[CacheControl]


# What a tool result may hold besides plain text.
ResultPart = TextBlock | ImageBlock


def image_block(data: bytes, media_type: str) -> ImageBlock:
    """An image given inline, as the API takes it (base64)."""
    return {
        "type": "image",
        "source": {"type": "base64", "media_type": media_type, "data": base64.b64encode(data).decode("ascii")},
    }


class ToolResultBlock(TypedDict):
    """The answer to one tool_use, in the next user message; `is_error` when the call failed."""

    type: Literal["tool_result"]
    tool_use_id: str
    content: str | list[ResultPart]
    is_error: NotRequired[bool]
    cache_control: NotRequired[CacheControl]


class ThinkingBlock(TypedDict):
    """The model's reasoning; kept verbatim with its signature (the API checks it)."""

    type: Literal["thinking"]
    thinking: str
    signature: str


class RedactedThinkingBlock(TypedDict):
    type: Literal["redacted_thinking"]
    data: str


ContentBlock = (
    TextBlock | ImageBlock | DocumentBlock | ToolUseBlock | ToolResultBlock | ThinkingBlock | RedactedThinkingBlock
)


class Message(TypedDict):
    """One message of the history, exactly as the model sees it and a saved conversation holds it.

    `content` is a list of blocks in every message the agent makes; a string (one text block)
    is accepted where a person or a file gave one (`history.messages.as_blocks` reads both)."""

    role: Role
    content: str | list[ContentBlock]


class ToolSpec(TypedDict):
    """A tool as the model is offered it."""

    name: str
    description: str
    input_schema: JsonObject
    cache_control: NotRequired[CacheControl]


def text_block(text: str) -> TextBlock:
    return {"type": "text", "text": text}


def tool_result(tool_use_id: str, content: str | list[ResultPart], *, is_error: bool = False) -> ToolResultBlock:
    """A tool_result block; `is_error` is present only when true (as the API's examples write it)."""
    block: ToolResultBlock = {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}
    if is_error:
        block["is_error"] = True
    return block


def is_content_block(value: object) -> TypeGuard[ContentBlock]:
    """Whether JSON read from outside (a transcript, a saved file, a model's block with our
    private keys removed) has the shape every reader of a history relies on: an object with a
    string `type`. The fields each type needs are the API's to check (and, for a saved
    conversation, `config/conversation_file.py`'s)."""
    return isinstance(value, dict) and isinstance(value.get("type"), str)


def is_tool_result(value: object) -> TypeGuard[ToolResultBlock]:
    """Whether a value handed over as a tool's result is a tool_result block (by its `type`)."""
    return isinstance(value, dict) and value.get("type") == "tool_result"
