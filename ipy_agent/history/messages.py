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

from typing import Any

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


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or [] if isinstance(b, dict)]


def history_problems(messages: list[dict[str, Any]]) -> list[str]:
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


def _use_problems(messages: list[dict[str, Any]], i: int) -> list[str]:
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


def _result_problems(messages: list[dict[str, Any]], i: int) -> list[str]:
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


def repair_history(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A valid copy: unanswered tool_uses get a synthetic error; same-role neighbours merge."""
    out: list[dict[str, Any]] = []
    for m in messages:
        blocks = _blocks(m)
        if not blocks or m.get("role") not in ("user", "assistant"):
            continue
        if out and out[-1]["role"] == m["role"]:
            out[-1] = {"role": m["role"], "content": [*_blocks(out[-1]), *blocks]}
        else:
            out.append({"role": m["role"], "content": blocks})
    while out and out[0]["role"] != "user":
        out.pop(0)
    fixed: list[dict[str, Any]] = []
    for i, m in enumerate(out):
        if m["role"] == "user":
            prev_uses = [b.get("id") for b in fixed[-1]["content"] if b.get("type") == "tool_use"] if fixed else []
            results = [b for b in m["content"] if b.get("type") == "tool_result" and b.get("tool_use_id") in prev_uses]
            seen: set[str] = set()
            kept = []
            for b in results:
                if b["tool_use_id"] not in seen:
                    seen.add(b["tool_use_id"])
                    kept.append(b)
            missing = [
                {"type": "tool_result", "tool_use_id": u, "content": MISSING_RESULT_TEXT, "is_error": True}
                for u in prev_uses
                if u not in seen
            ]
            others = [b for b in m["content"] if b.get("type") != "tool_result"]
            content = [*kept, *missing, *others]
            fixed.append({"role": "user", "content": content or [{"type": "text", "text": "(continue)"}]})
        else:
            fixed.append(m)
            uses = [b.get("id") for b in m["content"] if b.get("type") == "tool_use"]
            if uses and (i + 1 >= len(out) or out[i + 1]["role"] != "user"):
                fixed.append(
                    {
                        "role": "user",
                        "content": [
                            {"type": "tool_result", "tool_use_id": u, "content": MISSING_RESULT_TEXT, "is_error": True}
                            for u in uses
                        ],
                    }
                )
    return fixed


# --- growing the history -----------------------------------------------------------------------


def as_blocks(content: Any) -> list[dict[str, Any]]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])


def clean_content(content: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The API rejects empty text blocks; drop them (and our private `_` keys)."""
    out = []
    for b in content:
        if b.get("type") == "text" and not str(b.get("text", "")).strip():
            continue
        out.append({k: v for k, v in b.items() if not k.startswith("_")})
    return out


def append_user(messages: list[dict[str, Any]], blocks: list[dict[str, Any]]) -> None:
    if messages and messages[-1]["role"] == "user":
        # After an interrupt or an error the history can end with the person; merge.
        messages[-1] = {"role": "user", "content": [*as_blocks(messages[-1]["content"]), *blocks]}
    else:
        messages.append({"role": "user", "content": blocks})


def append_assistant(messages: list[dict[str, Any]], content: list[dict[str, Any]]) -> None:
    if not content:
        return
    # After pause_turn the API continues the same assistant message; so do we.
    if messages and messages[-1]["role"] == "assistant":
        messages[-1] = {"role": "assistant", "content": [*as_blocks(messages[-1]["content"]), *content]}
    else:
        messages.append({"role": "assistant", "content": content})


def close_turn(
    messages: list[dict[str, Any]],
    *,
    completed: list[dict[str, Any]],
    results: list[dict[str, Any]],
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
        content = clean_content([b for b in completed if b.get("type") != "tool_use" or b.get("id") in ids])
        if content:
            append_assistant(messages, content)
            appended = True
    if appended and results and not answered:
        append_user(messages, [*results, *([{"type": "text", "text": note}] if note else [])])
        answered = True
    return appended, answered


def last_text(messages: list[dict[str, Any]]) -> str:
    """The text of the last assistant message (what a run returns)."""
    for m in reversed(messages):
        if m["role"] == "assistant":
            return "".join(b.get("text", "") for b in as_blocks(m["content"]) if b.get("type") == "text")
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
        self._anchor: dict[str, Any] | None = None

    def sync(self, messages: list[dict[str, Any]]) -> bool:
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

    def replaced_settled(self, position: int, message: dict[str, Any]) -> None:
        """A settled message was swapped for a changed copy at `position` (the caller keeps its counts right)."""
        if position == self.settled - 1:
            self._anchor = message

    def settle(self, message: dict[str, Any], position: int) -> None:
        raise NotImplementedError
