"""NotebookEdit on a notebook file: the change planned as text (see nbfile.py for how).

`plan_file_edit` turns the tool's input and the file's bytes into a `FileEdit`: the text to
write and what the prompt and the result say about it. Every edit but one splices one cell into
the file as it is (`NotebookText`); an insert into a notebook older than nbformat 4.5 gives
every cell an id, so nbformat rewrites that notebook whole.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, NoReturn

from ipy_agent.contract.tool import ToolError

from .nbfile import NotebookText, load_notebook, new_cell, quiet, schema_problems, upgrade_keeping_ids

__all__ = ["OUTPUTS_CLEARED", "FileEdit", "plan_file_edit"]

OUTPUTS_CLEARED = "outputs will be cleared"


@dataclass(kw_only=True)
class FileEdit:
    """One planned edit of a notebook file."""

    text: str  # the whole file after the edit (its BOM aside)
    bom: bool
    old_source: str
    old_type: str | None  # None for an insert
    new_source: str
    cell_type: str
    label: str  # the cell's id, or cell-N
    index: int
    after: str | None  # insert: the cell it follows
    total: int
    cleared: bool
    upgraded: bool
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def plan_file_edit(inp: Any, raw: bytes, display: str) -> FileEdit:
    """The edit `inp` (NotebookEdit's input) makes to a notebook file holding `raw`."""
    doc = NotebookText(raw, display)
    minor = doc.top.get("nbformat_minor")
    if inp.edit_mode == "insert" and not (isinstance(minor, int) and minor >= 5):
        del doc
        return _upgrading(inp, raw, display)
    return _splice(inp, doc, display)


def _splice(inp: Any, doc: NotebookText, display: str) -> FileEdit:
    """One cell changed in the text: the rest of the file stays byte for byte."""
    ids = [c.id for c in doc.cells]
    notes: list[str] = []
    after: str | None = None
    old_cell: dict[str, Any] | None = None
    new: dict[str, Any] | None = None
    if inp.edit_mode == "insert":
        index = 0
        if inp.cell_id:
            index = _find_cell(ids, inp.cell_id, display) + 1
            after = ids[index - 1] or f"cell-{index - 1}"
        new = dict(new_cell(inp.cell_type or "code", inp.new_source, {i for i in ids if i}))
        text = doc.inserted(index, new)
        old_source, new_source, cell_type, cleared, old_type = "", inp.new_source, new["cell_type"], False, None
        label = new["id"]
    else:
        index = _find_cell(ids, inp.cell_id or "", display)
        old_cell = doc.cell(index)
        old_type = str(old_cell.get("cell_type", ""))
        old_source = _joined(old_cell.get("source", ""))
        cleared = old_type == "code" and bool(old_cell.get("outputs") or old_cell.get("execution_count") is not None)
        label = ids[index] or f"cell-{index}"
        if inp.edit_mode == "delete":
            text = doc.deleted(index)
            new_source, cell_type, cleared = "", old_type, False
        else:
            new_source = inp.new_source
            cell_type = inp.cell_type or old_type
            new = _replacement(old_cell, old_type, cell_type, new_source)
            text = doc.replaced(index, new)
            if cleared:
                notes.append(OUTPUTS_CLEARED)
    problems = _problems_after(doc, index, old_cell, new, inp.edit_mode)
    total = len(doc.cells) + (1 if inp.edit_mode == "insert" else -1 if inp.edit_mode == "delete" else 0)
    if problems:
        notes.append(
            f"the notebook already had problems nbformat reports, left as they were: {'; '.join(problems[:3])}"
        )
    return FileEdit(
        text=text,
        bom=doc.bom,
        old_source=old_source,
        old_type=old_type,
        new_source=new_source,
        cell_type=cell_type,
        label=label,
        index=index,
        after=after,
        total=total,
        cleared=cleared,
        upgraded=False,
        notes=notes,
        problems=problems,
    )


def _upgrading(inp: Any, raw: bytes, display: str) -> FileEdit:
    """An insert into a notebook older than 4.5: every cell gets an id, so nbformat rewrites it whole."""
    import nbformat

    nb = upgrade_keeping_ids(load_notebook(raw, display))
    notes = ["notebook upgraded to nbformat 4.5 so cells can have ids (cells without one get one)"]
    index, after = 0, None
    if inp.cell_id:
        index = _find_cell([c.get("id") for c in nb.cells], inp.cell_id, display) + 1
        after = _label(nb.cells[index - 1], index - 1)
    cell = new_cell(inp.cell_type or "code", inp.new_source, {c.get("id") for c in nb.cells})
    nb.cells.insert(index, cell)
    problems = schema_problems(nb)
    if problems:
        before = schema_problems(load_notebook(raw, display))
        introduced = [p for p in problems if p not in before]
        if introduced:
            raise ToolError(
                f"The edited notebook would not be valid nbformat ({introduced[0]}); nothing was written. "
                "Read the notebook to check its structure."
            )
        notes.append(
            f"the notebook already had problems nbformat reports, left as they were: {'; '.join(problems[:3])}"
        )
    with quiet():
        text = nbformat.v4.writes(nb) + "\n"
    if b"\r\n" in raw:
        text = text.replace("\n", "\r\n")
    return FileEdit(
        text=text,
        bom=False,
        old_source="",
        old_type=None,
        new_source=inp.new_source,
        cell_type=cell.cell_type,
        label=cell.id,
        index=index,
        after=after,
        total=len(nb.cells),
        cleared=False,
        upgraded=True,
        notes=notes,
        problems=problems,
    )


def _label(cell: Any, index: int) -> str:
    return cell.get("id") or f"cell-{index}"


def _find_cell(ids: list[str | None], cell_id: str, display: str) -> int:
    matches = [i for i, cid in enumerate(ids) if cid == cell_id]
    if len(matches) > 1:
        where = ", ".join(f"cell-{i}" for i in matches[:10])
        _raise(
            f"Cell id {cell_id!r} is used by {len(matches)} cells in {display!r} ({where}), so it does not say "
            "which one to change. Name the cell by its index instead, e.g. cell_id='cell-N'."
        )
    if matches:
        return matches[0]
    if cell_id.startswith("cell-") and cell_id[5:].isdigit() and int(cell_id[5:]) < len(ids):
        return int(cell_id[5:])
    shown = ", ".join(f"{cid!r} (cell-{i})" if cid else f"'cell-{i}'" for i, cid in enumerate(ids[:10]))
    more = f", … ({len(ids)} cells in all)" if len(ids) > 10 else ""
    valid = f"Valid ids: {shown}{more}." if ids else "The notebook has no cells; use edit_mode insert without cell_id."
    _raise(
        f"Cell {cell_id!r} not found in {display!r}. {valid} Use an id from Read's output, or cell-N "
        "for the cell at 0-based index N."
    )


def _joined(source: Any) -> str:
    """A source as stored (a string, or a list of lines) as one string."""
    if isinstance(source, list):
        return "".join(str(x) for x in source)
    return source if isinstance(source, str) else ""


def _replacement(old: dict[str, Any], old_type: str, cell_type: str, source: str) -> dict[str, Any]:
    """The cell that replaces `old`: its new source, outputs cleared for code; a type change
    makes a fresh cell of the new type with the old id and metadata."""
    if cell_type != old_type:
        fresh = dict(new_cell(cell_type, source, set()))
        fresh["metadata"] = old.get("metadata", {})
        if "id" in old:
            fresh["id"] = old["id"]
        else:
            fresh.pop("id", None)
        return fresh
    cell = {**old, "source": source}
    if cell_type == "code":
        cell["outputs"] = []
        cell["execution_count"] = None
    return cell


def _problems_after(
    doc: NotebookText, index: int, old: dict[str, Any] | None, new: dict[str, Any] | None, mode: str
) -> list[str]:
    """What nbformat finds wrong after the edit, judged on what an edit can change: the top
    level with the cell before and after, and cell ids. A problem the edit would introduce
    raises (nothing is written); those the notebook already had are returned, to report."""
    after = _cell_problems(doc.top, new)
    before = _cell_problems(doc.top, old) if mode != "insert" else _cell_problems(doc.top, None)
    ids = [c.id for c in doc.cells]
    counts_before = Counter(i for i in ids if i is not None)
    if mode != "insert":
        del ids[index]
    if new is not None and isinstance(new.get("id"), str):
        ids.insert(index, new["id"])
    counts_after = Counter(i for i in ids if i is not None)
    duplicate = [f"cell id {i!r} is used by {n} cells" for i, n in counts_after.items() if n > 1]
    after += duplicate
    before += [f"cell id {i!r} is used by {n} cells" for i, n in counts_before.items() if n > 1]
    introduced = [p for p in after if p not in before]
    if introduced:
        raise ToolError(
            f"The edited notebook would not be valid nbformat ({introduced[0]}); nothing was written. "
            "Read the notebook to check its structure."
        )
    return list(dict.fromkeys(after))


def _cell_problems(top: dict[str, Any], cell: dict[str, Any] | None) -> list[str]:
    return schema_problems({**top, "cells": [cell] if cell is not None else []})


def _raise(message: str) -> NoReturn:
    raise ToolError(message)
