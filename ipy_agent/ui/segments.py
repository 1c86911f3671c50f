"""Streamed assistant text and thinking, as the notebook widgets show them.

The model's text arrives in small deltas; a `Segment` collects one run of it (text between two
tool rows, or a thinking block) and re-renders its widget at most every FLUSH_INTERVAL (the
caller decides when). Markdown is rendered here in the kernel, with raw HTML off, because the
model's text can carry what it read.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as W

from .citations import cite_cells
from .diff_html import pre_html
from .record import Entry

__all__ = ["Segment", "markdown_html"]

_MD: Any = None


def markdown_html(text: str) -> str:
    """The assistant's Markdown as HTML, rendered here with raw HTML switched off.

    The model's text can carry what it read (a file, a tool's output, a web page): sent as
    `text/markdown` into an Output widget, JupyterLab renders it as trusted HTML and runs any
    `<img onerror=...>` in the notebook's origin, which could drive the kernel past every
    approval. markdown-it escapes raw HTML and refuses `javascript:` links. A `[cell N]` becomes
    a link the JupyterLab extension scrolls to cell N with (citations.py).
    """
    global _MD
    if _MD is None:
        from markdown_it import MarkdownIt

        _MD = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table").enable("strikethrough")
        _MD.use(cite_cells)
    return f'<div class="ipy-agent-text">{_MD.render(text)}</div>'


class Segment:
    """A run of streamed assistant text (Markdown) or thinking (a collapsed box)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.text = ""
        self.entry = Entry(kind="text" if kind == "text" else "thinking")
        self.shown = ""
        if kind == "text":
            self.html = W.HTML()
            self.widget: W.Widget = self.html
        else:
            self.html = W.HTML()
            self.widget = W.Accordion(children=[self.html], titles=("Thinking",), selected_index=None)

    def flush(self) -> None:
        if self.text == self.shown:
            return
        self.shown = self.text
        if self.kind == "text":
            self.html.value = markdown_html(self.text)
        else:
            self.html.value = pre_html(self.text)
