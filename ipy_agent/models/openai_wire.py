"""Anthropic Messages <-> OpenAI Chat Completions: the translation at the OpenAI model's edge.

The agent keeps its conversation in the Anthropic Messages format whatever model it talks to
(models/base.py): its history, tool schemas, context management and saved conversations all
speak it. `OpenAIModel` (openai.py) translates each request here, and folds the streamed reply
back into Anthropic content blocks. The mapping, both ways:

Request, Anthropic -> Chat Completions:

| Anthropic                              | Chat Completions                                         |
|----------------------------------------|----------------------------------------------------------|
| `system`                               | a first message `{"role": "system"}`                     |
| user `text` block                      | a `text` content part (text alone: one string)           |
| user `image` block (base64 or url)     | an `image_url` part (a `data:` URL for base64); for a    |
|                                        | model without vision, a text note naming the image       |
| user `document` block                  | a text note (Chat Completions takes no documents)        |
| `tool_result` block                    | a `{"role": "tool", "tool_call_id"}` message with its    |
|                                        | text, before the rest of that user message; `is_error`   |
|                                        | prefixes "Error: "; its images follow in a user message  |
| assistant `text` blocks                | `content` (joined)                                       |
| assistant `tool_use`                   | `tool_calls[]`: `{"id", "type": "function", "function":  |
|                                        | {"name", "arguments": JSON text}}`                       |
| assistant `thinking`, `redacted_...`   | left out (their signatures mean nothing to another model)|
| `cache_control` anywhere               | left out                                                 |
| tool `{name, description, input_schema}` | `{"type": "function", "function": {name, description,  |
|                                        | "parameters": input_schema}}`                            |

Reply, Chat Completions stream -> Anthropic:

| Chat Completions chunk                 | Anthropic                                                |
|----------------------------------------|----------------------------------------------------------|
| `delta.content`                        | a `text` block, streamed as `TextDelta`                  |
| `delta.reasoning_content` / `reasoning`| `ThinkingDelta` (shown while it streams, not kept)       |
| `delta.tool_calls[i]`                  | a `tool_use` block; it is complete, and handed to the    |
|                                        | executor, when call i+1 starts or the stream finishes    |
| `finish_reason` stop / tool_calls /    | `stop_reason` end_turn / tool_use / max_tokens / refusal |
| length / content_filter                |                                                          |
| `usage` prompt_tokens (cached_tokens), | `input_tokens` (+ `cache_read_input_tokens`),            |
| completion_tokens                      | `output_tokens`                                          |
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TypedDict

from ipy_agent.history.blocks import (
    ContentBlock,
    JsonObject,
    JsonValue,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolSpec,
    ToolUseBlock,
)
from ipy_agent.history.messages import as_blocks

from .base import BlockComplete, MessageComplete, ModelError, ModelEvent, TextDelta, ThinkingDelta, Usage

__all__ = ["ChatFolder", "chat_messages", "chat_tools", "image_note"]

_STOP = {"stop": "end_turn", "tool_calls": "tool_use", "function_call": "tool_use", "length": "max_tokens"}
_STOP["content_filter"] = "refusal"


def chat_tools(tools: Sequence[ToolSpec]) -> list[JsonObject]:
    """Anthropic tool definitions as Chat Completions functions."""
    return [
        {
            "type": "function",
            "function": {
                "name": t["name"],
                "description": t.get("description", ""),
                "parameters": t.get("input_schema") or {"type": "object", "properties": {}},
            },
        }
        for t in tools
    ]


def chat_messages(system: str, messages: Sequence[Message], *, vision: bool) -> list[JsonObject]:
    """The conversation as Chat Completions messages (see the table in the module docstring)."""
    out: list[JsonObject] = [{"role": "system", "content": system}] if system else []
    for message in messages:
        blocks = as_blocks(message.get("content"))
        if message.get("role") == "assistant":
            out += _assistant(blocks)
        else:
            out += _user(blocks, vision=vision)
    return out


def _assistant(blocks: list[ContentBlock]) -> list[JsonObject]:
    text = "".join(str(b.get("text", "")) for b in blocks if b["type"] == "text")
    calls: list[JsonValue] = [
        {
            "id": str(b.get("id")),
            "type": "function",
            "function": {"name": str(b.get("name")), "arguments": json.dumps(b.get("input") or {})},
        }
        for b in blocks
        if b["type"] == "tool_use"
    ]
    if not text and not calls:
        return []
    message: JsonObject = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = calls
    return [message]


def _user(blocks: list[ContentBlock], *, vision: bool) -> list[JsonObject]:
    out: list[JsonObject] = []
    parts: list[JsonObject] = []
    for block in blocks:
        if block["type"] == "tool_result":
            text, images = _result_parts(block, vision=vision)
            out.append({"role": "tool", "tool_call_id": str(block.get("tool_use_id")), "content": text})
            if images:
                note = f"The image{'s' if len(images) > 1 else ''} below came with the result of tool call {block.get('tool_use_id')}."
                parts += [{"type": "text", "text": note}, *images]
        else:
            parts += _part(block, vision=vision)
    if parts:
        only_text = all(p["type"] == "text" for p in parts)
        content: JsonValue = "\n\n".join(str(p["text"]) for p in parts) if only_text else [*parts]
        out.append({"role": "user", "content": content})
    return out


def _result_parts(block: ToolResultBlock, *, vision: bool) -> tuple[str, list[JsonObject]]:
    content = block.get("content")
    items = as_blocks(content) if isinstance(content, str) else list(content or [])
    texts: list[str] = []
    images: list[JsonObject] = []
    for item in items:
        if item["type"] == "image" and vision:
            images += _part(item, vision=True)
        else:
            texts += [str(p["text"]) for p in _part(item, vision=False)]
    text = "\n".join(texts) or "(no output)"
    if block.get("is_error") and not text.startswith("Error"):
        text = f"Error: {text}"
    return text, images


def _part(block: ContentBlock, *, vision: bool) -> list[JsonObject]:
    if block["type"] == "text":
        return [{"type": "text", "text": str(block.get("text", ""))}]
    if block["type"] == "image":
        source: Mapping[str, object] = block.get("source") or {}
        if not vision:
            return [{"type": "text", "text": image_note(source)}]
        if source.get("type") == "url":
            url = str(source.get("url"))
        else:
            url = f"data:{source.get('media_type', 'image/png')};base64,{source.get('data', '')}"
        return [{"type": "image_url", "image_url": {"url": url}}]
    if block["type"] == "document":
        title = block.get("title") or (block.get("source") or {}).get("media_type", "a document")
        return [{"type": "text", "text": f"[document {title}: not shown, this model takes no documents]"}]
    if block["type"] in ("thinking", "redacted_thinking", "tool_use"):
        return []
    return [{"type": "text", "text": json.dumps({k: v for k, v in block.items() if k != "cache_control"})}]


def image_note(source: Mapping[str, object]) -> str:
    """The text that stands for an image a model cannot see."""
    if source.get("type") == "url":
        return f"[image at {source.get('url')}: not shown, this model does not take images]"
    size = len(str(source.get("data", ""))) * 3 // 4
    return f"[image ({source.get('media_type', 'image')}, {max(1, size // 1024)} KB): not shown, this model does not take images]"


def _object(value: JsonValue | None) -> JsonObject:
    return value if isinstance(value, dict) else {}


def _count(value: JsonValue | None) -> int:
    return int(value) if isinstance(value, int | float | str) and value else 0


class _Call(TypedDict):
    """A tool call being streamed: its id, its name and its arguments' text so far."""

    id: str
    name: str
    args: list[str]


