"""Context window management: size every request, clear old tool results, compact the conversation.

`ContextManager` (manager.py) is what the agent uses; the pure parts are clearing.py (the note
that replaces a cleared result), compaction.py (where to cut, what to summarise), ledger.py
(incremental accounting) and report.py (what `%agent_context` shows).
"""

from __future__ import annotations

from .manager import ContextManager, RequestSize

__all__ = ["ContextManager", "RequestSize"]
