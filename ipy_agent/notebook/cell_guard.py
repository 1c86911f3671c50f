"""What a write of a notebook would do to the person's cell policies, whatever tool makes it.

A cell policy (`policy.py`) is the person's; the agent must not change it, nor the cells it
protects, by another door than NotebookEdit: a Write of the whole `.ipynb`, an Edit of its JSON,
an edit of the open page, a metadata op. Each of those writers compares the notebook before and
after the write here (`breaches`, on parsed JSON; `file_breaches`, on the file's bytes) and acts
on the verdict: the permission decision asks or denies, and the writer checks again right before
it writes, against the notebook as it is then.

What each policy demands, in every permission mode (bypassPermissions included):

| policy            | the cell changed or moved | the cell deleted | the policy removed or weakened |
|-------------------|---------------------------|------------------|--------------------------------|
| `agent:read-only` | refused                   | refused          | refused                        |
| `agent:never-run` | allowed                   | asks             | asks                           |
| `agent:ask`       | allowed                   | asks             | asks                           |
| `agent:timeout=S` | allowed                   | asks             | asks (removed, or S raised)    |

"Changed" is any difference in the cell's type, source, outputs, execution count, attachments or
metadata (its tags included); "moved" is a change in which of the cells present before and after
come before it (inserting or deleting other cells moves nothing). Cells are matched by id; cells
without an id (nbformat before 4.5), with a repeated id, or whose id is gone, are matched by
content in order, and a protected cell with no counterpart counts as deleted. A notebook that is
not JSON after the write has deleted every protected cell. Policies in the notebook's metadata
(`metadata.ipy_agent.policy` and `cell_policies`) count as the cell's own tags do.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .naming import cell_label
from .policy import ASK, NEVER_RUN, READ_ONLY, TIMEOUT_PREFIX, policy_sources

__all__ = ["KEY", "Breach", "Demand", "Verdict", "breaches", "cell_edit_breaches", "file_breaches", "may_hold_policy"]

Demand = Literal["ask", "refuse"]
KEY = "ipy_agent"  # the notebook metadata's namespace for this package (as in metadata.py)
_SHOWN = 3  # breaches named in a message; the rest are counted


@dataclass(frozen=True, kw_only=True)
class Breach:
    """One protected cell (or notebook-wide policy) the write would change."""

    cell: str  # as the person names it, with the id for the model: `cell 3 · x = 1 (id 'c1')`
    policy: str  # the tag: `agent:read-only`
    where: str  # `its tag agent:read-only`, `the notebook's policy for this cell agent:never-run`
    change: str  # `its source would change`, `it would be deleted`, `the policy would be removed`
    demand: Demand


@dataclass(frozen=True)
class Verdict:
    """Every breach a write would make; empty when it keeps every policy."""

    found: tuple[Breach, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.found)

    @property
    def demand(self) -> Demand | None:
        if any(b.demand == "refuse" for b in self.found):
            return "refuse"
        return "ask" if self.found else None

    def refusal(self, notebook: str) -> str:
        """What the model is told when the write is refused."""
        refused = [b for b in self.found if b.demand == "refuse"]
        first = refused[0]
        more = f" ({len(refused) - 1} more protected cells would change too.)" if len(refused) > 1 else ""
        return (
            f"{first.cell[:1].upper()}{first.cell[1:]} of {notebook} is read-only for the agent ({first.where}): "
            f"the person set this, and this write would change it ({first.change}), so nothing was written.{more} "
            "Do not change it another way; put new code in a new cell (NotebookEdit with edit_mode insert), "
            "or ask the person."
        )

    def question(self, notebook: str) -> str:
        """What the person is asked: which cells, which policies, what would happen to them."""
        lines = [f"{b.cell[:1].upper()}{b.cell[1:]} ({b.where}): {b.change}" for b in self.found[:_SHOWN]]
        more = f"; and {len(self.found) - _SHOWN} more" if len(self.found) > _SHOWN else ""
        return f"this write of {notebook} removes or weakens a cell policy the person set: " + "; ".join(lines) + more


def may_hold_policy(text: str) -> bool:
    """Whether a notebook's text can hold a policy at all (a cheap test before parsing it): every
    policy is a string starting `agent:`, unless JSON escapes spell it otherwise."""
    return "agent:" in text or "\\u" in text


def file_breaches(old: bytes | None, new: bytes) -> Verdict:
    """`breaches` for a notebook file about to be rewritten from `old` (None: it does not exist)
    to `new`. A file that is not a notebook before holds no policy; one that is not after has lost
    every protected cell."""
    old_text = _text(old) if old is not None else None
    if old is None or old_text is None or not may_hold_policy(old_text):
        return Verdict()
    # A tool checks one write up to four times (validation before and after the prompt, the
    # permission check, the write): a notebook with a policy is parsed once for all of them.
    key = (hashlib.blake2b(old, digest_size=16).digest(), hashlib.blake2b(new, digest_size=16).digest())
    if (known := _JUDGED.get(key)) is not None:
        return known
    before = _parsed(old_text)
    del old_text
    if before is None:
        return Verdict()
    after = _parsed(_text(new))
    verdict = breaches(before, after if after is not None else {"cells": [], "metadata": {}})
    _JUDGED.clear()  # the last write only: the next check is of the same one
    _JUDGED[key] = verdict
    return verdict


_JUDGED: dict[tuple[bytes, bytes], Verdict] = {}


def _text(raw: bytes) -> str | None:
    try:
        return raw.decode("utf-16") if raw[:2] in (b"\xff\xfe", b"\xfe\xff") else raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None


def _parsed(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def breaches(before: Mapping[str, Any], after: Mapping[str, Any]) -> Verdict:
    """What changing the notebook `before` (nbformat JSON, parsed) into `after` does to the cells
    the person protected and to the policies themselves. See the module's table."""
    old_cells, new_cells = _cells(before), _cells(after)
    old_meta, new_meta = _agent_meta(before), _agent_meta(after)
    old_policies = [policy_sources(_tagged(c), old_meta) if _may_have(c, old_meta) else {} for c in old_cells]
    found: list[Breach] = []
    if any(old_policies):
        match = _match(old_cells, new_cells)
        moved = _moved(match)
        for i, policies in enumerate(old_policies):
            if not policies:
                continue
            j = match[i]
            label = cell_label({**_tagged(old_cells[i]), "index": i}, with_id=True)
            after_policies = policy_sources(_tagged(new_cells[j]), new_meta) if j is not None else {}
            found += _cell_breaches(
                label, policies, after_policies, old_cells[i], new_cells[j] if j is not None else None, i in moved
            )
    found += _notebook_breaches(old_meta, new_meta, {c.get("id") for c in old_cells})
    return Verdict(tuple(found))


