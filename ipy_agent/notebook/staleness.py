"""Which cells' outputs may be stale, from their sources and the order they ran in this kernel.

Jupyter does not track what a cell depends on, so after a few edits and reruns the outputs on
screen may no longer follow from the code above them, and an agent that cannot tell reruns
everything. Here each code cell's definitions and uses are found statically (`effects.py`), and
its last run in this kernel comes from the run log (`runlog.py`). A cell is marked:

- "never run in this kernel": no run of it was seen here (its outputs, if any, are older);
- "edited since it last ran": its source is not what ran;
- "may be stale": it uses a name that another cell defines, and that cell ran after it, was
  edited since it ran, never ran here, or is itself marked (the marks follow the notebook's
  order, so a chain of cells is marked down to its end).

These are hints: code can depend on things no parse sees (files, `exec`, mutation through an
alias). They let the model propose the smallest set of cells to rerun instead of Run All.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .effects import cell_effects
from .naming import cell_label
from .protocol_types import LiveCell
from .runlog import RunLog

__all__ = ["StaleMark", "stale_marks"]

MAX_NAMES = 4


@dataclass(frozen=True, kw_only=True)
class StaleMark:
    cell_id: str
    kind: str  # "never-run", "edited", "stale"
    text: str


def stale_marks(cells: Sequence[LiveCell], runs: RunLog) -> list[StaleMark]:
    """The marks of `cells` (the notebook's cells in order, with `id`, `cell_type`, `source`)."""
    code = [c for c in cells if c.get("cell_type") == "code" and (c.get("source") or "").strip()]
    effects = {c["id"]: cell_effects(c.get("source") or "") for c in code}
    marks: dict[str, StaleMark] = {}
    for c in code:
        run = runs.get(c["id"])
        if run is None:
            marks[c["id"]] = StaleMark(cell_id=c["id"], kind="never-run", text="never run in this kernel")
        elif run.source != (c.get("source") or ""):
            marks[c["id"]] = StaleMark(
                cell_id=c["id"], kind="edited", text=f"edited since it last ran ([{run.execution_count}])"
            )
    # Other cells are named as the person sees them, with the id the model addresses them by.
    names = {c["id"]: cell_label({**c, "index": c.get("index", i)}, with_id=True) for i, c in enumerate(cells)}
    definers: dict[str, list[str]] = {}
    for c in code:
        for name in effects[c["id"]].binds:
            definers.setdefault(name, []).append(c["id"])
    for c in code:
        run = runs.get(c["id"])
        if run is None:
            continue
        reasons = _reasons(c["id"], run.execution_count, effects[c["id"]].uses, definers, runs, marks, names)
        if reasons and c["id"] not in marks:
            marks[c["id"]] = StaleMark(cell_id=c["id"], kind="stale", text="may be stale: " + "; ".join(reasons))
    return [marks[c["id"]] for c in code if c["id"] in marks]


def _reasons(
    cell_id: str,
    count: int | None,
    uses: tuple[str, ...],
    definers: dict[str, list[str]],
    runs: RunLog,
    marks: dict[str, StaleMark],
    names: dict[str, str],
) -> list[str]:
    reasons: list[str] = []
    for name in uses:
        for other in definers.get(name, []):
            if other == cell_id:
                continue
            other_run = runs.get(other)
            mark = marks.get(other)
            if other_run is not None and count is not None and (other_run.execution_count or 0) > count:
                reasons.append(f"uses {name}, which {names.get(other, other)} redefined after it ran")
            elif mark is not None:
                reasons.append(f"uses {name} from {names.get(other, other)} ({mark.text})")
            else:
                continue
            break
        if len(reasons) >= MAX_NAMES:
            break
    return reasons
