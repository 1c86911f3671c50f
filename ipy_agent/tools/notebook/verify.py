"""NotebookVerify: does the notebook reproduce, run top to bottom in a new kernel?

The open notebook's cells (or a notebook file's) run in order in a fresh kernel of the same
kernelspec, started in the notebook's directory; the person's kernel and cells are not touched.
The report (notebook/verify.py) names the cells that raise, the outputs that differ from what the
notebook shows, the variables that differ from the live kernel's, the "hidden state" (names the
live kernel holds that no cell defines) and the cells the live kernel ran out of order.

It runs the person's code (in another kernel, but with the same files, network and credentials),
so it asks like NotebookRun: a rule (`NotebookVerify`) or the mode allows it, else the person is
asked. Cell policies hold: `agent:never-run` cells are skipped and named, and a notebook with an
`agent:ask` cell asks in every mode. The model gets the full report; the person a compact table.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ipy_agent.contract.decision import UNDECIDED, CallDecision
from ipy_agent.contract.tool import PermissionCheck, PermissionPreview, Tool, ToolError
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.history.blocks import ToolResultBlock
from ipy_agent.notebook.policy import cell_policy
from ipy_agent.notebook.verify import VerifyCell, VerifyReport, compare, run_fresh

from .live import bridge_call, live_bridge, live_target

__all__ = [
    "NotebookVerifyInput",
    "NotebookVerifyResult",
    "NotebookVerifyTool",
    "VerifyTarget",
    "file_target",
    "open_notebook_target",
    "report_table",
    "report_text",
    "verify_target",
]

DEFAULT_TIMEOUT = 120.0
MAX_TIMEOUT = 1800.0

DESCRIPTION = """\
Check that the notebook reproduces: run its code cells top to bottom in a NEW kernel (same \
kernelspec, the notebook's directory), without touching the person's kernel or cells, and report \
what differs from what the person has: cells that raise, cells whose outputs differ from the \
notebook's (a short diff), variables whose values differ from this kernel's, "hidden state" \
(names this kernel holds that no cell defines: a deleted cell, a value typed by hand) and cells \
run out of order here.

- Use it before you say a notebook is done, after editing or running its cells. Fix what does \
not reproduce (add the missing cell, reorder, rerun), or tell the person what it is and why.
- It runs every code cell, so it can take as long as Run All; agent:never-run cells are skipped \
and named, and so are the cells of ipy_agent's magics (%agent, %agent_verify...): what the agent \
left in this kernel without a cell shows as hidden state. The person is asked unless a rule allows it.
- notebook_path: omit for the open notebook ({path!r}); a notebook file compares its saved outputs \
only. timeout: seconds per cell (default {default:g}).
"""


class NotebookVerifyInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    notebook_path: str | None = Field(default=None, description="Omit for the open notebook; or a notebook file.")
    timeout: float | None = Field(
        default=None, gt=0, le=MAX_TIMEOUT, description=f"Seconds per cell (default {DEFAULT_TIMEOUT:g})."
    )


@dataclass(frozen=True, kw_only=True)
class NotebookVerifyResult:
    display: str
    report: VerifyReport


@dataclass(frozen=True, kw_only=True)
class VerifyTarget:
    display: str
    directory: Path
    cells: list[VerifyCell]
    kernel_name: str | None
    live: Any  # the bridge when the notebook is the open one (its kernel's variables compare), else None


class NotebookVerifyTool(Tool[NotebookVerifyInput, NotebookVerifyResult]):
    name = "NotebookVerify"
    input_model = NotebookVerifyInput
    kind = "execute"
    max_result_chars = 60_000

    def description(self, ctx: ToolContext) -> str:
        nb = live_bridge(ctx)
        return DESCRIPTION.format(path=nb.display_path if nb is not None else None, default=DEFAULT_TIMEOUT)

    def disabled_reason(self, ctx: ToolContext) -> str:
        return "needs a Jupyter kernel: this is not one (plain Python or terminal IPython)"

    def _enabled(self, ctx: ToolContext) -> bool:
        return ctx.notebook is not None and getattr(ctx.notebook, "shell", None) is not None

    def _destructive(self, inp: NotebookVerifyInput) -> bool:
        return False

    async def _target(self, inp: NotebookVerifyInput, ctx: ToolContext) -> VerifyTarget:
        nb = live_target(ctx, inp.notebook_path)
        if nb is not None:
            return await open_notebook_target(nb, ctx.cwd)
        if inp.notebook_path is None:
            raise ToolError("No notebook is open in JupyterLab here; give notebook_path, a notebook file.")
        return file_target(ctx.resolve(inp.notebook_path), inp.notebook_path)

    async def validate_input(self, inp: NotebookVerifyInput, ctx: ToolContext) -> str | None:
        try:
            await self._target(inp, ctx)
        except ToolError as e:
            return str(e)
        return None

    async def check_permissions(self, inp: NotebookVerifyInput, ctx: ToolContext) -> PermissionCheck:
        """agent:ask cells ask in every mode (never-run cells are skipped, not refused)."""
        try:
            target = await self._target(inp, ctx)
        except ToolError:
            return PermissionCheck()
        asks = [c.label for c in target.cells if c.asks and not c.never_run and c.cell_type == "code"]
        if asks:
            return PermissionCheck(
                behavior="ask",
                always=True,
                message=f"the person asked to approve every run of {', '.join(asks)}, which this runs",
            )
        return PermissionCheck()

    async def preview(self, inp: NotebookVerifyInput, ctx: ToolContext) -> PermissionPreview | None:
        try:
            target = await self._target(inp, ctx)
        except ToolError:
            return None
        code = [c for c in target.cells if c.cell_type == "code" and c.source.strip()]
        skipped = [c.label for c in code if c.never_run]
        agent = [c.label for c in code if c.agent_magic and not c.never_run]
        notes = [f"Skipped (agent:never-run): {'; '.join(skipped)}"] if skipped else []
        notes += [f"Not rerun (ipy_agent's magics): {'; '.join(agent)}"] if agent else []
        runs = [c for c in code if not c.never_run and not c.agent_magic]
        return PermissionPreview(
            title=f"Run {target.display} top to bottom in a new kernel ({len(runs)} code cells)",
            command="\n\n".join(c.source for c in runs),
            description=(
                "Runs every code cell in a new kernel started in the notebook's directory; this kernel and "
                "the notebook's cells are not touched, but the code can reach files, the network and "
                "anything else the person's code can."
            ),
            notes=tuple(notes),
        )

    async def call(
        self, inp: NotebookVerifyInput, ctx: ToolContext, decision: CallDecision = UNDECIDED
    ) -> NotebookVerifyResult:
        target = await self._target(inp, ctx)
        return NotebookVerifyResult(display=target.display, report=await verify_target(target, inp.timeout))

    def map_result(self, output: NotebookVerifyResult, tool_use_id: str) -> ToolResultBlock:
        return {
            "type": "tool_result",
            "tool_use_id": tool_use_id,
            "content": report_text(output.display, output.report),
        }

    def summarize_use(self, inp: NotebookVerifyInput) -> str:
        return inp.notebook_path or "the open notebook"

    def summarize_result(self, output: NotebookVerifyResult) -> str:
        return output.report.verdict

    def detail_for_person(self, inp: NotebookVerifyInput, output: NotebookVerifyResult) -> str:
        return report_table(output.report)


async def open_notebook_target(nb: Any, cwd: Path) -> VerifyTarget:
    """The open notebook's cells as the page has them now, compared with this kernel (`nb`: the bridge)."""
    cells = await bridge_call(nb.read_cells())
    found = await bridge_call(nb.agent_metadata())
    meta = found if isinstance(found, dict) else {}
    path = Path(nb.path)
    return VerifyTarget(
        display=str(nb.display_path),
        directory=path.parent if path.parent.is_dir() else cwd,
        cells=[
            VerifyCell(
                cell_id=c["id"],
                index=c.get("index", i),
                cell_type=c.get("cell_type") or "code",
                source=c.get("source") or "",
                outputs=tuple(c.get("outputs") or ()),
                execution_count=c.get("execution_count"),
                never_run=cell_policy(c, meta).never_run,
                asks=cell_policy(c, meta).ask,
            )
            for i, c in enumerate(cells)
        ],
        kernel_name=_kernel_name(path),
        live=nb,
    )


async def verify_target(target: VerifyTarget, timeout: float | None) -> VerifyReport:
    fresh = await run_fresh(
        target.cells, cwd=target.directory, kernel_name=target.kernel_name, timeout=timeout or DEFAULT_TIMEOUT
    )
    live = target.live
    live_vars = live.variables() if live is not None and getattr(live, "shell", None) is not None else None
    runs = getattr(live, "runs", None) if live is not None else None
    return compare(target.cells, fresh, live_variables=live_vars, runs=runs)


def _kernel_name(path: Path) -> str | None:
    """The kernelspec the notebook's file names (None: no file, or none named)."""
    import json

    try:
        meta = json.loads(path.read_text(encoding="utf-8")).get("metadata") or {}
    except (OSError, ValueError, AttributeError):
        return None
    spec = meta.get("kernelspec") if isinstance(meta, dict) else None
    name = spec.get("name") if isinstance(spec, dict) else None
    return name if isinstance(name, str) and name else None


def file_target(path: Path, given: str) -> VerifyTarget:
    """A notebook file's cells and saved outputs (the kernel's variables are not compared)."""
    import nbformat

    try:
        nb = nbformat.read(str(path), as_version=4)
    except (OSError, ValueError) as e:
        raise ToolError(f"Cannot read the notebook {given!r}: {e}") from None
    meta = nb.metadata.get("ipy_agent") or {}
    cells = []
    for i, c in enumerate(nb.cells):
        tags = list((c.get("metadata") or {}).get("tags") or [])
        policy = cell_policy({"id": c.get("id"), "tags": tags}, meta if isinstance(meta, dict) else {})
        cells.append(
            VerifyCell(
                cell_id=str(c.get("id") or f"cell-{i}"),
                index=i,
                cell_type=c.cell_type,
                source=c.source,
                outputs=tuple(c.get("outputs") or ()),
                execution_count=c.get("execution_count"),
                never_run=policy.never_run,
                asks=policy.ask,
            )
        )
    return VerifyTarget(display=given, directory=path.parent, cells=cells, kernel_name=_kernel_name(path), live=None)


def report_text(display: str, r: VerifyReport) -> str:
    """The full report, for the model."""
    lines = [
        f"NotebookVerify ran {display} top to bottom in a new kernel ({r.kernel}): {r.ran} code cell(s) "
        f"in {r.seconds:.1f} s. Verdict: {r.verdict}."
    ]
    if r.stopped:
        lines.append(f"The run stopped early: {r.stopped}; the cells after it did not run.")
    if r.raised:
        lines.append("\nCells that raise in the fresh run:")
        lines.extend(f"- {p.label}: {p.text}" for p in r.raised)
    if r.outputs_differ:
        lines.append("\nCells whose outputs differ from the notebook's (live notebook → fresh run):")
        for p in r.outputs_differ:
            lines.append(f"- {p.label}:")
            lines.extend("    " + line for line in p.text.splitlines())
    if r.variables_differ:
        lines.append("\nVariables that differ (this kernel → fresh run):")
        lines.extend(f"- {m.name}: {m.live} → {m.fresh}" for m in r.variables_differ)
    if r.hidden_state:
        lines.append(
            "\nHidden state: names this kernel holds that no cell defines (a deleted cell, a value set by hand):"
        )
        lines.extend(f"- {m.name}: {m.live}" for m in r.hidden_state)
    if r.out_of_order:
        lines.append("\nCells this kernel ran out of order:")
        lines.extend(f"- {x}" for x in r.out_of_order)
    if r.skipped:
        lines.append("\nNot run (agent:never-run, set by the person): " + "; ".join(r.skipped))
    if r.agent_cells:
        lines.append(
            "\nNot rerun (ipy_agent's own magics: prompts to the agent, verifies): " + "; ".join(r.agent_cells)
        )
    if not r.live_compared:
        lines.append("\n(A notebook file: only its saved outputs were compared, not this kernel's variables.)")
    return "\n".join(lines)


def report_table(r: VerifyReport) -> str:
    """The compact table the person sees in the cell."""
    rows = [("verdict", r.verdict)]
    rows += [("raises", f"{p.label}: {p.text[:80]}") for p in r.raised]
    rows += [("output differs", p.label) for p in r.outputs_differ]
    rows += [("variable differs", f"{m.name}: {m.live[:40]} → {m.fresh[:40]}") for m in r.variables_differ]
    rows += [("hidden state", f"{m.name}: {m.live[:60]}") for m in r.hidden_state]
    rows += [("out of order", x) for x in r.out_of_order]
    rows += [("skipped", x) for x in r.skipped]
    if r.agent_cells:
        more = f" (and {len(r.agent_cells) - 3} more)" if len(r.agent_cells) > 3 else ""
        rows.append(("not rerun", "; ".join(r.agent_cells[:3]) + more))
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k.ljust(width)}  {v}" for k, v in rows)
