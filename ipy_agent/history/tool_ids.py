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
from collections.abc import Container, Sequence

from .blocks import ContentBlock, Message, ToolUseBlock
from .messages import SettledPrefix

__all__ = ["HistoryIds", "TakenIds", "ToolUseIds"]

_VALID = re.compile(r"^[A-Za-z0-9_-]{1,128}$")


def _message_ids(message: Message) -> list[str]:
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


class HistoryIds(SettledPrefix):
    """The tool_use ids of a conversation, kept up to date at the cost of the new messages only
    (checking a new id against the whole history every turn would make each turn cost the
    conversation's length). The last message, which may still be replaced, is read afresh."""

    def __init__(self) -> None:
        super().__init__()
        self._counts: Counter[str] = Counter()
        self._tail: set[str] = set()

    def __contains__(self, tool_use_id: object) -> bool:
        return tool_use_id in self._tail or self._counts[tool_use_id] > 0  # type: ignore[index]

    def sync(self, messages: Sequence[Message]) -> bool:
        replaced = super().sync(messages)
        self._tail = set(_message_ids(messages[-1])) if len(messages) > self.settled else set()
        return replaced

    def forget(self) -> None:
        super().forget()
        self._counts.clear()

    def settle(self, message: Message, position: int) -> None:
        self._counts.update(_message_ids(message))

    def synced(self, messages: Sequence[Message]) -> HistoryIds:
        """Brought up to `messages`, ready for `in`."""
        self.sync(messages)
        return self


class ToolUseIds:
    """Fixes the ids of one assistant message, by position: the k-th tool_use block gets the
    same id whether it is seen streamed (`fix`) or in the final content (`fix_all`).
    `taken`: the ids already used (a `HistoryIds` synced to the history, or any collection)."""

    def __init__(self, taken: Container[str] = ()) -> None:
        self._taken = TakenIds(taken)
        self._by_position: list[str] = []
        self._streamed = 0

    def _id_for(self, position: int, raw: object) -> str:
        if position < len(self._by_position):
            return self._by_position[position]
        good = isinstance(raw, str) and _VALID.match(raw) is not None and raw not in self._taken
        new = raw if isinstance(raw, str) and good else f"toolu_fixed_{uuid.uuid4().hex[:20]}"
        self._taken.add(new)
        self._by_position.append(new)
        return new

    def fix(self, block: ToolUseBlock) -> ToolUseBlock:
        """The next streamed tool_use block, with a usable id (a copy when it changed)."""
        new = self._id_for(self._streamed, block.get("id"))
        self._streamed += 1
        return block if block.get("id") == new else {**block, "id": new}

    def fix_all(self, content: Sequence[ContentBlock]) -> list[ContentBlock]:
        out: list[ContentBlock] = []
        position = 0
        for b in content:
            if b["type"] == "tool_use":
                new = self._id_for(position, b.get("id"))
                position += 1
                b = b if b.get("id") == new else {**b, "id": new}
            out.append(b)
        return out
