"""The person's line for one tool call, and the bounded blocks a run's lines are kept in.

A long run draws a thousand rows, so a row is as cheap as a widget can be: one `HTML` widget
whose value is the whole line (status, name, summary, result, duration) with the call's detail
in a native `<details>` below it. Each later change of the call re-sends that one value. Rows
share one layout and one style (each a widget of its own, one comm apiece, when not shared).
The few calls that ask the person become a box: the line, the approval prompt, and the detail
below the prompt, where it appears once the answer is in. A question that is no call's (a
project's MCP server asking to be trusted, a server's form) has a row of its own, titled with
what it asks; `settle` is where every question's row learns its answer: such a row shows how it
was answered, a call's row goes on following its call.

`Blocks` keeps the rows in boxes of at most `BLOCK_SIZE`, so appending a row re-sends one
block's children list, never the whole run's.
"""

from __future__ import annotations

import html

import ipywidgets as W
from ipywidgets.widgets.widget_string import HTMLStyle

from ipy_agent.runtime.trace import CallRecord

from .approval_widget import ApprovalPrompt
from .diff_html import diff_html, looks_like_diff, pre_html
from .record import row_result_text
from .status import call_time, status_look

__all__ = ["BLOCK_SIZE", "Blocks", "CallRow", "shared_html"]

# Rows per block of the body: appending re-sends one block's children, never the whole run's;
BLOCK_SIZE = 20  # appending re-sends up to this many ids; the outer box gets one per 20 rows
_LAYOUT = W.Layout()
_DETAIL_LAYOUT = W.Layout(margin="0 0 0 1.5em")
_STYLE: HTMLStyle | None = None  # made on first use: a widget needs a kernel's comm to be opened
_SUMMARY_STYLE = ' style="cursor:pointer;opacity:0.7;font-size:90%;width:fit-content"'


def shared_html(value: str = "", layout: W.Layout = _LAYOUT) -> W.HTML:
    """An HTML widget that shares its layout and style with every other one made here."""
    global _STYLE
    if _STYLE is None:
        _STYLE = HTMLStyle()
    return W.HTML(value, layout=layout, style=_STYLE)


