"""Incremental accounting of the conversation: its size, its clearable results, what the model sees.

Checking the context window before every request must not cost a scan of the whole history:
a session of thousands of turns would pay for its length on every turn. The ledger therefore
"settles" each message once, when a later message exists (only the last message can still
grow, by a merge), and keeps running totals: the estimated tokens of the settled messages, a
queue of their tool results oldest first (what clearing takes from), and, per file, how many
places in the history still show its content (what keeps the read state honest). When the
history is replaced behind its back (a reset, a resumed conversation, a compaction) the anchor
check notices and it settles the new history from the start.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ipy_agent.history.blocks import ContentBlock, JsonObject, Message
from ipy_agent.history.messages import SettledPrefix

from .clearing import is_cleared
from .tokens import message_tokens

__all__ = ["Ledger", "ResultEntry", "ResultRule", "SourceRule"]

# (tool name, tool input) -> the read-state key whose content a call shows the model, or None.
SourceRule = Callable[[str, JsonObject], "str | None"]
# (tool name, tool input, tool_use id) -> the read-state keys a result shows the model (the file
# Read read; the cells NotebookRead showed).
ResultRule = Callable[[str, JsonObject, str], "tuple[str, ...]"]


@dataclass(kw_only=True)
class ResultEntry:
    position: int  # of the settled user message that holds the result, in the history
    index: int  # of the result in that message's content
    tool_use_id: str
    name: str
    input: JsonObject
    sources: tuple[str, ...]  # the read-state keys whose content this result shows


def _blocks(message: Message) -> list[ContentBlock]:
    content = message.get("content")
    return content if isinstance(content, list) else []


class Ledger(SettledPrefix):
    def __init__(self, result_source: ResultRule, use_source: SourceRule) -> None:
        super().__init__()
        self._result_source = result_source  # a result that shows a file (Read)
        self._use_source = use_source  # a call whose input shows a file (Write)
        self.reset()

    def reset(self) -> None:
        self.forget()
        self.rescans = 0

    def forget(self) -> None:
        super().forget()
        self.tokens = 0  # estimated tokens of messages[:settled]
        self.results: deque[ResultEntry] = deque()  # clearable results, oldest first
        self.sources: Counter[str] = Counter()  # visible places per read-state key
        self._uses: dict[str, tuple[str, JsonObject]] = {}

    def sync(self, messages: Sequence[Message]) -> bool:
        """Settle every message but the last. O(new messages), except after a replacement."""
        replaced = super().sync(messages)
        self.rescans += replaced
        return replaced

    def replace(self, messages: list[Message], position: int, message: Message) -> None:
        """Put a changed copy of a settled message in its place (messages are never edited in
        place: a request sent earlier keeps showing what it showed)."""
        messages[position] = message
        self.replaced_settled(position, message)

    def settle(self, message: Message, position: int) -> None:
        self.tokens += message_tokens(message)
        if message.get("role") == "assistant":
            self._uses = {}
            for b in _blocks(message):
                if isinstance(b, dict) and b["type"] == "tool_use":
                    name, inp = str(b.get("name", "")), b.get("input") or {}
                    self._uses[str(b.get("id"))] = (name, inp)
                    if (key := self._use_source(name, inp)) is not None:
                        self.sources[key] += 1
            return
        for i, b in enumerate(_blocks(message)):
            if not (isinstance(b, dict) and b["type"] == "tool_result") or is_cleared(b):
                continue
            tid = str(b.get("tool_use_id"))
            name, inp = self._uses.get(tid, ("a tool", {}))
            sources = () if b.get("is_error") else self._result_source(name, inp, tid)
            for key in sources:
                self.sources[key] += 1
            self.results.append(
                ResultEntry(position=position, index=i, tool_use_id=tid, name=name, input=inp, sources=sources)
            )

    def tail_sources(self, message: Message | None) -> set[str]:
        """Files shown by the last (unsettled) message: what clearing must not forget."""
        if message is None:
            return set()
        found: set[str] = set()
        for b in _blocks(message):
            if not isinstance(b, dict):
                continue
            if b["type"] == "tool_use" and (k := self._use_source(str(b.get("name", "")), b.get("input") or {})):
                found.add(k)
            elif b["type"] == "tool_result" and not b.get("is_error") and not is_cleared(b):
                tid = str(b.get("tool_use_id"))
                name, inp = self._uses.get(tid, ("", {}))
                found.update(self._result_source(name, inp, tid))
        return found

    def visible_sources(self, messages: Sequence[Message]) -> set[str]:
        self.sync(messages)
        return {k for k, n in self.sources.items() if n > 0} | self.tail_sources(messages[-1] if messages else None)
