"""Notebook files: one parse, the changed cell spliced into the text, nbformat for the rest.

An edit changes one cell. `NotebookText` parses the file once, with the C JSON scanner, keeping
of each cell only where its text is, its id and its type; the cell being edited is decoded
again from its own text. The edited cell is written in nbformat's layout (sorted keys, indent
1, sources split into lines) and put where the old one was, so every other byte of the file
stays as it was: a notebook of 150,000 cells is edited in a few times its size in memory and
in about a second, with no copy of the notebook made. Validation covers what the edit can
change: the notebook's top level and the new cell, against nbformat's schema, and cell ids.

nbformat itself is used for new cells and for the one edit that rewrites every cell (an
insert that upgrades a notebook older than 4.5 to cell ids), and it is imported inside these
functions, not at the top: with the format checkers JupyterLab installs its import takes
seconds, and every first `%agent` would wait for it.
"""

from __future__ import annotations

import codecs
import contextlib
import copy
import json
import re
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ipy_agent.contract.tool import ToolError

__all__ = [
    "VALID_ID",
    "CellSpan",
    "NotebookText",
    "cell_text",
    "load_notebook",
    "new_cell",
    "quiet",
    "schema_problems",
    "upgrade_keeping_ids",
]


# nbformat 4.5's rule for a cell id.
VALID_ID = re.compile(r"^[a-zA-Z0-9-_]{1,64}$")


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """nbformat warns on stderr, which in a kernel lands in the person's cell output."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def new_cell(cell_type: str, source: str, taken: set[str]) -> Any:
    from nbformat.v4 import new_code_cell, new_markdown_cell

    make = new_code_cell if cell_type == "code" else new_markdown_cell
    cell = make(source)
    while cell.id in taken:  # 8 random hex digits: a clash is unlikely, not impossible
        cell = make(source)
    return cell


def upgrade_keeping_ids(nb: Any) -> Any:
    """nbformat 4.<5 -> 4.5, keeping every valid, unique id a cell already has."""
    from nbformat.corpus.words import generate_corpus_id
    from nbformat.v4 import convert as v4convert

    old_ids = [cell.get("id") for cell in nb.cells]
    with quiet():
        nb = v4convert.upgrade(nb, from_version=4, from_minor=nb.nbformat_minor)
    kept: list[str | None] = []
    taken: set[str] = set()
    for old_id in old_ids:
        ok = isinstance(old_id, str) and bool(VALID_ID.match(old_id)) and old_id not in taken
        kept.append(old_id if ok else None)
        if ok:
            taken.add(old_id)
    for cell, old_id in zip(nb.cells, kept):
        if old_id is not None:
            cell.id = old_id
            continue
        while cell.id in taken:
            cell.id = generate_corpus_id()
        taken.add(cell.id)
    return nb


def schema_problems(nb: Any) -> list[str]:
    """What nbformat's schema finds wrong with `nb` (a notebook, or the part of one an edit
    changes), plus duplicate ids, without changing it (it is validated as a copy)."""
    import nbformat

    with quiet():
        try:
            found = [str(e).split("\n", 1)[0] for e in nbformat.validator.iter_validate(copy.deepcopy(nb))]
        except nbformat.ValidationError as e:  # e.g. no schema for this minor version
            found = [str(e).split("\n", 1)[0]]
    counts = Counter(c.get("id") for c in nb["cells"] if c.get("id") is not None)
    found += [f"cell id {i!r} is used by {n} cells" for i, n in counts.items() if n > 1]
    return list(dict.fromkeys(found))  # one line per kind of problem, in order


def load_notebook(raw: bytes, display: str) -> Any:
    import nbformat
    from nbformat.v4.rwbase import rejoin_lines

    try:
        data = json.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ToolError(
            f"{display!r} is not valid notebook JSON ({e}). Read it to see what is wrong; Write can "
            "replace it with a repaired notebook."
        ) from e
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise ToolError(f"{display!r} is not a Jupyter notebook in nbformat 4 (no 'cells' list).")
    if data.get("nbformat") != 4:
        raise ToolError(
            f"{display!r} is nbformat {data.get('nbformat')!r}; NotebookEdit changes nbformat 4 notebooks "
            "only. Open and save it in Jupyter to convert it, then Read it again."
        )
    with quiet():
        return rejoin_lines(nbformat.from_dict(data))


# --- one parse, one cell spliced ------------------------------------------------------------------

_WS = re.compile(r"[ \t\n\r]*")
_AFTER_CELL = re.compile(r"[ \t\n\r]*([,\]])[ \t\n\r]*")
_DECODER = json.JSONDecoder()
# The C scanners json itself uses (neither is in the type stubs): a string from its opening
# quote, and one value at an index without raw_decode's wrapper.
_SCANSTRING: Callable[[str, int], tuple[str, int]] = json.decoder.__dict__["scanstring"]
_SCAN_ONCE: Callable[[str, int], tuple[Any, int]] = _DECODER.__dict__["scan_once"]


@dataclass(frozen=True, slots=True)
class CellSpan:
    start: int  # where the cell's `{` is in the text
    end: int  # just after its `}`
    id: str | None
    cell_type: str


class NotebookText:
    """A notebook file as text, parsed once: its top-level fields and where each cell is."""

    def __init__(self, raw: bytes, display: str) -> None:
        self.bom = raw.startswith(codecs.BOM_UTF8)
        try:
            text = raw.decode("utf-8-sig")
            self.top, self.cells, self.open, self.close = _scan(text)
        except (UnicodeDecodeError, ValueError) as e:
            raise ToolError(
                f"{display!r} is not valid notebook JSON ({e}). Read it to see what is wrong; Write can "
                "replace it with a repaired notebook."
            ) from e
        if self.open < 0:
            raise ToolError(f"{display!r} is not a Jupyter notebook in nbformat 4 (no 'cells' list).")
        if self.top.get("nbformat") != 4:
            raise ToolError(
                f"{display!r} is nbformat {self.top.get('nbformat')!r}; NotebookEdit changes nbformat 4 notebooks "
                "only. Open and save it in Jupyter to convert it, then Read it again."
            )
        self.text = text
        self.newline = "\r\n" if "\r\n" in text[: self.open + 200] or "\r\n" in text[-200:] else "\n"
        first = self.cells[0].start if self.cells else -1
        line = text.rfind("\n", self.open, first) if first >= 0 else -1
        # The cells' indentation as written (nbformat: two spaces); -1: on the `[` line (compact JSON).
        self.indent = text[line + 1 : first] if line >= 0 and not text[line + 1 : first].strip() else None

    def cell(self, index: int) -> dict[str, Any]:
        """The cell at `index`, decoded from its own text (as written: sources may be lists)."""
        span = self.cells[index]
        value, _ = _DECODER.raw_decode(self.text, span.start)
        if not isinstance(value, dict):  # the scan checked it; this is for the type checker
            raise ToolError(f"cell-{index} is not a JSON object")
        return value

    def _render(self, cell: dict[str, Any]) -> str:
        return cell_text(cell, indent=self.indent, newline=self.newline)

    def replaced(self, index: int, cell: dict[str, Any]) -> str:
        span = self.cells[index]
        return self.text[: span.start] + self._render(cell) + self.text[span.end :]

    def deleted(self, index: int) -> str:
        cells, text = self.cells, self.text
        if len(cells) == 1:
            return text[: self.open + 1] + text[self.close :]
        if index + 1 < len(cells):
            return text[: cells[index].start] + text[cells[index + 1].start :]
        return text[: cells[index - 1].end] + text[cells[index].end :]

    def inserted(self, index: int, cell: dict[str, Any]) -> str:
        """The text with `cell` put before the cell now at `index` (at the end when it is past the last)."""
        cells, text, new = self.cells, self.text, self._render(cell)
        sep = "," + (self.newline + self.indent if self.indent is not None else " ")
        if not cells:
            inner = self.newline + "  " + cell_text(cell, indent="  ", newline=self.newline) + self.newline + " "
            return text[: self.open + 1] + inner + text[self.close :]
        if index < len(cells):
            return text[: cells[index].start] + new + sep + text[cells[index].start :]
        return text[: cells[-1].end] + sep + new + text[cells[-1].end :]


def cell_text(cell: dict[str, Any], *, indent: str | None, newline: str = "\n") -> str:
    """One cell as nbformat writes it (source split into lines, sorted keys, indent 1), placed
    at `indent` (None: on one line, as compact JSON has it)."""
    cell = dict(cell)
    source = cell.get("source")
    if isinstance(source, str):
        cell["source"] = source.splitlines(True)
    metadata = cell.get("metadata")
    if isinstance(metadata, dict) and "trusted" in metadata:  # nbformat strips it on write
        cell["metadata"] = {k: v for k, v in metadata.items() if k != "trusted"}
    if indent is None:
        return json.dumps(cell, sort_keys=True, ensure_ascii=False)
    text = json.dumps(cell, sort_keys=True, ensure_ascii=False, indent=1, separators=(",", ": "))
    return text.replace("\n", newline + indent)


def _ws(text: str, i: int) -> int:
    m = _WS.match(text, i)
    return m.end() if m else i


def _expect(text: str, i: int, char: str) -> None:
    if text[i : i + 1] != char:
        raise json.JSONDecodeError(f"Expecting {char!r}", text, i)


def _scan(text: str) -> tuple[dict[str, Any], list[CellSpan], int, int]:
    """(top-level fields but cells, each cell's span, where `[` and `]` of the cells are).
    The C scanner decodes each value; a cell is kept only as its span, id and type."""
    top: dict[str, Any] = {}
    cells: list[CellSpan] = []
    opened = closed = -1
    i = _ws(text, 0)
    _expect(text, i, "{")
    i = _ws(text, i + 1)
    if text[i : i + 1] == "}":
        return top, cells, opened, closed
    while True:
        _expect(text, i, '"')
        key, i = _SCANSTRING(text, i + 1)
        i = _ws(text, i)
        _expect(text, i, ":")
        i = _ws(text, i + 1)
        if key == "cells" and text[i : i + 1] == "[":
            cells, opened, closed, i = _scan_cells(text, i)
        else:
            top[key], i = _DECODER.raw_decode(text, i)
        i = _ws(text, i)
        if text[i : i + 1] == ",":
            i = _ws(text, i + 1)
            continue
        _expect(text, i, "}")
        if text[i + 1 :].strip():
            raise json.JSONDecodeError("Extra data", text, i + 1)
        return top, cells, opened, closed


def _scan_cells(text: str, i: int) -> tuple[list[CellSpan], int, int, int]:
    opened = i
    cells: list[CellSpan] = []
    i = _ws(text, i + 1)
    if text[i : i + 1] == "]":
        return cells, opened, i, i + 1
    scan, after = _SCAN_ONCE, _AFTER_CELL.match
    while True:
        start = i
        try:
            cell, i = scan(text, i)  # the C scanner, without raw_decode's wrapper
        except StopIteration as e:
            raise json.JSONDecodeError("Expecting value", text, e.value) from None
        if type(cell) is not dict:
            raise json.JSONDecodeError("a cell is not an object", text, start)
        cid = cell.get("id")
        cells.append(CellSpan(start, i, cid if type(cid) is str else None, str(cell.get("cell_type", ""))))
        m = after(text, i)
        if m is None:
            raise json.JSONDecodeError("Expecting ',' or ']'", text, i)
        if m.group(1) == "]":
            return cells, opened, m.start(1), m.start(1) + 1
        i = m.end()
