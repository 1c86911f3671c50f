"""NotebookEdit: replace, insert or delete one cell of a Jupyter notebook file on disk.

A notebook is JSON with rules (nbformat); editing it as text easily leaves it unopenable, so
this tool changes the parsed notebook and writes it back the way Jupyter does (nbformat's
writer: indent 1, sorted keys, sources split into lines), refusing to write anything the edit
made invalid by nbformat's schema. When the notebook is the one open in JupyterLab and the
ipy_agent extension is connected, the edit goes to the live notebook instead
(`notebook_edit_live`): the model learns one tool, and the person's unsaved edits are respected.

Decisions:
- Cells are named by id, or `cell-N` for the cell at 0-based index N (what Read shows for cells
  without ids). A real id always wins over the index form.
- Replacing a code cell's source clears its outputs and execution count: they describe code
  that no longer exists. The approval prompt and the result both say so.
- New cells get nbformat 4.5 ids. A notebook older than 4.5 has no cell ids and would fail
  validation with one, so an insert upgrades it (`nbformat_minor` becomes 5, cells without an
  id get one) and says so. An id a cell already has is kept: nbformat's converter would replace
  every id, and the ids the model has seen would stop working. Replace and delete leave the
  format version alone. nbformat 3 and older notebooks are refused rather than converted.
- Cell ids are the ones in the file: nothing here repairs (renames) a duplicate or missing id,
  which nbformat's `validate` and `reads` would do silently. Validation covers what an edit can
  change (the top level, the new cell, cell ids) with nbformat's warnings silenced (they would
  print into the person's cell output); a problem the notebook already had is not blamed on the
  edit: the edit goes ahead and the result says so. A problem the edit would introduce stops it.
- The file is parsed once and only the edited cell is written anew (`plan_file_edit`, nbfile.py):
  every other byte stays as it was, and a notebook of 150,000 cells edits in a few times its size.
"""

from __future__ import annotations

import codecs
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal, NoReturn

from pydantic import BaseModel, ConfigDict, Field

from ipy_agent.contract.decision import UNDECIDED, CallDecision
from ipy_agent.contract.tool import PermissionCheck, PermissionPreview, ToolError
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.history.blocks import ToolResultBlock
from ipy_agent.notebook.naming import cell_label
from ipy_agent.tools.shared.cell_policies import EVERY_TIME
from ipy_agent.tools.shared.edit_plan import FileEditingTool, Plan, read_existing, require_fresh

from .edit_live import apply_live, plan_live, preview_live
from .live import edit_verdict, live_target
from .nbfile import NotebookText, load_notebook, new_cell, quiet, schema_problems, upgrade_keeping_ids

__all__ = ["NotebookEditInput", "NotebookEditResult", "NotebookEditTool"]

DESCRIPTION = """\
Change one cell of a Jupyter notebook (.ipynb file): replace its source, insert a new cell, or \
delete a cell. Use it for notebooks instead of Edit or Write: it edits the notebook through \
nbformat, so the file stays a valid notebook, and it clears outputs that no longer match the \
code. For any other file use Edit or Write.

- Read the notebook first, in this conversation. The runtime refuses to edit a notebook you \
have not read, or one that changed since you read it (then Read it again), so you never edit \
cells you have not seen.
- cell_id: a cell id as shown by Read, or cell-N for the cell at 0-based index N.
- edit_mode "replace" (default): new_source becomes the cell's source. For a code cell its \
outputs and execution count are cleared, since they belong to the old code. Give cell_type to \
change the cell's type as well.
- edit_mode "insert": a new cell of cell_type (required) with new_source goes right after \
cell_id; without cell_id it becomes the first cell.
- edit_mode "delete": removes the cell cell_id; new_source is ignored.
- This runs nothing. To run a cell of the open notebook afterwards, use NotebookRun.
"""

WHERE_NOTE = """
- Where the edit lands: the notebook open in JupyterLab with the ipy_agent extension (NotebookRead \
is offered then, and names it) is edited live: the person sees the change at once, and their \
unsaved changes are kept. Read its cells with NotebookRead (not Read, which shows the file on disk, \
possibly older): edits of its cells are checked against what NotebookRead showed, and refused for \
a cell the person changed since. Any other notebook is changed on disk; if it is open in \
JupyterLab, it shows the change after it is reloaded from disk.
"""
# One description whether or not a page is connected, and whichever notebook it has open: a
# definition that changed with them would make the prompt cache write every tool again.

DESCRIBE_MAX_BYTES = 5_000_000  # larger notebooks keep the id in the row's summary
EditMode = Literal["replace", "insert", "delete"]
CellType = Literal["code", "markdown"]


class NotebookEditInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    notebook_path: str = Field(description="The .ipynb file: an absolute path, or relative to the working directory.")
    cell_id: str | None = Field(
        default=None,
        description="The cell to replace or delete, or to insert after: its id, or cell-N for 0-based index N. "
        "Omit it with insert to add the new cell first.",
    )
    new_source: str = Field(default="", description="The new source of the cell (ignored for delete).")
    cell_type: CellType | None = Field(
        default=None, description="code or markdown. Required for insert; with replace, changes the cell's type."
    )
    edit_mode: EditMode = Field(default="replace", description="replace (default), insert, or delete.")


@dataclass(frozen=True, kw_only=True)
class NotebookEditResult:
    path: str
    display: str
    edit_mode: EditMode
    cell_id: str  # the edited, inserted or deleted cell (its id, or cell-N without ids)
    cell_type: str
    index: int
    after: str | None  # insert: the cell it follows (None: inserted first)
    total_cells: int | None  # None: not counted (a replace in the live notebook does not list it)
    outputs_cleared: bool
    upgraded: bool
    added: int
    removed: int
    diff: str
    problems: tuple[str, ...] = ()  # what nbformat finds wrong with the notebook, before and after
    live: bool = False  # edited in the open notebook's live model, not the file
    label: str = ""  # the open notebook's cell as the person names it (`cell 4 · x = 41`), after the edit


def _as_lines(source: str) -> str:
    return source if not source or source.endswith("\n") else source + "\n"


