"""The static record of a finished run: what stays in the notebook file.

Widgets live in the kernel. A saved notebook reopened later (or read by nbviewer, GitHub,
`jupyter nbconvert`) has no kernel and no widget models: a widget output there shows "Error
displaying widget: model not found", and its text/plain is a widget repr. So when a run ends, the
cell's display is replaced (the same display_id) by this record: the assistant's text, one line
per call with its status and summary, the answer the person gave, the diffs of edits, notices,
how the run ended and its usage, as self-contained HTML with a plain-text fallback.

Everything is escaped: the model's text is rendered by markdown-it with raw HTML off
(`markdown_html`), tool output goes through `diff_html`/`pre_html`.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any, Literal

from .diff_html import diff_html, looks_like_diff, pre_html
from .status import status_look

__all__ = ["LIVE_TEXT", "Entry", "record_bundle", "row_result_text", "seen_lines"]

# text/plain of the live widget view: what a file saved mid-run (or a front end without widgets) shows.
LIVE_TEXT = "ipy_agent run in progress (the live view needs the kernel; the record replaces it when the run ends)"

EntryKind = Literal["text", "thinking", "row", "notice", "crash"]
_NOTICE_COLOURS = {"info": "inherit", "warning": "#d08700", "error": "#f85149"}
_DETAIL_LINES = 60  # of a diff or output in the text/plain record


@dataclass(kw_only=True)
class Entry:
    """One item of the run's body, in the order shown. `row` is a CallRow; `text` the words."""

    kind: EntryKind
    text: str = ""
    level: str = "info"
    row: Any = None


def record_bundle(entries: list[Entry], *, outcome: str, footer: str, markdown: Any) -> dict[str, str]:
    """{'text/html', 'text/plain'} for the finished run; `markdown(text)` renders safe HTML."""
    parts: list[str] = []
    lines: list[str] = []
    for e in entries:
        if e.kind == "text" and e.text.strip():
            parts.append(markdown(e.text))
            lines += [e.text.rstrip(), ""]
        elif e.kind == "thinking" and e.text.strip():
            parts.append(f'<details><summary style="opacity:0.7">Thinking</summary>{pre_html(e.text)}</details>')
        elif e.kind == "row" and e.row is not None:
            h, t = _row(e.row)
            parts.append(h)
            lines += t
        elif e.kind == "notice":
            colour = _NOTICE_COLOURS.get(e.level, "inherit")
            parts.append(f'<div style="color:{colour}">{html.escape(e.text)}</div>')
            lines.append(e.text)
        elif e.kind == "crash":
            parts.append(f'<div style="color:#f85149"><b>The agent crashed:</b></div>{pre_html(e.text)}')
            lines += ["The agent crashed:", e.text]
    parts.append(f"<div><i>{html.escape(outcome)}</i></div>")
    if footer:
        parts.append(f'<div style="opacity:0.7;font-size:90%">{html.escape(footer)}</div>')
    lines += [outcome] + ([footer] if footer else [])
    body = "".join(parts)
    return {"text/html": f'<div class="ipy-agent-record">{body}</div>', "text/plain": "\n".join(lines).strip() + "\n"}


def _row(row: Any) -> tuple[str, list[str]]:
    rec = row.record
    look = status_look(rec.status if rec is not None else row.status)
    icon, words, colour = look.icon, look.words, look.colour
    name = (rec.display_name or rec.tool_name) if rec is not None else row.name
    summary = rec.summary_use if rec is not None else ""
    result = row.result_text(rec) if rec is not None else ""
    duration = row.duration_text(rec) if rec is not None else ""
    answer = row.prompt.outcome_text if row.prompt is not None else ""
    h = (
        f'<div><span style="color:{colour}">{icon} {html.escape(words)}</span> <b>{html.escape(name)}</b> '
        f"{html.escape(summary)}"
        + (f' <span style="opacity:0.75">— {html.escape(result)}</span>' if result else "")
        + (f' <span style="opacity:0.7">({html.escape(duration)})</span>' if duration else "")
        + "</div>"
    )
    t = [
        f"{icon} {words}: {name} {summary}".rstrip()
        + (f" — {result}" if result else "")
        + (f" ({duration})" if duration else "")
    ]
    if answer:
        h += f'<div style="margin-left:1.5em;opacity:0.8"><i>{html.escape(answer)}</i></div>'
        t.append(f"    {answer}")
    detail = row.detail_text(rec) if rec is not None else ""
    if detail:
        shown = diff_html(detail) if looks_like_diff(detail) else pre_html(detail)
        # Edits keep their diff open in the record: it is what changed on disk.
        open_ = " open" if rec is not None and rec.status == "done" and looks_like_diff(detail) else ""
        h += (
            f'<details{open_} style="margin-left:1.5em"><summary style="opacity:0.7">Details</summary>{shown}</details>'
        )
        body = detail.rstrip("\n").splitlines()
        t += [f"    {ln}" for ln in body[:_DETAIL_LINES]]
        if len(body) > _DETAIL_LINES:
            t.append(f"    … {len(body) - _DETAIL_LINES} more lines")
    return h, t


def row_result_text(record: Any) -> str:
    """The words after a row's summary: how the call ended, as the person sees it."""
    if record.status == "denied":
        decision = record.decision
        source = getattr(decision, "source", "")
        if source == "person":
            # The answered prompt below says "Denied: <reason>"; summary_result is the text
            # written for the model ("The person declined this call…").
            return ""
        reason = str(getattr(decision, "reason", "") or "").strip()
        if source in ("rule", "mode", "hook", "tool", "default") and reason:
            line = reason.splitlines()[0]  # e.g. "denied by rule 'Bash(rm:*)' (settings)"
            return line if len(line) <= 120 else line[:119] + "…"
    return record.summary_result if record.summary_result not in ("", record.status, "done") else ""


def seen_lines(record: Any, mark: str) -> list[str]:
    """What the person saw for a call: its row and, when they answered a prompt, their answer."""
    name = record.display_name or record.tool_name
    result = row_result_text(record)
    lines = [f"{mark} {name} {record.summary_use}".rstrip() + (f" — {result}" if result else "")]
    decision = record.decision
    if getattr(decision, "source", "") == "person":
        reason = str(getattr(decision, "reason", "") or "").strip()
        if record.status == "denied":
            lines.append("Denied" + (f": {reason}" if reason else ""))
        elif getattr(decision, "rule", None):
            lines.append(f"Allowed; rule added: {decision.rule}")
        else:
            lines.append("Allowed once")
    return lines
