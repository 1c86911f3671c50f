"""Old tool results, cleared: the note that replaces one, and how to recognise it later.

Clearing is the cheap first step when a conversation nears its context window: the oldest tool
results are usually the largest part of it and the least useful (a file read an hour ago, a test
run since superseded). The tool_use and its tool_result block stay, so every call is still
answered once and the history stays valid; only the result's content becomes a short note that
says what was there and how to get it back: the spill file that still holds it, "Read the file
again", or the call that produced it.
"""

from __future__ import annotations

import json

from ipy_agent.history.blocks import JsonObject, ToolResultBlock
from ipy_agent.runtime.budget import result_chars

__all__ = ["CLEARED_PREFIX", "clear_note", "cleared_block", "is_cleared"]

CLEARED_PREFIX = "[Tool result cleared to save context"
_INPUT_CHARS = 200


def _size(chars: int) -> str:
    return f"{chars:,} characters" if chars < 10_240 else f"{chars / 1024:.0f} KB"


def _call_text(name: str, tool_input: JsonObject) -> str:
    try:
        text = json.dumps(tool_input, ensure_ascii=False, separators=(", ", ": "))
    except (TypeError, ValueError):
        text = str(tool_input)
    return f"{name} {text if len(text) <= _INPUT_CHARS else text[:_INPUT_CHARS] + '…'}"


def clear_note(*, name: str, tool_input: JsonObject, chars: int, spilled_to: str | None, reads_file: bool) -> str:
    """What the model reads in place of a cleared result."""
    what = f"{CLEARED_PREFIX}: the {_size(chars)} output of {_call_text(name, tool_input)}."
    if spilled_to:
        how = f" The full output is still saved at {spilled_to}; Read it (with offset/limit) or Grep it if you need it."
    elif reads_file and name != "Read":
        how = f" Call {name} again if you need what it showed (and before editing it)."
    elif reads_file:
        how = " Read the file again if you need its content (and before editing it)."
    else:
        how = f" If you need it again, call {name} again with the same input."
    return what + how + "]"


def is_cleared(block: ToolResultBlock) -> bool:
    content: object = block.get("content")
    if isinstance(content, list) and len(content) == 1 and isinstance(content[0], dict):
        content = content[0].get("text")
    return isinstance(content, str) and content.startswith(CLEARED_PREFIX)


def cleared_block(block: ToolResultBlock, note: str) -> ToolResultBlock:
    """A copy of the tool_result `block` with its content replaced by `note` (pairing kept)."""
    return {**block, "content": note}


def content_chars(block: ToolResultBlock) -> int:
    return result_chars(block)
