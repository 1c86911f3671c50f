"""Cell policies a person sets: which cells the agent must ask about, never run, or never edit.

A person marks a cell with a tag (JupyterLab's property inspector, "Cell tags"):

- `agent:ask`: NotebookRun always asks, whatever the rules and the mode say;
- `agent:never-run`: NotebookRun refuses (an expensive training cell, a cell that writes to a
  database), in every mode, bypassPermissions included;
- `agent:read-only`: NotebookEdit refuses to change or delete the cell;
- `agent:timeout=SECONDS`: NotebookRun's default timeout for the cell.

The same tags in the notebook's metadata apply to every cell (`metadata.ipy_agent.policy`, a
list of tags), and `metadata.ipy_agent.cell_policies` maps a cell id to tags, which is what the
`%agent` cell's prompt writes when the person picks "never run this cell" (through the
live-notebook bridge's metadata op, so no new protocol op and no cell edit is needed).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .protocol_types import AgentMetadata

__all__ = [
    "ASK",
    "NEVER_RUN",
    "POLICY_TAGS",
    "READ_ONLY",
    "CellPolicy",
    "cell_policy",
    "policy_sources",
    "with_cell_tag",
]

ASK = "agent:ask"
NEVER_RUN = "agent:never-run"
READ_ONLY = "agent:read-only"
TIMEOUT_PREFIX = "agent:timeout="
POLICY_TAGS = (ASK, NEVER_RUN, READ_ONLY)


@dataclass(frozen=True, kw_only=True)
class CellPolicy:
    ask: bool = False
    never_run: bool = False
    read_only: bool = False
    timeout: float | None = None
    where: str = ""  # "its tag agent:never-run", "the notebook's metadata"

    @property
    def tags(self) -> tuple[str, ...]:
        out = [t for t, on in ((ASK, self.ask), (NEVER_RUN, self.never_run), (READ_ONLY, self.read_only)) if on]
        if self.timeout is not None:
            out.append(f"{TIMEOUT_PREFIX}{self.timeout:g}")
        return tuple(out)

    def __bool__(self) -> bool:
        return bool(self.tags)


def _strings(value: Any) -> list[str]:
    return [t for t in value if isinstance(t, str)] if isinstance(value, list) else []


def cell_policy(cell: Mapping[str, Any], agent_metadata: Mapping[str, Any] | None = None) -> CellPolicy:
    """The policy of `cell` (as the bridge sends it, with `tags`) under the notebook's
    `ipy_agent` metadata."""
    found = policy_sources(cell, agent_metadata)
    timeout: float | None = None
    for tag in found:
        if tag.startswith(TIMEOUT_PREFIX):
            timeout = _seconds(tag[len(TIMEOUT_PREFIX) :])
            break
    strongest = next((found[t] for t in (NEVER_RUN, READ_ONLY, ASK) if t in found), "")
    return CellPolicy(
        ask=ASK in found,
        never_run=NEVER_RUN in found,
        read_only=READ_ONLY in found,
        timeout=timeout,
        where=strongest,
    )


def policy_sources(cell: Mapping[str, Any], agent_metadata: Mapping[str, Any] | None = None) -> dict[str, str]:
    """Each policy tag that applies to `cell` (the bridge's form, with `tags`), with where it is
    set (`its tag agent:read-only`), the cell's own tags first; a timeout only as its first tag."""
    meta = agent_metadata or {}
    per_cell = meta.get("cell_policies")
    sources: list[tuple[str, Iterable[str]]] = [
        ("its tag", _strings(cell.get("tags"))),
        (
            "the notebook's policy for this cell",
            _strings(per_cell.get(cell.get("id"))) if isinstance(per_cell, dict) else [],
        ),
        ("the notebook's policy for every cell", _strings(meta.get("policy"))),
    ]
    found: dict[str, str] = {}
    timed = False
    for where, tags in sources:
        for tag in tags:
            if tag in POLICY_TAGS:
                found.setdefault(tag, f"{where} {tag}")
            elif tag.startswith(TIMEOUT_PREFIX) and not timed and _seconds(tag[len(TIMEOUT_PREFIX) :]) is not None:
                found[tag], timed = f"{where} {tag}", True
    return found


def _seconds(text: str) -> float | None:
    try:
        value = float(text.strip().removesuffix("s"))
    except ValueError:
        return None
    return value if math.isfinite(value) and value > 0 else None


def with_cell_tag(agent_metadata: Mapping[str, Any], cell_id: str, tag: str) -> AgentMetadata:
    """The notebook's `ipy_agent` metadata with `tag` added to the cell's policy."""
    meta = dict(agent_metadata)
    per_cell = dict(meta.get("cell_policies") or {}) if isinstance(meta.get("cell_policies"), dict) else {}
    tags = _strings(per_cell.get(cell_id))
    if tag not in tags:
        tags.append(tag)
    per_cell[cell_id] = tags
    meta["cell_policies"] = per_cell
    return meta
