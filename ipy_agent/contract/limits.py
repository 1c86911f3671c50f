"""The size limits on what tools send the model, in one place.

A result over its tool's limit is spilled to a file and the model gets a preview (budget.py);
one message's results together have a limit too. The magics' options, the Agent's defaults,
the tool contract and the budget all read these names.
"""

from __future__ import annotations

__all__ = ["MESSAGE_RESULT_CHARS", "PREVIEW_CHARS", "SELF_LIMITING", "TOOL_RESULT_CHARS"]

# Characters of one tool result before it is spilled (a tool may set its own `max_result_chars`).
TOOL_RESULT_CHARS = 50_000
# Characters of all the tool results of one message before the largest are spilled.
MESSAGE_RESULT_CHARS = 200_000
# A tool whose limit is at least this bounds its own output (Read does, with offset/limit) and is
# never spilled, not even by the message budget: the model would only Read the spill file again.
SELF_LIMITING = 10**9
# Characters of a spilled result the model still sees.
PREVIEW_CHARS = 2_000
