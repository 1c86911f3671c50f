"""Compaction: older turns become one summary message, the recent turns stay as they were.

When clearing old tool results is not enough, the model itself summarises the older part of the
conversation. This module holds the pure parts: where to cut (the kept part starts at an
assistant message, so the summary is the user message before it and no tool_use or tool_result
loses its partner), the two forms of the summary request, the instructions for the summary, and
the message that replaces the older part.

The summary request takes one of two forms. When the conversation still fits the window, it is
the conversation's own request (the same system prompt, tools and messages) with the instructions
added at the end (`in_conversation`): its whole prefix is then read from the prompt cache that
the turn before it wrote, instead of being sent again at full price. When it does not fit (the
API refused it as too long), the older part goes as a bounded plain-text transcript under a
system prompt of its own (`render_transcript`, `compaction_prompt`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence

from ipy_agent.history.blocks import Message, ToolSpec, text_block
from ipy_agent.history.messages import as_blocks
from ipy_agent.models.base import ModelRequest

from .tokens import message_tokens

__all__ = [
    "COMPACTION_ASK",
    "COMPACTION_SYSTEM",
    "SUMMARY_HEADER",
    "choose_split",
    "compaction_prompt",
    "in_conversation",
    "render_transcript",
    "summary_message",
    "summary_requests",
]

COMPACTION_SYSTEM = (
    "You write the working memory of a coding agent that runs inside a Jupyter notebook. The "
    "conversation has grown too long for the model's context window, so its older part is replaced "
    "by your summary; the agent will continue from the summary and the most recent turns alone."
)

_INSTRUCTIONS = """Summarise the conversation in the transcript below so that the work can go on from your summary alone. Cover, in this order:

1. Requests: what the person asked for, in their own words where it matters, including changes of mind.
2. Work done: what the agent did and found, step by step but briefly.
3. Files: every file read, created or changed (full paths), and the state each was left in.
4. Decisions: choices made and why, errors met and how they were resolved.
5. Open: what is unfinished, what the person is waiting for, and the next step.

Be specific (paths, names, commands, numbers, error messages); leave out pleasantries and anything superseded. Write plain text with the five headings, at most about 800 words. Do not call tools."""

COMPACTION_ASK = "[Compaction]"  # how the in-conversation summary request's instructions begin

_IN_CONVERSATION = f"""{COMPACTION_ASK} The conversation above has grown too long for the context window. Its older part will be replaced by your summary, and the agent will go on from the summary and the most recent turns alone. This request is not a task: do not call tools, and do not continue the work.

