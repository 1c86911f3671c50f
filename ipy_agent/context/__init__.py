"""The context window: size every request, clear old tool results, compact the conversation.

"Context" in this package means the model's context window and nothing else (what a tool call
is given is its `ToolContext`, in contract/). Modules import one way, each only from those
above it in this list:
- `tokens`: a local estimate of how many tokens a request takes, block by block;
- `clearing`: the note that replaces a cleared tool result, and how to recognise it;
- `compaction`: where to cut, what to summarise, the summary message;
- `ledger`: incremental accounting of the conversation's size and clearable results;
- `manager`: `ContextManager`, which keeps every request inside the window before it is sent;
- `report`: what fills the window, as text (`%agent_context`).
"""

from __future__ import annotations

from .manager import ContextManager, RequestSize

__all__ = ["ContextManager", "RequestSize"]
