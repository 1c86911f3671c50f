"""Notebook cells as the model reads them: id, type, source and outputs, never raw JSON.

A notebook's JSON is mostly noise to a model (metadata, base64, ANSI escapes, source split into
lists of lines), and one chatty cell can flood the context. So each cell becomes a short tagged
text with its id (what NotebookEdit and the live-notebook tools address), its source, and its
outputs: stream text, the `text/plain` of results and displays, an error's name, value and the
end of its traceback without colour codes, and images as image blocks. Each cell's text outputs
share one budget; past it the middle is cut with a marker that says how much is missing.

This module knows nothing about files: Read passes a notebook it loaded from disk, and the
live-notebook bridge passes the cells the front end sent, as plain dicts or nbformat nodes.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ipy_agent.base.images import base64_len, image_dimensions, image_problem, sniff_image
from ipy_agent.history.blocks import ResultPart

__all__ = ["RenderedCells", "render_cells", "render_notebook", "strip_ansi"]

OUTPUT_BUDGET_CHARS = 10_000
MAX_IMAGES = 20
# Several 5 MB images would push one request past the API's total size limit.
MAX_IMAGE_BASE64_TOTAL = 12 * 1024 * 1024
TRACEBACK_LINES = 30

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")
_IMAGE_MIMES = ("image/png", "image/jpeg", "image/gif", "image/webp")


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


@dataclass(frozen=True, kw_only=True)
class RenderedCells:
    blocks: list[ResultPart]  # text and image blocks, adjacent text merged
    cell_count: int  # cells rendered
    image_count: int
    text_chars: int

    @property
    def text(self) -> str:
        return "".join(b["text"] for b in self.blocks if b["type"] == "text")


def render_notebook(
    nb: Mapping[str, Any], *, offset: int = 0, limit: int | None = None, output_budget: int = OUTPUT_BUDGET_CHARS
) -> RenderedCells:
    """Render cells `offset` (0-based) to `offset + limit` of an nbformat v4 notebook."""
    cells = list(nb.get("cells", []))
    stop = len(cells) if limit is None else offset + limit
    meta = nb.get("metadata") or {}
    language = (meta.get("language_info") or {}).get("name") or (meta.get("kernelspec") or {}).get("language")
    return render_cells(cells[offset:stop], first_index=offset, language=language, output_budget=output_budget)


def render_cells(
    cells: Iterable[Mapping[str, Any]],
    *,
    first_index: int = 0,
    language: str | None = None,
    output_budget: int = OUTPUT_BUDGET_CHARS,
) -> RenderedCells:
    """Render cells; `first_index` is the index of the first one, for cells without an id."""
    out = _Blocks()
    count = 0
    for index, cell in enumerate(cells, start=first_index):
        count += 1
        _render_cell(out, cell, index, language, output_budget)
    return RenderedCells(blocks=out.blocks, cell_count=count, image_count=out.images, text_chars=out.text_chars)


class _Blocks:
    """Accumulates content blocks, merging adjacent text and enforcing the image limits.

    Adjacent text is joined once, when a block ends: adding each piece to the growing string
    would copy it again every time (a notebook with 50 MB of outputs took 18 s to render)."""

    def __init__(self) -> None:
        self._blocks: list[ResultPart] = []
        self._pending: list[str] = []  # text since the last image
        self.images = 0
        self.image_chars = 0
        self.text_chars = 0

    @property
    def blocks(self) -> list[ResultPart]:
        self._end_text()
        return self._blocks

    def _end_text(self) -> None:
        if self._pending:
            self._blocks.append({"type": "text", "text": "".join(self._pending)})
            self._pending = []

    def text(self, text: str) -> None:
        if not text:
            return
        self.text_chars += len(text)
        self._pending.append(text)

    def image(self, mime: str, data_b64: str) -> None:
        data_b64 = "".join(data_b64.split())
        try:
            raw = base64.b64decode(data_b64, validate=True)
        except (binascii.Error, ValueError):
            self.text(f"[{mime} output with invalid base64 data, not shown]\n")
            return
        actual = sniff_image(raw[:16]) or mime
        problem = image_problem(len(raw), image_dimensions(raw, actual))
        if problem is None and self.images >= MAX_IMAGES:
            problem = f"this read already holds {MAX_IMAGES} images"
        if problem is None and self.image_chars + base64_len(len(raw)) > MAX_IMAGE_BASE64_TOTAL:
            problem = "the images before it already fill this read's image budget"
        if problem is not None:
            self.text(f"[{actual} output not shown: {problem}]\n")
            return
        self.images += 1
        self.image_chars += len(data_b64)
        self._end_text()
        self._blocks.append({"type": "image", "source": {"type": "base64", "media_type": actual, "data": data_b64}})


def _join(value: Any) -> str:
    # On disk, nbformat stores multi-line strings as lists of lines.
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, Sequence):
        return "".join(str(v) for v in value)
    return str(value)


def _render_cell(out: _Blocks, cell: Mapping[str, Any], index: int, language: str | None, budget: int) -> None:
    cell_id = cell.get("id") or f"cell-{index}"
    cell_type = cell.get("cell_type", "code")
    attrs = f'id="{cell_id}" index="{index}" type="{cell_type}"'
    if cell_type == "code":
        if language and language != "python":
            attrs += f' language="{language}"'
        if cell.get("execution_count") is not None:
            attrs += f' execution_count="{cell["execution_count"]}"'
    source = _join(cell.get("source"))
    out.text(f"<cell {attrs}>\n" + (_ensure_newline(source) if source else ""))
    outputs = cell.get("outputs") or []
    if cell_type == "code" and outputs:
        out.text("<outputs>\n")
        _render_outputs(out, outputs, budget)
        out.text("</outputs>\n")
    out.text("</cell>\n")


def _render_outputs(out: _Blocks, outputs: Sequence[Mapping[str, Any]], budget: int) -> None:
    texts = [_output_text(o) for o in outputs]
    shares = _fair_shares([len(t) for t in texts], budget)
    for text, share, output in zip(texts, shares, outputs):
        if text:
            out.text(_ensure_newline(_middle_cut(text, share)))
        data = output.get("data") or {}
        for mime in _IMAGE_MIMES:
            if mime in data:
                out.image(mime, _join(data[mime]))
                break


def _fair_shares(lengths: list[int], budget: int) -> list[int]:
    """Split the budget so short outputs (an error, a result) stay whole and long ones share the rest.

    A proportional split would let one flood of log lines shrink the error after it to nothing.
    """
    shares = [0] * len(lengths)
    remaining = budget
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    for k, i in enumerate(order):
        shares[i] = min(lengths[i], remaining // (len(order) - k))
        remaining -= shares[i]
    return shares


def _output_text(output: Mapping[str, Any]) -> str:
    kind = output.get("output_type")
    if kind == "stream":
        text = strip_ansi(_join(output.get("text")))
        return f"[stderr]\n{text}" if output.get("name") == "stderr" and text else text
    if kind == "error":
        return _error_text(output)
    if kind in ("execute_result", "display_data"):
        data = output.get("data") or {}
        if "text/plain" in data:
            text = strip_ansi(_join(data["text/plain"]))
            count = output.get("execution_count")
            return f"Out[{count}]: {text}" if kind == "execute_result" and count is not None else text
        others = [m for m in data if m not in _IMAGE_MIMES]
        if others:
            return f"[{', '.join(others)} output without a text/plain form, not shown]"
        return ""
    return f"[{kind} output]" if kind else ""


def _error_text(output: Mapping[str, Any]) -> str:
    ename = output.get("ename", "Error")
    evalue = _join(output.get("evalue"))
    head = f"{ename}: {evalue}" if evalue else str(ename)
    lines = strip_ansi("\n".join(_join(t) for t in output.get("traceback") or [])).splitlines()
    if lines and lines[-1].strip() == head.strip():
        lines = lines[:-1]  # IPython's traceback ends with the same "Name: value" line
    if not lines:
        return head
    shown = lines[-TRACEBACK_LINES:]
    note = f"(last {len(shown)} of {len(lines)} traceback lines)\n" if len(shown) < len(lines) else ""
    return f"{head}\nTraceback:\n{note}" + "\n".join(shown)


def _middle_cut(text: str, allowed: int) -> str:
    if len(text) <= allowed:
        return text
    head = allowed * 3 // 5
    tail = allowed - head
    missing = len(text) - head - tail
    return f"{text[:head]}\n[... {missing:,} characters of output cut ...]\n{text[-tail:] if tail else ''}"


def _ensure_newline(text: str) -> str:
    return text if text.endswith("\n") else text + "\n"
