"""The static record of a finished run: what stays in the notebook file.

Widgets live in the kernel. A saved notebook reopened later (or read by nbviewer, GitHub,
`jupyter nbconvert`) has no kernel and no widget models: a widget output there shows "Error
displaying widget: model not found", and its text/plain is a widget repr. So when a run ends, the
cell's display is replaced (the same display_id) by this record: the assistant's text, one line
per call with its status and summary, the answer the person gave, the diffs of edits, notices,
how the run ended and its usage, as self-contained HTML with a plain-text fallback.

Below the calls, "Notebook changes" lists each NotebookEdit of the run with its outcome, the
cell as the person names it (`replace cell 4 · x = 41 in a.ipynb`, the row's summary) and the
reason given: `review_of` reads it from the call's permission decision (an outcome the decision
carries, such as "stale", wins; else accepted / rejected / refused by a rule or the tool / not
answered / failed). A rewind is its own entry (`%agent_rewind` keeps its report in its cell),
and the next prompt's record starts with a notice of it (loop/rewind.py).

Everything is escaped: the model's text is rendered by markdown-it with raw HTML off
(`markdown_html`), tool output goes through `diff_html`/`pre_html`.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any, Literal

from .diff_html import diff_html, looks_like_diff, pre_html
from .prompt_words import approval_words, review_words
from .status import status_look

__all__ = [
    "LIVE_TEXT",
    "REVIEWED_TOOLS",
    "Entry",
    "Reviewed",
    "clip_words",
    "record_bundle",
    "review_of",
    "row_result_text",
    "seen_lines",
]

# text/plain of the live widget view: what a file saved mid-run (or a front end without widgets) shows.
LIVE_TEXT = "ipy_agent run in progress (the live view needs the kernel; the record replaces it when the run ends)"

EntryKind = Literal["text", "thinking", "row", "notice", "crash"]
_NOTICE_COLOURS = {"info": "inherit", "warning": "#d08700", "error": "#f85149"}
_DETAIL_LINES = 60  # of a diff or output in the text/plain record
REVIEWED_TOOLS = frozenset({"NotebookEdit"})  # the changes the record lists with their outcome
_REVIEW_LOOKS = {"accepted": ("✓", "#2e7d32"), "stale": ("⟳", "#d08700")}


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
    reviewed = [r for e in entries if e.kind == "row" and (r := review_of(getattr(e.row, "record", None)))]
    if reviewed:
        h, t = _reviewed(reviewed)
        parts.append(h)
        lines += t
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
    summary = rec.summary_use if rec is not None else (row.prompt.request.summary if row.prompt is not None else "")
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


@dataclass(frozen=True, kw_only=True)
class Reviewed:
    """A change of the run as the record lists it: its outcome, what it was, and why."""

    outcome: str  # "accepted", "rejected", "stale", "refused", "not answered", "failed", "allowed by ..."
    what: str  # the call's summary: the cell as the person names it
    reason: str = ""


def review_of(record: Any) -> Reviewed | None:
    """The outcome of a reviewed change (a NotebookEdit) from its permission decision; None for
    other calls and for calls that never reached a decision (their input was refused)."""
    if record is None or record.tool_name not in REVIEWED_TOOLS or record.decision is None:
        return None
    decision = record.decision
    staged = getattr(getattr(record.preview, "review", None), "outcome", None)  # reviewed in the cell
    if staged is not None:
        where = {"cell": " in the cell", "prompt": " in the prompt", "all": " (all)"}.get(staged.where, "")
        words = f"{staged.outcome}{where if staged.outcome in ('accepted', 'rejected') else ''}"
        return Reviewed(outcome=words, what=record.summary_use, reason=staged.reason)
    source = str(getattr(decision, "source", ""))
    reason = str(getattr(decision, "reason", "") or "").strip()
    carried = str(getattr(decision, "outcome", "") or "")  # e.g. "stale": the person typed in the cell
    if carried:
        return Reviewed(outcome=carried, what=record.summary_use, reason=reason)
    if record.status == "cancelled":
        return Reviewed(outcome="not answered", what=record.summary_use)
    if getattr(decision, "behavior", "") == "deny":
        if source == "person":
            return Reviewed(outcome="rejected", what=record.summary_use, reason=_persons_reason(reason))
        return Reviewed(outcome="refused", what=record.summary_use, reason=reason.splitlines()[0] if reason else "")
    if record.status == "error":
        return Reviewed(outcome="failed", what=record.summary_use, reason=row_result_text(record))
    if source == "person":
        return Reviewed(outcome="accepted", what=record.summary_use)
    return Reviewed(outcome=f"allowed by {source or 'the settings'}", what=record.summary_use, reason=reason)


def _persons_reason(reason: str) -> str:
    """What the person typed when they said no; the runtime's wording for a bare "no" is no reason."""
    return "" if not reason or reason.lower().startswith(("the person declined", "denied")) else reason


