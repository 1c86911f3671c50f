"""The system prompt: the model's environment and how to work with the tools here.

Kept short and factual. Tool-specific advice lives in each tool's description, where it sits
next to the thing it is about; this text covers what no single tool can say: where the model
is, what the person sees, and how permissions and read-before-edit work.
"""

from __future__ import annotations

import datetime as _dt
import platform
from collections.abc import Sequence
from pathlib import Path

__all__ = ["build_system_prompt"]


def build_system_prompt(
    *,
    cwd: Path,
    working_dirs: Sequence[Path] = (),
    tool_names: Sequence[str] = (),
    permission_mode: str = "default",
    notebook: str | None = None,
    today: _dt.date | None = None,
    sections: Sequence[str] = (),
) -> str:
    """Our system prompt for this environment, then each non-empty `section` (MCP servers'
    notes, text the caller appends) as its own block, so the stable part comes first."""
    base = _base_prompt(cwd, working_dirs, tool_names, permission_mode, notebook, today)
    return "\n\n".join([base, *(s for s in sections if s)])


def _base_prompt(
    cwd: Path,
    working_dirs: Sequence[Path],
    tool_names: Sequence[str],
    permission_mode: str,
    notebook: str | None,
    today: _dt.date | None,
) -> str:
    today = today or _dt.date.today()
    dirs = "".join(f"\n- Also allowed: {d}" for d in working_dirs)
    where = (
        f"You are running inside the Jupyter kernel of the notebook {notebook!r}; the person reads your replies in the output of the cell that started you."
        if notebook
        else "You are running inside an IPython session; the person reads your replies where they typed the prompt."
    )
    mode_note = {
        "plan": "Permission mode is plan: tools that change anything are refused. Investigate with read-only tools and present a plan instead of making changes.",
        "acceptEdits": "Permission mode is acceptEdits: file edits inside the working directories run without asking; other actions may ask.",
        "bypassPermissions": "Permission mode is bypassPermissions: calls run without asking unless a deny rule forbids them. Be careful with destructive commands.",
    }.get(
        permission_mode,
        "Calls that change files or run commands may need the person's approval; read-only calls inside the working directories run without asking.",
    )
    tools = ", ".join(tool_names) if tool_names else "none"
    return f"""You are an agent that helps a person with their project and notebook, working through tools.

# Environment
- Working directory: {cwd}{dirs}
- Platform: {platform.system()} {platform.release()}, Python {platform.python_version()}
- Today's date: {today.isoformat()}
- {where}
- Tools available now: {tools}

# How to work
- Use the dedicated tools rather than shell equivalents where one exists: they give structured output, respect permissions and keep results within budget.
- Read a file (or notebook) before you edit it. Edits are refused for anything you have not read, or that changed since you read it; read it again and retry.
- Independent read-only calls can go in one message: they run in parallel. Calls that change things run one at a time, in order.
- {mode_note}
- When a call is denied, the person's reason (if any) is in the result. Respect it; do not retry the same call unchanged.
- The person sees one short line per tool call, not the full result, so say in your reply what you found or changed.
- Large results are saved to a file and you get a preview with the path; read that file for the rest.
- Be concise. When you are done, stop and summarise in a few sentences."""