class ChatFolder:
    """Folds a Chat Completions stream (chunks as dicts) into Anthropic blocks for one message.

    `title` names the server in error messages."""

    def __init__(self, model: str, title: str) -> None:
        self.model = model
        self.title = title
        self.content: list[ContentBlock] = []
        self.text: str | None = None  # the text block being streamed
        self.calls: dict[int, _Call] = {}  # by the call's index
        self.usage = Usage()
        self.finish: str | None = None
        self._ids = 0

    def feed(self, chunk: JsonObject) -> list[ModelEvent]:
        self.model = str(chunk.get("model") or self.model)
        if isinstance(usage := chunk.get("usage"), dict):
            self._usage(usage)
        out: list[ModelEvent] = []
        choices = chunk.get("choices")
        for choice in choices if isinstance(choices, list) else []:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = _object(choice.get("delta"))
            thinking = delta.get("reasoning_content") or delta.get("reasoning")
            if isinstance(thinking, str) and thinking:
                out.append(ThinkingDelta(text=thinking))
            text = delta.get("content")
            if isinstance(text, str) and text:
                out += self._close_calls()
                self.text = (self.text or "") + text
                out.append(TextDelta(text=text))
            calls = delta.get("tool_calls")
            for position, call in enumerate(calls if isinstance(calls, list) else []):
                out += self._call_delta(_object(call), position)
            if choice.get("finish_reason"):
                self.finish = str(choice["finish_reason"])
        return out

    def _call_delta(self, call: JsonObject, position: int) -> list[ModelEvent]:
        given = call.get("index")
        index = given if isinstance(given, int) else position
        out: list[ModelEvent] = []
        if index not in self.calls:
            out += self._close_text()
            out += self._close_calls(below=index)  # calls stream one after another: earlier ones are whole
            self.calls[index] = {"id": "", "name": "", "args": []}
        state = self.calls[index]
        function = _object(call.get("function"))
        state["id"] = state["id"] or str(call.get("id") or "")
        state["name"] += str(function.get("name") or "")
        if function.get("arguments"):
            args = function["arguments"]
            state["args"].append(args if isinstance(args, str) else json.dumps(args))
        return out

    def _close_text(self) -> list[ModelEvent]:
        if not self.text:
            self.text = None
            return []
        block: TextBlock = {"type": "text", "text": self.text}
        self.text = None
        self.content.append(block)
        return [BlockComplete(block=block.copy(), index=len(self.content) - 1)]

    def _close_calls(self, below: int | None = None) -> list[ModelEvent]:
        out: list[ModelEvent] = []
        for index in sorted(self.calls):
            if below is not None and index >= below:
                continue
            state = self.calls.pop(index)
            block = self._tool_use(state)
            if block is not None:
                self.content.append(block)
                out.append(BlockComplete(block=json.loads(json.dumps(block)), index=len(self.content) - 1))
        return out

    def _tool_use(self, state: _Call) -> ToolUseBlock | None:
        raw = "".join(state["args"]).strip()
        name = state["name"] or "?"
        try:
            value: JsonValue = json.loads(raw) if raw else {}
            if isinstance(value, str):  # arguments encoded twice, as some small models do
                value = json.loads(value)
        except json.JSONDecodeError:
            if self.finish == "length":
                return None  # cut off by max_tokens; the loop says so
            raise ModelError(
                f"The model sent arguments for {name!r} that are not valid JSON: {raw[:200]!r}. Run the prompt again.",
                kind="other",
            ) from None
        if not isinstance(value, dict):
            raise ModelError(f"The model sent arguments for {name!r} that are not an object: {raw[:200]!r}.")
        self._ids += 1
        return {"type": "tool_use", "id": state["id"] or f"call_{self._ids}", "name": name, "input": value}

    def _usage(self, usage: JsonObject) -> None:
        prompt = _count(usage.get("prompt_tokens"))
        cached = _count(_object(usage.get("prompt_tokens_details")).get("cached_tokens"))
        self.usage = Usage(
            input_tokens=max(0, prompt - cached),
            output_tokens=_count(usage.get("completion_tokens")),
            cache_read_input_tokens=cached,
        )

    def done(self) -> tuple[list[ModelEvent], MessageComplete]:
        """The blocks still open, and the whole message; ModelError for a stream cut short."""
        if self.finish is None:
            raise ModelError(
                f"The response stream from {self.title} ended before the message was complete (no finish_reason). "
                "Run the prompt again.",
                kind="connection",
            )
        events = self._close_text() + self._close_calls()
        has_calls = any(b["type"] == "tool_use" for b in self.content)
        # Some servers say "stop" after tool calls; the calls are what counts.
        stop = "tool_use" if has_calls and self.finish != "length" else _STOP.get(self.finish, "end_turn")
        return events, MessageComplete(content=self.content, stop_reason=stop, usage=self.usage, model=self.model)