""" + _INSTRUCTIONS.replace("in the transcript below", "above")

SUMMARY_HEADER = "[Conversation compacted]"

SUMMARY_INPUT = 0.5  # the transcript form takes at most this share of the window
SUMMARY_ROOM = 1_500  # tokens the in-conversation form adds: the instructions and the summary

_TEXT_CHARS = 4_000
_INPUT_CHARS = 600
_RESULT_CHARS = 1_500


def choose_split(messages: Sequence[Message], keep_tokens: float, scale: float = 1.0) -> int | None:
    """Index of the first kept message: an assistant message, as late as needed to keep at most
    `keep_tokens` (estimated, times `scale`) verbatim, and never the first message. At least
    the last assistant message is kept. None when there is nothing to summarise."""
    assistants = [i for i in range(1, len(messages)) if messages[i].get("role") == "assistant"]
    if not assistants:
        return None
    split = assistants[-1]
    kept = sum(message_tokens(m) for m in messages[split:]) * scale
    for i in reversed(assistants[:-1]):
        kept += sum(message_tokens(m) for m in messages[i:split]) * scale
        if kept > keep_tokens:
            break
        split = i
    if split == 1 and _is_summary(messages[0]):
        return None  # only an earlier summary before the cut: nothing new to summarise
    return split


def _is_summary(message: Message) -> bool:
    content = message.get("content")
    first = content[0] if isinstance(content, list) and content else None
    return isinstance(first, dict) and str(first.get("text", "")).startswith(SUMMARY_HEADER)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}… [{len(text) - limit:,} more characters]"


def _result_text(content: object) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for b in content if isinstance(content, list) else []:
        if isinstance(b, dict) and b.get("type") == "text":
            parts.append(str(b.get("text", "")))
        elif isinstance(b, dict):
            parts.append(f"[{b.get('type', 'block')}]")
    return "\n".join(parts)


def _entries(messages: Sequence[Message]) -> list[str]:
    names: dict[str, str] = {}
    out: list[str] = []
    for m in messages:
        role = "Person" if m.get("role") == "user" else "Agent"
        for b in as_blocks(m.get("content")):
            if not isinstance(b, dict):
                continue
            kind = b.get("type")
            if kind == "text" and str(b.get("text", "")).strip():
                out.append(f"{role}: {_cut(str(b.get('text')), _TEXT_CHARS)}")
            elif kind == "tool_use":
                names[str(b.get("id"))] = str(b.get("name"))
                raw = json.dumps(b.get("input", {}), ensure_ascii=False)
                out.append(f"Agent called {b.get('name')} {_cut(raw, _INPUT_CHARS)}")
            elif kind == "tool_result":
                name = names.get(str(b.get("tool_use_id")), "the tool")
                status = "error from" if b.get("is_error") else "result of"
                out.append(f"({status} {name}): {_cut(_result_text(b.get('content')), _RESULT_CHARS)}")
            elif kind in ("image", "document"):
                out.append(f"{role}: [{kind}]")
    return out


def render_transcript(messages: Sequence[Message], max_chars: int) -> str:
    """The older part as plain text, at most about `max_chars`: the start (often an earlier
    summary) and as much of the end as fits, with a note where the middle was left out."""
    entries = _entries(messages)
    total = sum(len(e) + 2 for e in entries)
    if total <= max_chars:
        return "\n\n".join(entries)
    head: list[str] = []
    used = 0
    for e in entries:
        if used + len(e) > max_chars // 3:
            break
        head.append(e)
        used += len(e) + 2
    if not head and entries:
        head, used = [_cut(entries[0], max_chars // 3)], max_chars // 3
    tail: list[str] = []
    for e in reversed(entries[len(head) :]):
        if used + len(e) > max_chars:
            break
        tail.append(e)
        used += len(e) + 2
    left_out = len(entries) - len(head) - len(tail)
    return "\n\n".join([*head, f"[… {left_out} entries left out to fit the summary request …]", *reversed(tail)])


def compaction_prompt(transcript: str, extra: list[str]) -> str:
    more = "".join(f"\n\nAlso: {e.strip()}" for e in extra if e and e.strip())
    return f"{_INSTRUCTIONS}{more}\n\n<transcript>\n{transcript}\n</transcript>"


def in_conversation(messages: Sequence[Message], extra: list[str]) -> list[Message]:
    """The conversation's own messages with the summary instructions at the end: added to its last
    user message (after any tool results) or as a new user message after an assistant's reply.
    The messages given are not changed."""
    more = "".join(f"\n\nAlso: {e.strip()}" for e in extra if e and e.strip())
    ask = text_block(f"{_IN_CONVERSATION}{more}")
    if messages and messages[-1].get("role") == "user":
        last = messages[-1]
        return [*messages[:-1], {**last, "content": [*as_blocks(last.get("content")), ask]}]
    return [*messages, {"role": "user", "content": [ask]}]


def summary_message(summary: str, summarised: int) -> Message:
    text = (
        f"{SUMMARY_HEADER} The earlier part of this conversation ({summarised} messages) was replaced by this "
        f"summary to free the context window. File contents shown earlier are no longer visible: Read a file "
        f"again before editing it.\n\n<summary>\n{summary.strip()}\n</summary>"
    )
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def summary_requests(
    messages: Sequence[Message],
    split: int,
    extra: list[str],
    system: str,
    tools: list[ToolSpec],
    tokens: int,
    window: int,
    too_long: bool,
) -> Iterator[ModelRequest]:
    """The summary requests to try in turn. While the conversation (`tokens` now) still fits the
    `window` with room for the summary, and the API did not refuse it as too long, first the
    conversation's own request with the instructions at the end; then, or when the model answered
    that one without text, the older part (`messages[:split]`) as a transcript under the
    compaction system prompt."""
    if not too_long and tokens + SUMMARY_ROOM <= window:
        yield ModelRequest(system=system, tools=tools, purpose="compaction", messages=in_conversation(messages, extra))
    ask = text_block(compaction_prompt(render_transcript(messages[:split], int(window * SUMMARY_INPUT) * 4), extra))
    yield ModelRequest(
        system=COMPACTION_SYSTEM, tools=[], purpose="compaction", messages=[{"role": "user", "content": [ask]}]
    )