class Blocks:
    """The run's body: items in order, kept in blocks of at most `size` so that appending an
    item sends a bounded children list; the outer box gets one new child per `size` items."""

    def __init__(self, size: int = BLOCK_SIZE) -> None:
        self.size = size
        self.widget = W.VBox(layout=_LAYOUT)
        self._items: list[W.Widget] = []

    @property
    def children(self) -> tuple[W.Widget, ...]:
        """Every item, in order, as the person sees them."""
        return tuple(self._items)

    def append(self, widget: W.Widget) -> None:
        blocks = self.widget.children
        if not blocks or len(blocks[-1].children) >= self.size:
            self.widget.children = (*blocks, W.VBox([widget], layout=_LAYOUT))
        else:
            blocks[-1].children = (*blocks[-1].children, widget)
        self._items.append(widget)

    def replace(self, old: W.Widget, new: W.Widget) -> None:
        """Put `new` where `old` is shown (one block's children list is re-sent)."""
        index = next(i for i, w in enumerate(self._items) if w is old)
        self._items[index] = new
        block = self.widget.children[index // self.size]
        block.children = tuple(new if w is old else w for w in block.children)


class CallRow:
    """One compact line per tool call (status, name, summary, duration) with its prompt and detail.

    `widget` is what the body shows: the line alone, or a box with the prompt once one opens
    (`show_prompt` returns it, for the body to swap in). `html` is all of the row's HTML.
    """

    def __init__(self, tool_use_id: str, name: str, record: CallRecord | None = None) -> None:
        self.tool_use_id = tool_use_id
        self.name = name
        self.status = "queued"
        self._title = _title_html(name, "")
        self._duration = ""
        self._detail = ""
        self.detail_html: W.HTML | None = None  # below the prompt, when there is one
        self.prompt: ApprovalPrompt | None = None
        self.record: CallRecord | None = None  # the latest, for the static record (ui/record.py)
        if record is not None:
            self._take(record)
        self.line = shared_html(self._render())
        self.widget: W.Widget = self.line

    @property
    def html(self) -> str:
        """Everything the person sees of this row, as HTML (the line, then the detail below a prompt)."""
        return str(self.line.value) + (str(self.detail_html.value) if self.detail_html is not None else "")

    def set_status(self, status: str) -> None:
        if status != self.status:
            self.status = status
            self._redraw()

    def show_prompt(self, prompt: ApprovalPrompt) -> W.Widget:
        """Open `prompt` under the line; returns the row's new widget, which the body must show."""
        self.prompt = prompt
        if self.record is None:  # no call behind the row: it says what the question asks
            self._title = _title_html(self.name, prompt.request.summary)
        self.detail_html = shared_html(layout=_DETAIL_LAYOUT)
        self.widget = W.VBox([self.line, prompt.widget, self.detail_html], layout=_LAYOUT)
        self._redraw()
        return self.widget

    def settle(self) -> None:
        """The row's question has its answer, or never will: a row no call stands behind shows
        how it was answered; a call's row follows its call (the answer lets it run or not), unless
        the question was cancelled, which ends the call too."""
        status = self.prompt.answered_status if self.prompt is not None else None
        if status is not None and (self.record is None or status == "cancelled"):
            self.set_status(status)

    def update(self, record: CallRecord) -> None:
        self._take(record)
        self._redraw()
        if record.status not in ("waiting", "queued") and self.prompt is not None and self.prompt.pending:
            self.prompt.cancel()

    # Plain texts of the row, for the static record.
    def result_text(self, record: CallRecord) -> str:
        return row_result_text(record)

    @staticmethod
    def duration_text(record: CallRecord) -> str:
        return call_time(record)

    @staticmethod
    def detail_text(record: CallRecord) -> str:
        preview = record.preview
        if record.detail:
            return record.detail
        if preview is not None and getattr(preview, "diff", None) and record.status != "denied":
            return str(preview.diff)
        if preview is not None and getattr(preview, "command", None):
            return f"$ {preview.command}"
        return ""

    # --- internals -------------------------------------------------------------------------
    def _take(self, record: CallRecord) -> None:
        self.record = record
        self.status = record.status
        self._title = _title_html(record.display_name or record.tool_name, record.summary_use, row_result_text(record))
        if duration := call_time(record):
            self._duration = duration
        detail = _detail_html(record)
        # While the prompt is open it shows the same diff or command; Details would repeat it.
        if detail and record.status != "waiting":
            self._detail = f"<details><summary{_SUMMARY_STYLE}>Details</summary>{detail}</details>"

    def _redraw(self) -> None:
        # Assigning an unchanged value sends nothing (traitlets compares), so an opened
        # disclosure stays open until the row really changes.
        self.line.value = self._render()
        if self.detail_html is not None:
            self.detail_html.value = self._detail

    def _render(self) -> str:
        look = status_look(self.status)
        duration = f'<span style="opacity:0.7;white-space:nowrap">{self._duration}</span>' if self._duration else ""
        line = (
            f'<div class="ipy-agent-row" style="display:flex;gap:0.5em;align-items:baseline">'
            f'<span style="min-width:9.5em;color:{look.colour}">{look.icon} {html.escape(look.words)}</span>'
            f'<span style="flex:1 1 auto">{self._title}</span>{duration}</div>'
        )
        if self._detail and self.detail_html is None:
            line += f'<div style="margin-left:1.5em">{self._detail}</div>'
        return line


def _title_html(name: str, summary: str, result: str = "") -> str:
    text = f"<b>{html.escape(name)}</b> {html.escape(summary)}"
    if result:
        text += f' <span style="opacity:0.75">— {html.escape(result)}</span>'
    return text


def _detail_html(record: CallRecord) -> str:
    text = record.detail
    preview = record.preview
    if not text and preview is not None and preview.diff:
        return diff_html(preview.diff, preview.added, preview.removed)
    if not text and preview is not None and getattr(preview, "command", None):
        # A denied or cancelled command never ran, so it has no detail of its own; the
        # answered prompt shrinks to one line, and this keeps the command within reach.
        return pre_html(f"$ {preview.command}")
    if not text:
        return ""
    return diff_html(text) if looks_like_diff(text) else pre_html(text)
