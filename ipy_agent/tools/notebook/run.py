"""NotebookRun: run one cell of the open notebook in this kernel, for the model and the person.

The cell's code runs in the kernel the agent lives in (its variables are the person's), through
IPython's own cell machinery, with its outputs captured; the bridge then writes them and the
execution count into that cell, where the person sees them, and the model gets them rendered
like NotebookRead shows outputs. The front end is never asked to execute the cell: in the
default mode the `%agent` cell is still running, and a front-end execution would queue behind
it while the agent waited for it (docs/live-notebook.md explains the design).

Running code changes the kernel's state, so it asks unless a rule (`NotebookRun`) allows it; the
prompt shows the code as it is now in the notebook and what it can change (run_notes.py: the
names it overwrites with their current summaries, found by parsing). The person's cell policies
(notebook/policy.py) are the tool's own opinion: `agent:never-run` denies and `agent:ask` asks in
every mode, bypassPermissions included. A list of cells runs in order and stops at the first
failure; a failure comes back as its summary (notebook/errors.py), the cell keeping the traceback.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ipy_agent.contract.decision import UNDECIDED, CallDecision
from ipy_agent.contract.tool import PermissionCheck, PermissionPreview, PromptAction, Tool, ToolError
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.history.blocks import ResultPart, ToolResultBlock
from ipy_agent.notebook.naming import cell_label
from ipy_agent.notebook.policy import NEVER_RUN, with_cell_tag
from ipy_agent.notebook.protocol_types import LiveCell, Output, ReadCell
from ipy_agent.notebook.render import OUTPUT_BUDGET_CHARS, render_cells
from ipy_agent.notebook.runlog import CellRun

from .live import bridge_call, cell_policy_of, fetch_cell, live_bridge, live_missing, live_target, named
from .run_notes import cells_label, effect_notes, policy_note
from .run_variables import fingerprint_variables, keep_variables, observe_after, observe_before

__all__ = [
    "DEFAULT_TIMEOUT",
    "MAX_TIMEOUT",
    "NotebookRunInput",
    "NotebookRunResult",
    "NotebookRunTool",
    "NotebookRunsResult",
]

DEFAULT_TIMEOUT = 120.0
MAX_TIMEOUT = 1800.0

DESCRIPTION = """\
Run code cells of the notebook open in JupyterLab ({path!r}) in this kernel, the kernel the \
person's variables live in. Outputs appear in each cell for the person, with its execution \
count, and come back to you: text, the value of the last line, errors told for the fix (the \
cell's line, the frames in the person's code, similar names or the DataFrame's columns), images \
as images (each cell's outputs cut to about {budget:,} characters).

- Use it to run notebook code the person would run: after inserting or editing a cell with \
NotebookEdit, run it to check it. Use Bash for shell commands and scripts outside the notebook; \
Bash runs in a separate process and cannot see the kernel's variables.
- cell_id: the id shown by NotebookRead; or cell_ids: several cells run in that order, stopping at \
the first error (rerun the smallest set NotebookRead marks stale instead of running everything). \
Markdown cells cannot be run.
- Before each run you and the person see what it can change: the names it overwrites with their \
current values, what it may modify in place, modules it imports, how long it took last time.
- The person's cell policies hold: a cell tagged agent:never-run is refused (ask the person to run \
it, or work around it), agent:ask always asks, agent:timeout=S sets its timeout.
- timeout: seconds before a cell is stopped (default: the cell's policy, else {default:g}; at most \
{most:g}); a stopped cell reports what it printed until then. The person can also interrupt.
- The person is asked before each run unless they allowed it. Running changes the kernel's state, so \
do not run cells just to look at them: NotebookRead shows their last outputs, and Variables shows \
the kernel's variables without running anything.
"""


class NotebookRunInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    cell_id: str | None = Field(default=None, description="The code cell to run: its id as shown by NotebookRead.")
    cell_ids: list[str] | None = Field(
        default=None, description="Instead of cell_id: cells to run in this order, stopping at the first error."
    )
    notebook_path: str | None = Field(default=None, description="Omit: the open notebook is the only one that can run.")
    timeout: float | None = Field(
        default=None,
        gt=0,
        le=MAX_TIMEOUT,
        description=f"Seconds before each cell is stopped (default: the cell's policy, else {DEFAULT_TIMEOUT:g}).",
    )

    def ids(self) -> list[str]:
        return list(self.cell_ids) if self.cell_ids else [self.cell_id] if self.cell_id else []


@dataclass(frozen=True, kw_only=True)
class NotebookRunResult:
    cell_id: str
    label: str  # the cell as the person names it: `cell 4 · df = load(...)`
    display: str
    execution_count: int | None
    blocks: list[ResultPart]
    error: str | None
    timed_out: bool
    interrupted: bool
    seconds: float
    output_count: int
    effects: tuple[str, ...] = ()  # what the preview predicted, from the source
    observed: tuple[str, ...] = ()  # what the run was seen to change (notebook/observed.py)
    error_summary: str | None = None

    @property
    def failed(self) -> bool:
        return bool(self.error) or self.timed_out or self.interrupted


@dataclass(frozen=True, kw_only=True)
class NotebookRunsResult:
    """Several cells run in order; `not_run` are those after the first failure."""

    runs: list[NotebookRunResult]
    not_run: list[str]


class NotebookRunTool(Tool[NotebookRunInput, NotebookRunResult | NotebookRunsResult]):
    name = "NotebookRun"
    input_model = NotebookRunInput
    kind = "execute"
    max_result_chars = 100_000

    def description(self, ctx: ToolContext) -> str:
        nb = live_bridge(ctx)
        return DESCRIPTION.format(
            path=nb.display_path if nb is not None else None,
            budget=OUTPUT_BUDGET_CHARS,
            default=DEFAULT_TIMEOUT,
            most=MAX_TIMEOUT,
        )

    def disabled_reason(self, ctx: ToolContext) -> str:
        return live_missing(ctx)

    def _enabled(self, ctx: ToolContext) -> bool:
        nb = live_bridge(ctx)
        return nb is not None and getattr(nb, "shell", None) is not None

    def _destructive(self, inp: NotebookRunInput) -> bool:
        # A rewind puts back the variables a run rebinds; the prompt says what it cannot undo.
        return False

    def _notebook(self, inp: NotebookRunInput, ctx: ToolContext) -> Any:
        nb = live_target(ctx, inp.notebook_path)
        if nb is None:
            other = live_bridge(ctx)
            if other is None:
                raise ToolError(
                    "The open notebook is no longer connected (the page was closed or reloaded); cells "
                    "cannot be run. Ask the person to open the notebook again."
                )
            raise ToolError(
                f"{inp.notebook_path!r} is not the notebook open in JupyterLab ({other.display_path!r}); "
                "only the open notebook's cells can run in this kernel."
            )
        return nb

    async def _cells(self, inp: NotebookRunInput, ctx: ToolContext) -> tuple[Any, list[ReadCell]]:
        if bool(inp.cell_id) == bool(inp.cell_ids):
            raise ToolError("Give either cell_id (one cell) or cell_ids (cells run in order), not both or neither.")
        nb = self._notebook(inp, ctx)
        cells = [await fetch_cell(nb, cell_id) for cell_id in inp.ids()]
        for cell in cells:
            if cell.get("cell_type") != "code":
                raise ToolError(f"{named(cell)} is a {cell.get('cell_type')} cell; only code cells run.")
        return nb, cells

    async def validate_input(self, inp: NotebookRunInput, ctx: ToolContext) -> str | None:
        try:
            await self._cells(inp, ctx)
        except ToolError as e:
            return str(e)
        return None

    async def check_permissions(self, inp: NotebookRunInput, ctx: ToolContext) -> PermissionCheck:
        """The person's cell policies: agent:never-run refuses, agent:ask asks, in every mode."""
        try:
            nb, cells = await self._cells(inp, ctx)
        except ToolError:
            return PermissionCheck()
        asks: list[str] = []
        for cell in cells:
            policy = await cell_policy_of(nb, cell)
            if policy.never_run:
                return PermissionCheck(
                    behavior="deny",
                    message=(
                        f"{named(cell)} must not be run by the agent ({policy.where}): "
                        "the person set this, "
                        "often because the cell is slow or has effects outside the notebook. Do not run its code "
                        "another way; ask the person to run it, or go on without it."
                    ),
                )
            if policy.ask:
                asks.append(f"{cell_label(cell)} ({policy.where})")
        if asks:
            return PermissionCheck(
                behavior="ask", always=True, message=f"the person asked to approve every run of {', '.join(asks)}"
            )
        return PermissionCheck()

    async def preview(self, inp: NotebookRunInput, ctx: ToolContext) -> PermissionPreview | None:
        try:
            nb, cells = await self._cells(inp, ctx)
        except ToolError:
            return None
        notes: list[str] = []
        for cell in cells:
            prefix = f"{cell_label(cell).split(' · ')[0]}: " if len(cells) > 1 else ""  # the title has the lines
            notes.extend(prefix + line for line in effect_notes(nb, cell))
            policy = policy_note(await cell_policy_of(nb, cell))
            if policy:
                notes.append(prefix + policy)
        actions = (_never_run_action(nb, cells[0]),) if len(cells) == 1 else ()
        return PermissionPreview(
            title=f"Run in this kernel, from {nb.display_path}: {cells_label(cells)}",
            command="\n\n".join(c.get("source") or "" for c in cells),
            description=(
                "Runs in the notebook's kernel: it can change the person's variables. %agent_rewind puts back "
                "the variables its code rebinds (those that can be pickled; one you change afterwards is kept), "
                "not what it does outside the kernel."
            ),
            notes=tuple(notes),
            actions=actions,
        )

    async def call(
        self, inp: NotebookRunInput, ctx: ToolContext, decision: CallDecision = UNDECIDED
    ) -> NotebookRunResult | NotebookRunsResult:
        nb, cells = await self._cells(inp, ctx)
        runs: list[NotebookRunResult] = []
        for cell in cells:
            policy = await cell_policy_of(nb, cell)
            if policy.never_run:  # set while the prompt was open
                raise ToolError(f"{named(cell)} must not be run by the agent ({policy.where}).")
            timeout = inp.timeout or policy.timeout or DEFAULT_TIMEOUT
            run = await self._run_one(nb, cell, min(timeout, MAX_TIMEOUT), ctx)
            runs.append(run)
            if run.failed:
                break
        if inp.cell_ids is None:
            return runs[0]
        return NotebookRunsResult(runs=runs, not_run=[cell_label(c, with_id=True) for c in cells[len(runs) :]])

    async def _run_one(self, nb: Any, cell: ReadCell, timeout: float, ctx: ToolContext) -> NotebookRunResult:
        code = cell.get("source") or ""
        effects = tuple(effect_notes(nb, cell))
        await nb.scroll_to(cell["id"])
        await bridge_call(nb.request("set_outputs", cell_id=cell["id"], outputs=[], execution_count=None))
        cell_id = cell["id"]

        def show(outputs: list[Output]) -> None:  # from a thread, while the code runs
            nb.post("set_outputs", cell_id=cell_id, outputs=outputs, execution_count=None)

        keep_variables(ctx, nb, cell, code)
        before = observe_before(nb)
        try:
            outcome = await nb.run_code(code, timeout=timeout, on_progress=show if hasattr(nb, "post") else None)
        finally:
            fingerprint_variables(ctx, nb, code)
            blind = any(line.startswith("effects not visible") for line in effects)
            observed = observe_after(ctx, nb, cell, code, before, preview_blind=blind)
        await bridge_call(
            nb.request(
                "set_outputs", cell_id=cell["id"], outputs=outcome.outputs, execution_count=outcome.execution_count
            )
        )
        size = sum(len(json.dumps(o)) for o in outcome.outputs)
        runs = getattr(nb, "runs", None)
        if runs is not None:
            runs.record(
                CellRun(
                    cell_id=cell["id"],
                    source=code,
                    execution_count=outcome.execution_count,
                    seconds=outcome.seconds,
                    error=outcome.error,
                    output_count=len(outcome.outputs),
                    output_chars=size,
                )
            )
        # With a summary, the model reads it instead of IPython's traceback; the cell keeps the traceback.
        shown_outputs = [o for o in outcome.outputs if not (outcome.summary and o.get("output_type") == "error")]
        shown = {"id": cell["id"], "cell_type": "code", "source": "", "outputs": shown_outputs}
        rendered = render_cells([shown], output_budget=OUTPUT_BUDGET_CHARS)
        outputs_text: list[ResultPart] = [b for b in rendered.blocks if b["type"] == "image"]
        text = "".join(b["text"] for b in rendered.blocks if b["type"] == "text")
        body = text.split("<outputs>\n", 1)[1].rsplit("</outputs>", 1)[0] if "<outputs>" in text else ""
        return NotebookRunResult(
            cell_id=cell["id"],
            label=cell_label(cell),
            display=str(nb.display_path),
            execution_count=outcome.execution_count,
            blocks=[{"type": "text", "text": body}, *outputs_text] if body else outputs_text,
            error=outcome.error,
            timed_out=outcome.timed_out,
            interrupted=outcome.interrupted,
            seconds=outcome.seconds,
            output_count=len(outcome.outputs),
            effects=effects,
            observed=observed,
            error_summary=outcome.summary,
        )

    def map_result(self, output: NotebookRunResult | NotebookRunsResult, tool_use_id: str) -> ToolResultBlock:
        runs = output.runs if isinstance(output, NotebookRunsResult) else [output]
        blocks: list[ResultPart] = []
        for o in runs:
            blocks.extend(_one_result(o))
        if isinstance(output, NotebookRunsResult) and output.not_run:
            blocks.append({"type": "text", "text": f"Not run, after the failure above: {'; '.join(output.not_run)}.\n"})
        block: ToolResultBlock = {"type": "tool_result", "tool_use_id": tool_use_id, "content": blocks}
        if any(o.failed for o in runs):
            block["is_error"] = True
        return block

    def summarize_use(self, inp: NotebookRunInput) -> str:
        ids = inp.ids()
        return f"cell {ids[0]}" if len(ids) == 1 else f"cells {', '.join(ids)}"

    async def describe_use(self, inp: NotebookRunInput, ctx: ToolContext) -> str | None:
        _, cells = await self._cells(inp, ctx)
        return cells_label(cells)

    def summarize_result(self, output: NotebookRunResult | NotebookRunsResult) -> str:
        if isinstance(output, NotebookRunsResult):
            last = output.runs[-1]
            done = f"{len(output.runs) - (1 if last.failed else 0)} of {len(output.runs) + len(output.not_run)} ran"
            return done if not last.failed else f"{done}; {last.label}: {_one_line(last)}"
        return _one_line(output)

    def detail_for_person(self, inp: NotebookRunInput, output: NotebookRunResult | NotebookRunsResult) -> str:
        runs: list[NotebookRunResult] = output.runs if isinstance(output, NotebookRunsResult) else [output]
        parts: list[str] = []
        for o in runs:
            parts.append(f"{o.label}: " + "; ".join(o.effects) if o.effects else "")
            parts.extend(o.observed)
            parts.append(o.error_summary or "")
            parts.append("".join(b["text"] for b in o.blocks if b["type"] == "text"))
        return "\n".join(p for p in parts if p)[:2000]


def _never_run_action(nb: Any, cell: LiveCell) -> PromptAction:
    """The prompt's "Never run this cell": the person's policy, kept in the notebook's metadata."""
    cell_id = cell["id"]

    async def apply() -> None:
        await bridge_call(nb.set_agent_metadata(with_cell_tag(await nb.agent_metadata(), cell_id, NEVER_RUN)))

    return PromptAction(
        label="Never run this cell",
        message=(
            f"The person marked {cell_label(cell, with_id=True)} agent:never-run: the agent must not run it, now or "
            "later. Do not run its code another way; ask the person to run it, or go on without it."
        ),
        apply=apply,
    )


def _one_line(o: NotebookRunResult) -> str:
    if o.timed_out:
        return f"[{o.execution_count}] stopped after {o.seconds:.1f} s (timeout)"
    if o.interrupted:
        return f"[{o.execution_count}] interrupted"
    if o.error:
        return f"[{o.execution_count}] {o.error.splitlines()[0][:80]}"
    missed = (
        "; changed a name the preview did not predict"
        if any(line.startswith("not predicted") for line in o.observed)
        else ""
    )
    return (
        f"[{o.execution_count}] ran in {o.seconds:.1f} s, {o.output_count} output{'s' if o.output_count != 1 else ''}"
        + missed
    )


def _one_result(o: NotebookRunResult) -> list[ResultPart]:
    name = f"{o.label[:1].upper()}{o.label[1:]} (id {o.cell_id!r})"  # as live.named() says it
    if o.timed_out:
        head = f"{name} was stopped after {o.seconds:.1f} s (timeout); its outputs until then:"
    elif o.interrupted:
        head = (
            f"{name} was interrupted by the person after {o.seconds:.1f} s; its outputs until then. "
            "Do not run it again unless the person asks:"
        )
    elif o.error:
        head = f"{name} ran (execution count {o.execution_count}) and raised {o.error.splitlines()[0]}."
    else:
        head = f"{name} ran (execution count {o.execution_count}) in {o.seconds:.1f} s."
    head += "" if o.output_count else " It produced no output."
    if o.effects:
        head += "\nWhat it could change: " + "; ".join(o.effects) + "."
    if o.observed:
        head += "\nWhat it changed, " + "; ".join(o.observed) + "."
    if o.error_summary:
        head += "\n" + o.error_summary
    return [{"type": "text", "text": head + "\n"}, *o.blocks]