def cell_edit_breaches(
    cell: Mapping[str, Any], agent_metadata: Mapping[str, Any], *, edit_mode: str, source: str, cell_type: str
) -> Verdict:
    """`breaches` for one edit of the open page's `cell` (as the bridge sends it: `tags`, `index`,
    `output_count`), as the page applies it: a replace keeps the cell's metadata and clears a code
    cell's outputs; a delete removes it. An insert changes no cell."""
    if edit_mode == "insert":
        return Verdict()
    outputs = [{"output_count": cell.get("output_count")}] if cell.get("output_count") else []
    tags = cell.get("tags")
    old = {
        "id": cell.get("id"),
        "cell_type": cell.get("cell_type"),
        "source": cell.get("source") or "",
        "metadata": {"tags": list(tags)} if isinstance(tags, list) and tags else {},
        "outputs": outputs,
        "execution_count": cell.get("execution_count"),
    }
    new_cells: list[dict[str, Any]] = []
    if edit_mode == "replace":
        new = {**old, "source": source, "cell_type": cell_type}
        if cell_type == "code":
            new["outputs"], new["execution_count"] = [], None
        new_cells.append(new)
    meta = {KEY: dict(agent_metadata)}
    verdict = breaches({"cells": [old], "metadata": meta}, {"cells": new_cells, "metadata": meta})
    label = cell_label(cell, with_id=True)  # its position in the page, not in this one-cell notebook
    return Verdict(tuple(dataclasses.replace(b, cell=label) if b.cell != "the notebook" else b for b in verdict.found))