class NotebookEditTool(FileEditingTool[NotebookEditInput, NotebookEditResult]):
    name = "NotebookEdit"
    input_model = NotebookEditInput
    make_parents = False

    def description(self, ctx: ToolContext) -> str:
        return DESCRIPTION + WHERE_NOTE

    # --- the live notebook, when the target is the one open in the front end ------------------
    async def validate_input(self, inp: NotebookEditInput, ctx: ToolContext) -> str | None:
        nb = live_target(ctx, inp.notebook_path)
        if nb is None:
            return await super().validate_input(inp, ctx)
        try:
            await plan_live(inp, ctx, nb)
        except ToolError as e:
            return str(e)
        return None

    async def check_permissions(self, inp: NotebookEditInput, ctx: ToolContext) -> PermissionCheck:
        """The person's cell policies, in every mode: on the file through `FileEditingTool`, in the
        open notebook here (a read-only cell is refused, lifting a policy asks)."""
        nb = live_target(ctx, inp.notebook_path)
        if nb is None:
            return await super().check_permissions(inp, ctx)
        verdict = await edit_verdict(nb, inp)
        if verdict.demand == "refuse":
            return PermissionCheck(behavior="deny", message=verdict.refusal(nb.display_path))
        check = await super().check_permissions(inp, ctx)
        if verdict.demand == "ask":
            question = f"{verdict.question(nb.display_path)}, {EVERY_TIME}"
            message = f"{check.message}; {question}" if check.behavior == "ask" and check.message else question
            return PermissionCheck(behavior="ask", always=True, message=message, writes=check.writes)
        return check

    def _policy_check(self, inp: NotebookEditInput, ctx: ToolContext) -> PermissionCheck | None:
        # The open notebook's policies are judged on the page (check_permissions), not on the file.
        return None if live_target(ctx, inp.notebook_path) is not None else super()._policy_check(inp, ctx)

    async def preview(self, inp: NotebookEditInput, ctx: ToolContext) -> PermissionPreview | None:
        nb = live_target(ctx, inp.notebook_path)
        if nb is None:
            return await super().preview(inp, ctx)
        # A change that lifts a policy is asked in the prompt alone: not staged in the cell, where
        # an earlier "Accept all" of this run would take it without asking.
        staged = (await edit_verdict(nb, inp)).demand is None
        return await preview_live(inp, ctx, nb, staged=staged)

    async def call(
        self, inp: NotebookEditInput, ctx: ToolContext, decision: CallDecision = UNDECIDED
    ) -> NotebookEditResult:
        nb = live_target(ctx, inp.notebook_path)
        if nb is None:
            return await super().call(inp, ctx, decision)
        return await apply_live(inp, ctx, decision, nb, NotebookEditResult)

    def _target(self, inp: NotebookEditInput) -> str:
        return inp.notebook_path

    def summarize_use(self, inp: NotebookEditInput) -> str:
        where = f" {inp.cell_id}" if inp.cell_id else (" (first)" if inp.edit_mode == "insert" else "")
        return f"{inp.edit_mode}{where} in {inp.notebook_path}"

    async def describe_use(self, inp: NotebookEditInput, ctx: ToolContext) -> str | None:
        """The open notebook's cell as the person names it: `replace cell 4 · x = 41 in a.ipynb`."""
        nb = live_target(ctx, inp.notebook_path)
        if nb is None:
            return self._describe_file_use(inp, ctx)
        plan = await plan_live(inp, ctx, nb)
        if plan.edit_mode == "insert":
            where = f"after {cell_label(plan.cell)}" if plan.cell else "at the top"
            return f"insert a {plan.cell_type} cell {where} in {nb.display_path}"
        return f"{plan.edit_mode} {cell_label(plan.cell)} in {nb.display_path}"

    def _describe_file_use(self, inp: NotebookEditInput, ctx: ToolContext) -> str | None:
        """A notebook file's cell by its position from 1 and first line, as Jupyter would show it."""
        path, display = self._paths(inp.notebook_path, ctx)
        if not path.is_file() or path.stat().st_size > DESCRIBE_MAX_BYTES:  # a summary is not worth a second parse
            return None
        raw = read_existing(path, what="Notebook")
        if raw is None:
            return None
        e = plan_file_edit(inp, raw, display)
        if inp.edit_mode == "insert":
            where = f"after {cell_label(e.index - 1)}" if e.after else "at the top"
            return f"insert a {e.cell_type} cell {where} in {display}"
        return f"{inp.edit_mode} {cell_label(e.index, e.old_source)} in {display}"

    def _preview_title(self, plan: Plan) -> str:
        r = plan.extra
        if r["edit_mode"] == "insert":  # the new id is drawn anew at write time; don't show one
            where = f"after cell {r['after']}" if r["after"] else "at the top"
            return f"Insert {r['cell_type']} cell {where} in {plan.display}"
        change = (
            f" ({r['old_type']} → {r['cell_type']})"
            if r["edit_mode"] == "replace" and r.get("old_type") and r["old_type"] != r["cell_type"]
            else ""
        )
        return f"{r['edit_mode'].capitalize()} cell {r['cell_id']}{change} in {plan.display}"

    def _plan(self, inp: NotebookEditInput, ctx: ToolContext) -> Plan:
        path, display = self._paths(inp.notebook_path, ctx)
        if path.suffix.lower() != ".ipynb":
            raise ToolError(f"{display!r} is not a .ipynb notebook. Use Edit or Write for other files.")
        if inp.edit_mode == "insert" and inp.cell_type is None:
            raise ToolError("cell_type is required with edit_mode 'insert': give 'code' or 'markdown'.")
        if inp.edit_mode != "insert" and not inp.cell_id:
            raise ToolError(
                f"cell_id is required with edit_mode {inp.edit_mode!r}: give the id shown by Read, or cell-N."
            )
        raw = read_existing(path, what="Notebook")
        if raw is None:
            raise ToolError(
                f"Notebook {str(path)!r} does not exist. Check the path with Glob; to create a notebook, "
                "Write an nbformat 4 JSON file first."
            )
        require_fresh(ctx, path, raw, what="Notebook")
        e = plan_file_edit(inp, raw, display)
        return self._plan_of(
            inp,
            path=path,
            display=display,
            raw_text=e.text,
            bom=e.bom,
            old=(e.old_source, e.old_type),
            new=(e.new_source, e.cell_type),
            label=e.label,
            index=e.index,
            after=e.after,
            total=e.total,
            cleared=e.cleared,
            upgraded=e.upgraded,
            notes=e.notes,
            problems=e.problems,
        )

    def _plan_of(
        self,
        inp: NotebookEditInput,
        *,
        path: Any,
        display: str,
        raw_text: str,
        bom: bool,
        old: tuple[str, str | None],
        new: tuple[str, str],
        label: str,
        index: int,
        after: str | None,
        total: int,
        cleared: bool,
        upgraded: bool,
        notes: list[str],
        problems: list[str],
    ) -> Plan:
        (old_source, old_type), (new_source, cell_type) = old, new
        old_text, new_text = _as_lines(old_source), _as_lines(new_source)
        if inp.edit_mode == "replace" and old_type and old_type != cell_type:
            # A type change shows in the diff even when the source stays the same.
            old_text, new_text = f"[{old_type} cell]\n{old_text}", f"[{cell_type} cell]\n{new_text}"
        diff_label = f"{display} [new cell]" if inp.edit_mode == "insert" else f"{display} [cell {label}]"
        return Plan(
            # Cell sources rarely end in a newline; diff them as lines so the prompt is not
            # littered with "No newline at end of file" markers.
            path=path,
            display=display,
            old_text=old_text,
            new_text=new_text,
            new_raw=(codecs.BOM_UTF8 if bom else b"") + raw_text.encode("utf-8"),
            created=False,
            diff_label=diff_label,
            notes=tuple(notes),
            extra={
                "edit_mode": inp.edit_mode,
                "cell_id": label,
                "cell_type": cell_type,
                "old_type": old_type,
                "index": index,
                "after": after,
                "total": total,
                "cleared": cleared,
                "upgraded": upgraded,
                "problems": tuple(problems),
            },
        )

    def _result(self, plan: Plan, ctx: ToolContext) -> NotebookEditResult:
        r, d = plan.extra, plan.diff
        return NotebookEditResult(
            path=str(plan.path),
            display=plan.display,
            edit_mode=r["edit_mode"],
            cell_id=r["cell_id"],
            cell_type=r["cell_type"],
            index=r["index"],
            after=r["after"],
            total_cells=r["total"],
            outputs_cleared=r["cleared"],
            upgraded=r["upgraded"],
            added=d.added,
            removed=d.removed,
            diff=d.text,
            problems=r["problems"],
        )

    def map_result(self, output: NotebookEditResult, tool_use_id: str) -> ToolResultBlock:
        o = output
        if o.live and o.label:
            text = _live_text(o)
        elif o.edit_mode == "insert":
            where = f"after cell {o.after!r}" if o.after else "as the first cell"
            text = (
                f"Inserted a new {o.cell_type} cell with id {o.cell_id!r} {where} in {o.path} "
                f"(it is now cell-{o.index}; the notebook has {o.total_cells} cells)."
            )
            if o.upgraded:
                text += (
                    " The notebook was upgraded to nbformat 4.5, so every cell now has an id (ids cells already "
                    "had are kept): Read it again before using ids of cells that had none."
                )
        elif o.edit_mode == "delete":
            text = f"Deleted cell {o.cell_id!r} (was cell-{o.index}) from {o.path}; {o.total_cells} cells remain."
        else:
            text = f"Replaced the source of {o.cell_type} cell {o.cell_id!r} (cell-{o.index}) in {o.path}."
            if o.outputs_cleared:
                text += " Its outputs and execution count were cleared, since they belonged to the old code."
        if o.live:
            text += (
                " (This edited the live notebook open in JupyterLab; the file on disk changes when the person saves;"
                " %agent_rewind can put it back.)"
            )
        if o.problems:
            text += (
                " Note: the notebook already had problems nbformat reports, which this edit left as they were: "
                + "; ".join(o.problems[:3])
                + "."
            )
        return {"type": "tool_result", "tool_use_id": tool_use_id, "content": text}

    def summarize_result(self, output: NotebookEditResult) -> str:
        o = output
        verb = {"replace": "replaced", "insert": f"inserted {o.cell_type}", "delete": "deleted"}[o.edit_mode]
        extra = " (outputs cleared)" if o.outputs_cleared else ""
        where = " (live)" if o.live else ""
        return f"Edited {o.display}{where}: {verb} {o.label or f'cell {o.cell_id}'}{extra}"


