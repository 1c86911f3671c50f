"""What the notebook tools say about running cells: a run's effect on the namespace, the cell's
last run (NotebookRun's prompt and result), and the cells' policies and staleness (NotebookRead).

The effects come from `ipy_agent.notebook.effects` (a parse; nothing runs), with what the names
the cell reads hold now when that reaches the namespace (the shell, the namespace itself, a
function that assigns globals: compared by identity and type, no code of theirs runs); each name
that exists now gets its summary from Variables (type-level lookups only), so the person approving a
run reads "overwrites df: DataFrame" with its rows and columns next to the code. The model gets the same lines
in the result. How the cell last ran comes from this kernel's run log (the bridge's `runs`) or,
for a cell that ran before it was kept, from the cell's own count and outputs.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from typing import Any

from ipy_agent.notebook.effects import cell_effects, effect_lines
from ipy_agent.notebook.namespace_reach import reach_through_values
from ipy_agent.notebook.naming import cell_label
from ipy_agent.notebook.policy import CellPolicy, cell_policy
from ipy_agent.notebook.protocol_types import LiveCell
from ipy_agent.notebook.runlog import describe_run
from ipy_agent.notebook.staleness import stale_marks

__all__ = ["cells_label", "effect_notes", "notebook_notes", "policy_note"]

_SHAPE = re.compile(r"^shape \((\d+), (\d+)\)")
_SHORT = 100


def _short(type_name: str, summary: str) -> str:
    """A DataFrame's rows and columns ("DataFrame 10,000 by 12", with a times sign); the type and the summary's start otherwise."""
    base = type_name.rsplit(".", 1)[-1]
    m = _SHAPE.match(summary)
    if m and base == "DataFrame":
        return f"{base} {int(m.group(1)):,} × {int(m.group(2)):,}"  # noqa: RUF001
    text = f"{base} {summary}" if summary else base
    return text if len(text) <= _SHORT else text[: _SHORT - 1] + "…"


def cells_label(cells: Sequence[LiveCell]) -> str:
    """Cells as the person names them: `cell 4 · df = load(...)`; `cells 3 · a = 1; 4 · b = 2`."""
    if len(cells) == 1:
        return cell_label(cells[0])
    return "cells " + "; ".join(cell_label(c).removeprefix("cell ") for c in cells)


def effect_notes(nb: Any, cell: LiveCell) -> list[str]:
    """The lines the prompt and the result show about what running `cell` can change."""
    effects = cell_effects(cell.get("source") or "")
    names = list(dict.fromkeys([*effects.binds, *effects.deletes]))
    current: dict[str, str] = {}
    shell = getattr(nb, "shell", None)
    if names and shell is not None:
        current = {i.name: _short(i.type, i.summary) for i in nb.variables(names=names)}
    reached: tuple[str, ...] = ()
    namespace = getattr(shell, "user_ns", None)
    if isinstance(namespace, dict):
        holders = [(shell, "the IPython shell"), (getattr(shell, "user_module", None), "the notebook's module")]
        reached = reach_through_values(
            effects.uses, namespace, [(obj, label) for obj, label in holders if obj is not None]
        )
    loaded = {name.split(".")[0] for name in list(sys.modules)}
    runs = getattr(nb, "runs", None)
    last = describe_run(
        runs.get(str(cell.get("id"))) if runs is not None else None,
        output_count=cell.get("output_count"),
        output_chars=cell.get("outputs_size"),
    )
    if last is None and cell.get("execution_count") is not None:
        count = cell.get("output_count")
        last = f"[{cell['execution_count']}] (before this kernel kept timings)" + (
            f", {count} output{'s' if count != 1 else ''}" if isinstance(count, int) else ""
        )
    return effect_lines(effects, current=current, loaded=loaded, last_run=last, reached=reached)


def policy_note(policy: CellPolicy) -> str | None:
    """One line for the prompt when the person set a policy on the cell."""
    if policy.ask:
        return f"asks every time: {policy.where or 'agent:ask'}"
    if policy.timeout is not None:
        return f"timeout {policy.timeout:g} s from the cell's policy"
    return None


async def notebook_notes(nb: Any, cells: Sequence[LiveCell], shown: set[str]) -> str:
    """NotebookRead's section on the cells it shows: the person's policies, and which cells may be
    stale or never ran in this kernel (from sources and this kernel's run order)."""
    from ipy_agent.notebook.bridge import BridgeError  # as live.py: loaded with the bridge

    try:
        meta = await nb.agent_metadata()
    except BridgeError:
        meta = {}
    lines: list[str] = []
    for c in cells:
        policy = cell_policy(c, meta if isinstance(meta, dict) else {})
        if policy and c.get("id") in shown:
            lines.append(f"- {cell_label(c, with_id=True)}: {', '.join(policy.tags)} ({policy.where or 'its tag'})")
    out = ""
    if lines:
        out += "Cell policies the person set (agent:never-run: do not run; agent:read-only: do not edit):\n"
        out += "\n".join(lines) + "\n"
    runs = getattr(nb, "runs", None)
    if runs is not None:
        marks = [m for m in stale_marks(cells, runs) if m.cell_id in shown]
        if marks:
            out += (
                "Run state in this kernel (from the cells' definitions and uses and the order they ran; rerun the "
                "fewest cells that fix it, in notebook order):\n"
            )
            by_id = {c.get("id"): c for c in cells}
            out += "\n".join(
                f"- {cell_label(by_id.get(m.cell_id) or {'id': m.cell_id}, with_id=True)}: {m.text}" for m in marks
            )
            out += "\n"
    return out
