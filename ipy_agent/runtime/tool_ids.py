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
from collections import Counter
from collections.abc import Container
from typing import Any

__all__ = ["HistoryIds", "TakenIds", "ToolUseIds"]

_VALID = re.compile(r"^[A-Za-z0-9_-]{1,128}$")


def _message_ids(message: dict[str, Any]) -> list[str]:
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [str(b.get("id")) for b in content if isinstance(b, dict) and b.get("type") == "tool_use"]


class TakenIds:
    """The ids of a history plus those given out since: `in` and `add`, without copying the history's."""

    def __init__(self, history: Container[str] = ()) -> None:
        self._history = history
        self._new: set[str] = set()

    def __contains__(self, tool_use_id: object) -> bool:
        return tool_use_id in self._new or tool_use_id in self._history

    def add(self, tool_use_id: str) -> None:
        self._new.add(tool_use_id)


class HistoryIds:
    """The tool_use ids of a conversation, kept up to date at the cost of the new messages only.

    Checking a new id against the whole history every turn would make each turn cost the
    conversation's length. Messages are counted once, when a later message exists (only the last
    can still be replaced); the last settled message is the anchor, and when the history was
    replaced behind our back (a reset, a resumed conversation, a compaction) the anchor no longer
    matches and the new history is counted from the start.
    """

    def __init__(self) -> None:
        self._counts: Counter[str] = Counter()
        self._settled = 0
        self._anchor: dict[str, Any] | None = None
        self._tail: set[str] = set()

    def __contains__(self, tool_use_id: object) -> bool:
        return tool_use_id in self._tail or self._counts[tool_use_id] > 0  # type: ignore[index]

    def sync(self, messages: list[dict[str, Any]]) -> HistoryIds:
        """Bring the index up to `messages`; returns itself, ready for `in`."""
        if self._settled and (len(messages) < self._settled or messages[self._settled - 1] is not self._anchor):
            self._counts.clear()
            self._settled, self._anchor = 0, None
        for i in range(self._settled, len(messages) - 1):
            self._counts.update(_message_ids(messages[i]))
            self._settled, self._anchor = i + 1, messages[i]
        self._tail = set(_message_ids(messages[-1])) if len(messages) > self._settled else set()
        return self


class ToolUseIds:
    """Fixes the ids of one assistant message, by position: the k-th tool_use block gets the
    same id whether it is seen streamed (`fix`) or in the final content (`fix_all`).
    `taken`: the ids already used (a `HistoryIds` synced to the history, or any collection)."""

    def __init__(self, taken: Container[str] = ()) -> None:
        self._taken = TakenIds(taken)
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