def _live_text(o: NotebookEditResult) -> str:
    """What the model reads after an edit of the open notebook: the cell as the person names it
    (1-based position and first line), with its id for the next call."""
    cell = f"{o.label} (id {o.cell_id!r})"
    if o.edit_mode == "insert":
        where = f"after the cell with id {o.after!r}" if o.after else "as the first cell"
        return f"Inserted a new {o.cell_type} cell {where}: it is {cell}; the notebook has {o.total_cells} cells."
    if o.edit_mode == "delete":
        return f"Deleted {cell} from {o.display}; {o.total_cells} cells remain."
    text = f"Replaced the source of {o.cell_type} {cell} in {o.display}."
    if o.outputs_cleared:
        text += " Its outputs and execution count were cleared, since they belonged to the old code."
    return text


# --- the change to a notebook file --------------------------------------------------------
# NotebookEdit on a notebook file: the change planned as text (see nbfile.py for how).
#
# `plan_file_edit` turns the tool's input and the file's bytes into a `FileEdit`: the text to
# write and what the prompt and the result say about it. Every edit but one splices one cell into
# the file as it is (`NotebookText`); an insert into a notebook older than nbformat 4.5 gives
# every cell an id, so nbformat rewrites that notebook whole.

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


def plan_file_edit(inp: NotebookEditInput, raw: bytes, display: str) -> FileEdit:
    """The edit `inp` (NotebookEdit's input) makes to a notebook file holding `raw`."""
    doc = NotebookText(raw, display)
    minor = doc.top.get("nbformat_minor")
    if inp.edit_mode == "insert" and not (isinstance(minor, int) and minor >= 5):
        del doc
        return _upgrading(inp, raw, display)
    return _splice(inp, doc, display)


def _splice(inp: NotebookEditInput, doc: NotebookText, display: str) -> FileEdit:
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


def _upgrading(inp: NotebookEditInput, raw: bytes, display: str) -> FileEdit:
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
