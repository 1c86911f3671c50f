"""What fills the context window, as text: the view behind `%agent_context`.

A person deciding whether to compact (or wondering why the agent forgot something) needs to see
what the next request carries: the system prompt (and in it the standing instructions, AGENTS.md
and the like, shown apart), the tool definitions, the conversation's own
text and calls, the tool results still in full, and the notes of results already cleared,
against the window and the threshold at which clearing starts. One letter per share in a bar
makes the proportions visible at a glance; the table gives the numbers.
"""

from __future__ import annotations

import math

from ipy_agent.history.messages import as_blocks

from .clearing import is_cleared
from .manager import ContextManager
from .tokens import MESSAGE_OVERHEAD, block_tokens, text_tokens, tools_tokens

__all__ = ["BAR_WIDTH", "context_breakdown", "context_report"]

BAR_WIDTH = 60
_PARTS = (
    ("system", "s", "system prompt"),
    ("instructions", "i", "instructions"),
    ("tools", "t", "tool definitions"),
    ("messages", "m", "messages"),
    ("results", "r", "tool results"),
    ("cleared", "c", "cleared-result notes"),
)


def context_breakdown(manager: ContextManager) -> dict[str, int]:
    """Estimated tokens of the next request by part (a full scan: for display, not per turn)."""
    conversation = manager.conversation
    system, tools = conversation.request_parts()
    # The instructions are a slice of the system prompt: AGENTS.md and the like, apart from ours.
    standing = conversation.instruction_text()
    instructions = text_tokens(standing) if standing else 0
    parts = {
        "system": max(0, text_tokens(system) - instructions),
        "instructions": instructions,
        "tools": tools_tokens(tools),
        "messages": 0,
        "results": 0,
        "cleared": 0,
    }
    results = 0
    for m in conversation.messages:
        parts["messages"] += MESSAGE_OVERHEAD
        for b in as_blocks(m.get("content")):
            n = block_tokens(b)
            if isinstance(b, dict) and b["type"] == "tool_result":
                parts["cleared" if is_cleared(b) else "results"] += n
                results += 0 if is_cleared(b) else 1
            else:
                parts["messages"] += n
    factor = manager.factor
    out = {k: math.ceil(v * factor) for k, v in parts.items()}
    out["results_count"] = results
    return out


def context_report(cm: ContextManager) -> str:
    """The text of `%agent_context` for the conversation `cm` manages."""
    conversation = cm.conversation
    parts = context_breakdown(cm)
    window, trigger = cm.window, cm.trigger
    used = sum(parts[k] for k, _, _ in _PARTS)
    source = "set with context_window=" if cm.window_override is not None else f"model {conversation.model.name or '?'}"
    bar = []
    for key, letter, _ in _PARTS:
        bar.append(letter * round(BAR_WIDTH * parts[key] / window))
    picture = "".join(bar)[:BAR_WIDTH]
    picture += "·" * (BAR_WIDTH - len(picture))
    mark = min(BAR_WIDTH - 1, round(BAR_WIDTH * trigger / window))
    picture = picture[:mark] + "|" + picture[mark + 1 :]
    lines = [
        f"Context window: {window:,} tokens ({source}); the next request takes about {used:,} ({100 * used / window:.0f}%).",
        f"Old tool results are cleared above {trigger:,} tokens ({100 * cm.threshold:.0f}%, the | in the bar), "
        "then the conversation is compacted.",
        "",
        f"  [{picture}]",
        "",
    ]
    rows = [(letter, label, parts[key]) for key, letter, label in _PARTS]
    rows.append(("·", "free", max(0, window - used)))
    for letter, label, n in rows:
        extra = f"  ({parts['results_count']} in full)" if label == "tool results" else ""
        lines.append(f"  {letter}  {label:<22}{n:>10,}  {100 * n / window:5.1f}%{extra}")
    lines.append("")
    lines.append(
        f"{len(conversation.messages)} messages; {cm.cleared} tool results cleared and {cm.compactions} compaction"
        f"{'s' if cm.compactions != 1 else ''} so far. Estimates use about 4 characters per token"
        + (f", scaled by {cm.factor:.2f} from the API's counts." if cm.factor != 1.0 else ".")
    )
    lines.append("Compact now with %agent_compact [what the summary must keep].")
    return "\n".join(lines)
