"""Unified diffs and plain text as small, self-contained HTML for the notebook widgets.

The approval prompt and the expandable detail of a tool row both show diffs. Front ends differ
(JupyterLab, Notebook 7, VS Code; light and dark themes) and we ship no CSS of our own, so every
style is inline and the colours are translucent: they tint whatever background the theme has
instead of fighting it. Everything the tools produced is escaped; nothing here trusts its input.
"""

from __future__ import annotations

import html

__all__ = ["diff_counts", "diff_html", "looks_like_diff", "pre_html"]

# Long diffs are cut in the prompt: a person cannot review 5,000 lines in a cell output anyway,
# and every widget update sends the whole value over the comm.
MAX_LINES = 400

_PRE = (
    "margin:0;padding:4px 6px;font-family:var(--jp-code-font-family,monospace);"
    "font-size:var(--jp-code-font-size,12px);line-height:1.35;white-space:pre;overflow-x:auto;"
    "max-height:28em;overflow-y:auto;border:1px solid rgba(128,128,128,0.35);border-radius:3px"
)
_LINE_STYLES = {
    "+": "background:rgba(46,160,67,0.22)",
    "-": "background:rgba(248,81,73,0.22)",
    "@": "color:rgba(56,139,253,1);background:rgba(56,139,253,0.10)",
    "h": "font-weight:bold;opacity:0.8",
}


def looks_like_diff(text: str) -> bool:
    head = text.lstrip()[:400]
    return head.startswith(("--- ", "diff ", "@@ ")) or "\n@@ " in head


def diff_counts(diff: str) -> tuple[int, int]:
    """(added, removed) lines of a unified diff, not counting the ---/+++ headers."""
    added = removed = 0
    for line in diff.splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    return added, removed


def _line_kind(line: str) -> str:
    if line.startswith(("+++", "---", "diff ", "index ")):
        return "h"
    if line[:1] in ("+", "-"):
        return line[0]
    if line.startswith("@@"):
        return "@"
    return " "


def diff_html(diff: str, added: int | None = None, removed: int | None = None, *, max_lines: int = MAX_LINES) -> str:
    """A coloured unified diff with a "+N -M" header; counts are computed when not given."""
    if added is None or removed is None:
        added, removed = diff_counts(diff)
    lines = diff.splitlines()
    cut = len(lines) - max_lines if len(lines) > max_lines else 0
    body = []
    for line in lines[:max_lines] if cut else lines:
        style = _LINE_STYLES.get(_line_kind(line))
        text = html.escape(line) or "&nbsp;"
        body.append(f'<div style="{style}">{text}</div>' if style else f"<div>{text}</div>")
    if cut:
        body.append(f'<div style="opacity:0.7;font-style:italic">… {cut} more lines not shown</div>')
    counts = (
        f'<span style="color:rgb(46,160,67);font-weight:bold">+{added}</span> '
        f'<span style="color:rgb(248,81,73);font-weight:bold">-{removed}</span>'
    )
    if not lines:
        return f"<div>{counts} <i>(no changes)</i></div>"
    return f'<div style="margin:2px 0">{counts}</div><div style="{_PRE}">{"".join(body)}</div>'


def pre_html(text: str, *, max_lines: int = MAX_LINES) -> str:
    """Plain text in a scrollable monospace box (an output excerpt, a command)."""
    lines = text.splitlines()
    if len(lines) > max_lines:
        text = "\n".join(lines[:max_lines]) + f"\n… {len(lines) - max_lines} more lines not shown"
    return f'<div style="{_PRE}">{html.escape(text)}</div>'