def _cells(nb: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    cells = nb.get("cells")
    return [c if isinstance(c, Mapping) else {} for c in cells] if isinstance(cells, list) else []


def _agent_meta(nb: Mapping[str, Any]) -> Mapping[str, Any]:
    metadata = nb.get("metadata")
    meta = metadata.get(KEY) if isinstance(metadata, Mapping) else None
    return meta if isinstance(meta, Mapping) else {}


def _may_have(cell: Mapping[str, Any], meta: Mapping[str, Any]) -> bool:
    """Whether `cell` can have a policy at all: tags, or a notebook policy that may reach it."""
    metadata = cell.get("metadata")
    return bool(meta) or (isinstance(metadata, Mapping) and bool(metadata.get("tags")))


def _tagged(cell: Mapping[str, Any]) -> dict[str, Any]:
    """A file's cell in the bridge's form, which `policy_sources` and `cell_label` read."""
    metadata = cell.get("metadata")
    tags = metadata.get("tags") if isinstance(metadata, Mapping) else None
    return {"id": cell.get("id"), "tags": tags, "source": _joined(cell.get("source"))}


def _joined(value: Any) -> str:
    if isinstance(value, list):
        return "".join(str(x) for x in value)
    return value if isinstance(value, str) else ""


def _canonical_outputs(outputs: Any) -> Any:
    """Outputs with nbformat's multiline strings (a list of lines, or one string) as one string."""
    if not isinstance(outputs, list):
        return outputs
    out = []
    for o in outputs:
        if not isinstance(o, Mapping):
            out.append(o)
            continue
        o = dict(o)
        if isinstance(o.get("text"), list):
            o["text"] = _joined(o["text"])
        if isinstance(o.get("data"), Mapping):
            o["data"] = {k: _joined(v) if isinstance(v, list) else v for k, v in o["data"].items()}
        out.append(o)
    return out


_PARTS = (
    ("cell_type", "its type"),
    ("source", "its source"),
    ("outputs", "its outputs"),
    ("execution_count", "its execution count"),
    ("attachments", "its attachments"),
    ("metadata", "its metadata"),
)


def _parts(cell: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "cell_type": cell.get("cell_type"),
        "source": _joined(cell.get("source")),
        "outputs": _canonical_outputs(cell.get("outputs")),
        "execution_count": cell.get("execution_count"),
        "attachments": cell.get("attachments"),
        "metadata": cell.get("metadata") or {},
    }


def _fingerprint(cell: Mapping[str, Any]) -> str:
    return json.dumps(_parts(cell), sort_keys=True, default=str)


def _match(old: Sequence[Mapping[str, Any]], new: Sequence[Mapping[str, Any]]) -> list[int | None]:
    """For each old cell, the index of its counterpart in `new`, or None (deleted)."""
    match: list[int | None] = [None] * len(old)
    old_ids = _unique_ids(old)
    new_at = {cell_id: j for j, cell_id in _unique_ids(new).items()}
    taken: set[int] = set()
    for i, cell_id in old_ids.items():
        j = new_at.get(cell_id)
        if j is not None:
            match[i] = j
            taken.add(j)
    rest_old = [i for i in range(len(old)) if match[i] is None]
    rest_new = [j for j in range(len(new)) if j not in taken]
    if rest_old and rest_new:
        a = [_fingerprint(old[i]) for i in rest_old]
        b = [_fingerprint(new[j]) for j in rest_new]
        for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
            if tag in ("equal", "replace"):  # a replaced run pairs up in order: changed, not deleted
                for k in range(min(i2 - i1, j2 - j1)):
                    match[rest_old[i1 + k]] = rest_new[j1 + k]
        # A cell deleted in one place and the same inserted in another has moved.
        paired = {j for j in match if j is not None}
        unpaired: dict[str, list[int]] = {}
        for j, fp in zip(rest_new, b):
            if j not in paired:
                unpaired.setdefault(fp, []).append(j)
        for i, fp in zip(rest_old, a):
            if match[i] is None and unpaired.get(fp):
                match[i] = unpaired[fp].pop(0)
    return match


def _unique_ids(cells: Sequence[Mapping[str, Any]]) -> dict[int, str]:
    """Index -> id, for cells whose string id no other cell has."""
    ids = [c.get("id") if isinstance(c.get("id"), str) else None for c in cells]
    counts: dict[str, int] = {}
    for cell_id in ids:
        if cell_id is not None:
            counts[cell_id] = counts.get(cell_id, 0) + 1
    return {i: cell_id for i, cell_id in enumerate(ids) if cell_id is not None and counts[cell_id] == 1}


def _moved(match: list[int | None]) -> set[int]:
    """Old indexes of matched cells whose set of matched predecessors changed."""
    pairs = [(i, j) for i, j in enumerate(match) if j is not None]
    rank = {j: r for r, j in enumerate(sorted(j for _, j in pairs))}  # position among matched cells, after
    moved: set[int] = set()
    highest = -1
    for k, (i, j) in enumerate(pairs):
        # The k cells before it, before the write, must be exactly the k before it after.
        if rank[j] != k or highest > rank[j]:
            moved.add(i)
        highest = max(highest, rank[j])
    return moved


def _demand(tag: str, *, changed: bool) -> Demand | None:
    """What `tag` demands when its cell changes (changed=True) or its policy goes (False)."""
    if tag == READ_ONLY:
        return "refuse"
    if changed:
        return None
    return "ask" if tag in (NEVER_RUN, ASK) or tag.startswith(TIMEOUT_PREFIX) else None


def _cell_breaches(
    label: str,
    policies: dict[str, str],
    after_policies: dict[str, str],
    old: Mapping[str, Any],
    new: Mapping[str, Any] | None,
    moved: bool,
) -> list[Breach]:
    if new is None:
        return [
            Breach(cell=label, policy=tag, where=where, change="it would be deleted", demand=d)
            for tag, where in policies.items()
            if (d := _demand(tag, changed=False)) is not None
        ]
    before, after = _parts(old), _parts(new)
    changes = [words for key, words in _PARTS if before[key] != after[key]]
    what = " and ".join(changes[:2]) + (" (and more)" if len(changes) > 2 else "") + " would change" if changes else ""
    if moved:
        what = f"{what}; it would move" if what else "it would move among the other cells"
    out: list[Breach] = []
    for tag, where in policies.items():
        if what and (d := _demand(tag, changed=True)) is not None:
            out.append(Breach(cell=label, policy=tag, where=where, change=what, demand=d))
        elif _weakened(tag, after_policies) and (d := _demand(tag, changed=False)) is not None:
            out.append(Breach(cell=label, policy=tag, where=where, change=f"{tag} would be removed", demand=d))
    return out


def _weakened(tag: str, after: dict[str, str]) -> bool:
    if not tag.startswith(TIMEOUT_PREFIX):
        return tag not in after
    kept = next((t for t in after if t.startswith(TIMEOUT_PREFIX)), None)
    return kept is None or _seconds(kept) > _seconds(tag)


def _seconds(tag: str) -> float:
    try:
        return float(tag[len(TIMEOUT_PREFIX) :].strip().removesuffix("s"))
    except ValueError:
        return float("inf")


def _notebook_breaches(old: Mapping[str, Any], new: Mapping[str, Any], cell_ids: set[Any]) -> list[Breach]:
    """Policies of the notebook's metadata that no cell of it shows: the notebook-wide list, and
    entries for cells not in this notebook (the open page may hold them)."""
    out: list[Breach] = []
    everywhere = set(_tags(new.get("policy")))
    for tag in _tags(old.get("policy")):
        if tag not in everywhere and (d := _demand(tag, changed=False)) is not None:
            where = f"the notebook's policy for every cell {tag}"
            out.append(Breach(cell="the notebook", policy=tag, where=where, change=f"{tag} would be removed", demand=d))
    old_map, new_map = old.get("cell_policies"), new.get("cell_policies")
    if isinstance(old_map, Mapping):
        for cell_id, tags in old_map.items():
            if cell_id in cell_ids:
                continue  # judged with its cell
            kept = set(_tags(new_map.get(cell_id))) if isinstance(new_map, Mapping) else set()
            for tag in _tags(tags):
                if tag not in kept and (d := _demand(tag, changed=False)) is not None:
                    where = f"the notebook's policy for this cell {tag}"
                    cell = f"the cell with id {cell_id!r}"
                    out.append(Breach(cell=cell, policy=tag, where=where, change=f"{tag} would be removed", demand=d))
    return out


def _tags(value: Any) -> list[str]:
    return [t for t in value if isinstance(t, str)] if isinstance(value, list) else []
