"""tool_use ids as the model sent them are untrusted: made well-formed and unique before use.

An id keys the result the model gets back, the trace, the executor's bookkeeping and the name
of a spill file. A model (or a scripted transcript, or a proxy) may send a number, a list, an
empty or repeated id, or one with path characters. The Messages API only accepts ids made of
letters, digits, `_` and `-`, unique in the conversation, so a bad one is replaced by a fresh
id, the same on the block handed to the executor as it streams and in the message kept in the
history: every tool_use is then answered exactly once and the history stays valid.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable
from typing import Any

__all__ = ["ToolUseIds", "ids_in"]

_VALID = re.compile(r"^[A-Za-z0-9_-]{1,128}$")


def ids_in(messages: Iterable[dict[str, Any]]) -> set[str]:
    """The tool_use ids already in a conversation."""
    found: set[str] = set()
    for m in messages:
        content = m.get("content")
        if isinstance(content, list):
            found.update(str(b.get("id")) for b in content if isinstance(b, dict) and b.get("type") == "tool_use")
    return found


class ToolUseIds:
    """Fixes the ids of one assistant message, by position: the k-th tool_use block gets the
    same id whether it is seen streamed (`fix`) or in the final content (`fix_all`)."""

    def __init__(self, taken: Iterable[str] = ()) -> None:
        self._taken = set(taken)
        self._by_position: list[str] = []
        self._streamed = 0

    def _id_for(self, position: int, raw: Any) -> str:
        if position < len(self._by_position):
            return self._by_position[position]
        good = isinstance(raw, str) and _VALID.match(raw) is not None and raw not in self._taken
        new = raw if good else f"toolu_fixed_{uuid.uuid4().hex[:20]}"
        self._taken.add(new)
        self._by_position.append(new)
        return new

    def fix(self, block: dict[str, Any]) -> dict[str, Any]:
        """The next streamed tool_use block, with a usable id (a copy when it changed)."""
        new = self._id_for(self._streamed, block.get("id"))
        self._streamed += 1
        return block if block.get("id") == new else {**block, "id": new}

    def fix_all(self, content: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out, position = [], 0
        for b in content:
            if b.get("type") == "tool_use":
                new = self._id_for(position, b.get("id"))
                position += 1
                b = b if b.get("id") == new else {**b, "id": new}
            out.append(b)
        return out
