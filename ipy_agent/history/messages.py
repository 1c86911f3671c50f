"""The history invariant, checked and repaired.

After any run, whatever failed, the conversation must be one the Messages API accepts: it starts
with the person, roles alternate, and every tool_use is answered exactly once by a tool_result
in the very next message. A broken history is what makes peers' agents fail with "tool_use ids
were found without tool_result blocks" after an interrupt; we check it in tests and repair
loaded conversations.

The agent changes its history only through `append_user`, `append_assistant` and
`close_turn` here. They never edit a message in place: a merge replaces the last message with
a new one. So a list copy of the history is a faithful snapshot of it (what a model request
carries and what ScriptedModel keeps), and no turn needs a deep copy of the conversation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .blocks import ContentBlock, Message, Role, ToolResultBlock, is_content_block, text_block, tool_result

__all__ = [
    "MISSING_RESULT_TEXT",
    "SettledPrefix",
    "append_assistant",
    "append_user",
    "as_blocks",
    "clean_content",
    "close_turn",
    "history_problems",
    "last_text",
    "repair_history",
]

MISSING_RESULT_TEXT = (
    "No result was recorded for this tool call (the run was interrupted or failed); assume it did not complete."
)

# The checker and the repair read histories from outside too (a saved file, one a person
# assigned): any mapping, read with `.get`; what the repair returns is a typed history.


def _role(message: Mapping[str, object]) -> Role | None:
    role = message.get("role")
    return "user" if role == "user" else "assistant" if role == "assistant" else None


def _blocks(message: Mapping[str, object]) -> list[Mapping[str, object]]:
    content = message.get("content")
    if isinstance(content, str):
        return [text_block(content)]
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def history_problems(messages: Sequence[Mapping[str, object]]) -> list[str]:
    """Every way `messages` breaks the invariant; an empty list means it is valid."""
    problems: list[str] = []
    if messages and messages[0].get("role") != "user":
        problems.append("the conversation must start with a user message")
    for i, m in enumerate(messages):
        role = m.get("role")
        if role not in ("user", "assistant"):
            problems.append(f"message {i} has role {role!r}")
        if i and role == messages[i - 1].get("role"):
            problems.append(f"messages {i - 1} and {i} are both {role!r}")
        if not _blocks(m):
            problems.append(f"message {i} is empty")
        if role == "assistant":
            problems += _use_problems(messages, i)
        elif role == "user":
            problems += _result_problems(messages, i)
    return problems


def _use_problems(messages: Sequence[Mapping[str, object]], i: int) -> list[str]:
    """Message i (the model's): each tool_use id once, each answered once in the next message."""
    uses = [b.get("id") for b in _blocks(messages[i]) if b.get("type") == "tool_use"]
    problems = [f"message {i} repeats a tool_use id"] if len(set(uses)) != len(uses) else []
    if not uses:
        return problems
    if i + 1 >= len(messages):
        return [*problems, f"message {i} has tool_use blocks and no next message to answer them"]
    answers = [b.get("tool_use_id") for b in _blocks(messages[i + 1]) if b.get("type") == "tool_result"]
    for u in uses:
        if (n := answers.count(u)) != 1:
            problems.append(f"tool_use {u!r} in message {i} is answered {n} times in the next message")
    return problems


def _result_problems(messages: Sequence[Mapping[str, object]], i: int) -> list[str]:
    """Message i (the person's): each tool_result answers a tool_use just before, and comes first."""
    blocks = _blocks(messages[i])
    results = [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"]
    prev_uses = {b.get("id") for b in _blocks(messages[i - 1]) if b.get("type") == "tool_use"} if i else set()
    problems = [
        f"tool_result {r!r} in message {i} answers no tool_use of the previous message"
        for r in results
        if r not in prev_uses
    ]
    kinds = [b.get("type") for b in blocks]
    if results and kinds[: len(results)] != ["tool_result"] * len(results):
        problems.append(f"message {i}: tool_result blocks must come before other content")
    return problems


def _use_ids(blocks: Sequence[ContentBlock]) -> list[str]:
    return [b["id"] for b in blocks if b["type"] == "tool_use"]


def repair_history(messages: Sequence[Mapping[str, object]]) -> list[Message]:
    """A valid copy: unanswered tool_uses get a synthetic error; same-role neighbours merge."""
    merged: list[tuple[Role, list[ContentBlock]]] = []
    for m in messages:
        blocks = [b for b in _blocks(m) if is_content_block(b)]
        role = _role(m)
        if not blocks or role is None:
            continue
        if merged and merged[-1][0] == role:
            merged[-1] = (role, [*merged[-1][1], *blocks])
        else:
            merged.append((role, blocks))
    while merged and merged[0][0] != "user":
        merged.pop(0)
    fixed: list[Message] = []
    for i, (role, blocks) in enumerate(merged):
        if role == "user":
            prev_uses = _use_ids(merged[i - 1][1]) if i else []
            seen: set[str] = set()
            kept: list[ToolResultBlock] = []
            for b in blocks:
                if b["type"] == "tool_result" and b["tool_use_id"] in prev_uses and b["tool_use_id"] not in seen:
                    seen.add(b["tool_use_id"])
                    kept.append(b)
            missing = [tool_result(u, MISSING_RESULT_TEXT, is_error=True) for u in prev_uses if u not in seen]
            others = [b for b in blocks if b["type"] != "tool_result"]
            content: list[ContentBlock] = [*kept, *missing, *others]
            fixed.append({"role": "user", "content": content or [text_block("(continue)")]})
        else:
            fixed.append({"role": "assistant", "content": blocks})
            uses = _use_ids(blocks)
            if uses and (i + 1 >= len(merged) or merged[i + 1][0] != "user"):
                fixed.append(
                    {"role": "user", "content": [tool_result(u, MISSING_RESULT_TEXT, is_error=True) for u in uses]}
                )
    return fixed


# --- growing the history -----------------------------------------------------------------------


def as_blocks(content: str | Sequence[ContentBlock] | None) -> list[ContentBlock]:
    return [text_block(content)] if isinstance(content, str) else list(content or [])


def clean_content(content: Sequence[ContentBlock]) -> list[ContentBlock]:
    """The API rejects empty text blocks; drop them (and our private `_` keys)."""
    out: list[ContentBlock] = []
    for b in content:
        if b.get("type") == "text" and not str(b.get("text", "")).strip():
            continue
        public = {k: v for k, v in b.items() if not k.startswith("_")}
        out.append(public if is_content_block(public) else b)
    return out


def append_user(messages: list[Message], blocks: Sequence[ContentBlock]) -> None:
    if messages and messages[-1]["role"] == "user":
        # After an interrupt or an error the history can end with the person; merge.
        messages[-1] = {"role": "user", "content": [*as_blocks(messages[-1]["content"]), *blocks]}
    else:
        messages.append({"role": "user", "content": list(blocks)})


def append_assistant(messages: list[Message], content: Sequence[ContentBlock]) -> None:
    if not content:
        return
    # After pause_turn the API continues the same assistant message; so do we.
    if messages and messages[-1]["role"] == "assistant":
        messages[-1] = {"role": "assistant", "content": [*as_blocks(messages[-1]["content"]), *content]}
    else:
        messages.append({"role": "assistant", "content": list(content)})


def close_turn(
    messages: list[Message],
    *,
    completed: Sequence[ContentBlock],
    results: Sequence[ToolResultBlock],
    appended: bool,
    answered: bool,
    note: str | None,
) -> tuple[bool, bool]:
    """End a turn early (interrupt, model failure, internal error) with every tool_use answered once.

    `completed`: the blocks that were whole when the turn ended; `results`: a result for each
    tool_use that was handed to the executor; `appended`/`answered`: whether the assistant
    message and its results are in the history already. Returns them as they are now."""
    if not appended:
        # Only blocks that are whole go in; a tool_use with no result would break the history.
        ids = {r["tool_use_id"] for r in results}
        content = clean_content([b for b in completed if b["type"] != "tool_use" or b["id"] in ids])
        if content:
            append_assistant(messages, content)
            appended = True
    if appended and results and not answered:
        append_user(messages, [*results, *([text_block(note)] if note else [])])
        answered = True
    return appended, answered


def last_text(messages: Sequence[Message]) -> str:
    """The text of the last assistant message (what a run returns)."""
    for m in reversed(messages):
        if m["role"] == "assistant":
            return "".join(b.get("text", "") for b in as_blocks(m["content"]) if b["type"] == "text")
    return ""


class SettledPrefix:
    """Facts about a conversation kept at the cost of its new messages only.

    Whatever must be known about the whole history on every turn (its size, its ids, its
    clearable results) is counted once per message: a message is "settled" when a later one
    exists (only the last can still be replaced, by a merge). The last settled message is the
    anchor; when the history was replaced behind our back (a reset, a resumed conversation, a
    compaction), the anchor no longer stands where it stood, and the new history is counted
    from the start. Subclasses say what to forget and what to count.
    """

    def __init__(self) -> None:
        self.settled = 0
        self._anchor: Message | None = None

    def sync(self, messages: Sequence[Message]) -> bool:
        """Settle every message but the last; True when the history had been replaced."""
        replaced = bool(self.settled) and (
            len(messages) < self.settled or messages[self.settled - 1] is not self._anchor
        )
        if replaced:
            self.forget()
        for i in range(self.settled, len(messages) - 1):
            self.settle(messages[i], i)
            self.settled, self._anchor = i + 1, messages[i]
        return replaced

    def forget(self) -> None:
        """Drop everything counted; the next `sync` counts from the first message."""
        self.settled, self._anchor = 0, None

    def replaced_settled(self, position: int, message: Message) -> None:
        """A settled message was swapped for a changed copy at `position` (the caller keeps its counts right)."""
        if position == self.settled - 1:
            self._anchor = message

    def settle(self, message: Message, position: int) -> None:
        raise NotImplementedError
