"""Notebook files through nbformat: load, upgrade to 4.5 keeping ids, validate, new cells.

nbformat is imported inside these functions, not at the top: with the format checkers
JupyterLab installs its import takes seconds, and every first `%agent` would wait for it. Only
editing a notebook file pays for it.
"""

from __future__ import annotations

import contextlib
import copy
import json
import re
import warnings
from collections import Counter
from collections.abc import Iterator
from typing import Any

from ipy_agent.contract.tool import ToolError

__all__ = ["VALID_ID", "load_notebook", "new_cell", "quiet", "schema_problems", "upgrade_keeping_ids"]


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
    """What nbformat's schema finds wrong with `nb`, plus duplicate ids, without changing it."""
    import nbformat

    with quiet():
        try:
            found = [str(e).split("\n", 1)[0] for e in nbformat.validator.iter_validate(copy.deepcopy(nb))]
        except nbformat.ValidationError as e:  # e.g. no schema for this minor version
            found = [str(e).split("\n", 1)[0]]
    counts = Counter(c.get("id") for c in nb.cells if c.get("id") is not None)
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
