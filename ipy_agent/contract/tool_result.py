"""`ToolResultBlock`: what a tool's result becomes for the model (`Tool.map_result`).

The Messages API's `tool_result` content block, typed: the call it answers, its content (text,
or a list of content blocks such as text and images) and whether it reports an error. The
runtime adds nothing but what it must (the limits in runtime/budget.py, hook context).
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

__all__ = ["ToolResultBlock"]


class ToolResultBlock(TypedDict):
    type: Literal["tool_result"]
    tool_use_id: str
    content: str | list[dict[str, Any]]
    is_error: NotRequired[bool]