def _reviewed(items: list[Reviewed]) -> tuple[str, list[str]]:
    rows: list[str] = []
    lines = ["Notebook changes:"]
    for r in items:
        icon, colour = _REVIEW_LOOKS.get(r.outcome.split()[0], ("✗", "#f85149"))
        why = f": {r.reason}" if r.reason else ""
        rows.append(
            f'<li><span style="color:{colour}">{icon} {html.escape(r.outcome)}</span> '
            f"{html.escape(r.what)}"
            + (f' <span style="opacity:0.8">— {html.escape(r.reason)}</span>' if why else "")
            + "</li>"
        )
        lines.append(f"  {icon} {r.outcome}: {r.what}" + (f" — {r.reason}" if why else ""))
    h = (
        '<div class="ipy-agent-reviewed" style="margin-top:0.3em"><b>Notebook changes</b>'
        f'<ul style="margin:2px 0">{"".join(rows)}</ul></div>'
    )
    return h, lines


ROW_REASON_CHARS = 240  # a refusal's reason on a row: two lines of a wide cell at most


def clip_words(text: str, limit: int = ROW_REASON_CHARS) -> str:
    """`text`, or as many of its sentences as fit in `limit`, or else its words with "…".

    A cut in mid-word ("the person set this, often bec…") reads as a fault; the sentences
    that fit say what the person needs (why the call was refused), the rest is for the model."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    end = head.rfind(". ")
    if end >= limit // 3:
        return head[: end + 1]
    end = head.rfind("; ")
    if end >= limit // 3:
        return head[:end] + " …"
    space = head.rstrip().rfind(" ")
    return (head[:space] if space > 0 else head[: limit - 1]).rstrip(" ,;:—-") + " …"


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
            return clip_words(reason.splitlines()[0])  # e.g. "denied by rule 'Bash(rm:*)' (settings)"
    return record.summary_result if record.summary_result not in ("", record.status, "done") else ""


def seen_lines(record: Any, mark: str) -> list[str]:
    """What the person saw for a call: its row and, when they answered a prompt, their answer."""
    name = record.display_name or record.tool_name
    result = row_result_text(record)
    lines = [f"{mark} {name} {record.summary_use}".rstrip() + (f" — {result}" if result else "")]
    decision = record.decision
    if getattr(decision, "source", "") == "person":
        reason = str(getattr(decision, "reason", "") or "").strip()
        rule = getattr(decision, "rule", None)
        # In the prompt's own words: Accepted / Rejected for a cell edit under review.
        reviewed = getattr(getattr(record, "preview", None), "review", None) is not None
        words = (review_words if reviewed else approval_words)(str(rule or ""))
        if record.status == "denied":
            lines.append(words.denied + (f": {reason}" if reason else ""))
        elif rule:
            lines.append(words.always_allowed)
        else:
            lines.append(words.allowed)
    return lines
