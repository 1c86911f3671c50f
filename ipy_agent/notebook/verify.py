"""Does the notebook reproduce? Its cells run top to bottom in a new kernel, compared with the live one.

A notebook's worst defect is hidden state: the kernel holds values no cell, run top to bottom,
would produce (a cell deleted after it ran, cells run out of order, a value typed by hand). Here
the notebook's code cells run in order in a NEW kernel (nbclient, started in the notebook's
directory, of the kernelspec the notebook names when this machine has it, else this kernel's own
Python), never touching the person's kernel or cells, and the result is compared with what the
person has:

- cells that raise in the fresh run (`cell N · first line`, with the error);
- cells whose outputs differ from the outputs the notebook shows (text: a short diff; images by
  size and a hash; memory addresses such as `0x7f..` are not differences);
- variables whose type or summary differ between the live kernel and the fresh run, each side
  summarised by `variables.describe_namespace` (never a full repr, never a class's own code); a
  name only the fresh run has is not a difference when only cells not yet run here bind it (a
  verify in the middle of Run All: the cells below it have not run yet);
- "hidden state": names the live kernel holds that no cell defines (neither the fresh run nor a
  parse of any cell binds them);
- cells the live kernel ran out of order (the run log's execution counts, top to bottom).

Cells the person tagged `agent:never-run` are not run, and are named. Nor are the cells of
ipy_agent's own magics (`%agent`, `%%agent`, `%agent_verify`, `%agent_rules`...): they talk to the
agent, they do not compute the notebook's data, and a rerun would ask the model again or verify
inside the verify; they are named too, and what the agent left in the kernel without a cell shows
as hidden state. The fresh kernel is shut down when the run ends, also when it is interrupted or
a cell times out. This module holds the run and the comparison; the tool
(tools/notebook/verify.py) holds the permission and the texts.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import difflib
import hashlib
import json
import os
import re
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .effects import cell_effects
from .naming import cell_label
from .runlog import RunLog
from .variables import VariableInfo, describe_namespace

__all__ = [
    "CellProblem",
    "FreshRun",
    "Mismatch",
    "VerifyCell",
    "VerifyReport",
    "compare",
    "namespace_json",
    "output_text",
    "run_fresh",
]

DIFF_LINES = 12
_ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")
_AGENT_MAGIC = re.compile(r"%{1,2}agent(?:_\w+)?(?:\s|$)")
_IMAGE_MIMES = ("image/png", "image/jpeg", "image/gif", "image/svg+xml")


@dataclass(frozen=True, kw_only=True)
class VerifyCell:
    """A cell of the notebook as the person has it: where, its source and its outputs."""

    cell_id: str
    index: int
    cell_type: str
    source: str
    outputs: tuple[Mapping[str, Any], ...] = ()
    execution_count: int | None = None
    never_run: bool = False  # the person's agent:never-run: not run in the fresh kernel
    asks: bool = False  # the person's agent:ask: a run of it is approved every time

    @property
    def label(self) -> str:
        return cell_label({"index": self.index, "source": self.source, "cell_type": self.cell_type})

    @property
    def agent_magic(self) -> bool:
        """A code cell that starts with one of ipy_agent's magics (`%agent ...`, `%agent_verify`): not rerun."""
        if self.cell_type != "code":
            return False
        first = next((s for line in self.source.splitlines() if (s := line.strip()) and not s.startswith("#")), "")
        return _AGENT_MAGIC.match(first) is not None


@dataclass(frozen=True, kw_only=True)
class FreshRun:
    """What the new kernel made of the cells: outputs per cell id, its variables, how it went."""

    outputs: dict[str, list[dict[str, Any]]]
    variables: list[VariableInfo] | None  # None: the fresh kernel could not describe them
    kernel: str  # which kernel ran it, for the report
    seconds: float
    stopped: str | None = None  # why the run stopped early (a timeout), if it did


@dataclass(frozen=True, kw_only=True)
class CellProblem:
    label: str
    cell_id: str
    text: str  # the error, or the short diff


@dataclass(frozen=True, kw_only=True)
class Mismatch:
    name: str
    live: str  # "type = summary", or "not defined"
    fresh: str


@dataclass(frozen=True, kw_only=True)
class VerifyReport:
    """The comparison: empty lists mean the notebook reproduces."""

    kernel: str
    seconds: float
    ran: int
    raised: list[CellProblem] = field(default_factory=list)
    outputs_differ: list[CellProblem] = field(default_factory=list)
    variables_differ: list[Mismatch] = field(default_factory=list)
    hidden_state: list[Mismatch] = field(default_factory=list)
    out_of_order: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # agent:never-run cells, not run
    agent_cells: list[str] = field(default_factory=list)  # cells of ipy_agent's magics, not rerun
    stopped: str | None = None
    live_compared: bool = True  # the live kernel's variables and run log were compared

    @property
    def reproduces(self) -> bool:
        return not (
            self.raised
            or self.outputs_differ
            or self.variables_differ
            or self.hidden_state
            or self.out_of_order
            or self.stopped
        )

    @property
    def verdict(self) -> str:
        """ "reproduces", or what does not, in a few words."""
        if self.reproduces:
            return "reproduces" + (f" ({len(self.skipped)} never-run cell(s) skipped)" if self.skipped else "")
        parts = []
        for items, one, many in (
            (self.raised, "cell raises", "cells raise"),
            (self.outputs_differ, "output differs", "outputs differ"),
            (self.variables_differ, "variable differs", "variables differ"),
            (self.out_of_order, "cell ran out of order", "cells ran out of order"),
        ):
            if items:
                parts.append(f"{len(items)} {one if len(items) == 1 else many}")
        if self.hidden_state:
            parts.append("hidden state: " + ", ".join(m.name for m in self.hidden_state[:5]))
        if self.stopped:
            parts.append(self.stopped)
        return "does not reproduce: " + "; ".join(parts)


# --- the fresh run ------------------------------------------------------------------------------


def namespace_json(shell: Any) -> str:
    """The kernel's variables as `describe_namespace` summarises them, as JSON (run in the fresh kernel)."""
    return json.dumps([[v.name, v.type, v.summary] for v in describe_namespace(shell)])


_DESCRIBE = "__import__('ipy_agent.notebook.verify', fromlist=['namespace_json']).namespace_json(get_ipython())"


def _kernel_manager(kernel_name: str | None, tmp: Path) -> tuple[Any, str]:
    """The notebook's kernelspec when this machine has it, else this kernel's own interpreter."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel
    from jupyter_client.manager import AsyncKernelManager

    if kernel_name:
        with contextlib.suppress(NoSuchKernel):
            KernelSpecManager().get_kernel_spec(kernel_name)
            return AsyncKernelManager(kernel_name=kernel_name, **_private(tmp)), f"kernelspec {kernel_name!r}"
    spec = tmp / "kernels" / "live"
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "this kernel", "language": "python"}))
    manager = KernelSpecManager(kernel_dirs=[str(spec.parent)], ensure_native_kernel=False)
    kernel = f"this kernel's Python, {sys.executable}"
    return AsyncKernelManager(kernel_name="live", kernel_spec_manager=manager, **_private(tmp)), kernel


def _private(tmp: Path) -> dict[str, str]:
    """IPC sockets in our own temp directory where the system has them: no port to share."""
    return {"transport": "ipc", "ip": str(tmp / "ipc")} if os.name == "posix" else {}


async def run_fresh(
    cells: Sequence[VerifyCell],
    *,
    cwd: Path,
    kernel_name: str | None,
    timeout: float,
) -> FreshRun:
    """Run the code cells (but the never-run ones) in order in a new kernel in `cwd`, shut down after."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError

    runnable = [
        c for c in cells if c.cell_type == "code" and not c.never_run and not c.agent_magic and c.source.strip()
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c.source) for c in runnable])
    t0 = time.monotonic()
    outputs: dict[str, list[dict[str, Any]]] = {}
    variables: list[VariableInfo] | None = None
    stopped: str | None = None
    with tempfile.TemporaryDirectory(prefix="ipy_agent_verify_") as tmp:
        km, kernel = _kernel_manager(kernel_name, Path(tmp))
        client = NotebookClient(
            nb,
            km=km,
            timeout=timeout,
            allow_errors=True,
            interrupt_on_timeout=False,
            resources={"metadata": {"path": str(cwd)}},
        )
        try:
            # Started here, not with nbclient's `async_setup_kernel`: that one puts SIGINT handlers on the
            # running loop (the person's kernel's own, for %agent_verify), which would take the kernel's
            # interrupt for itself; here the interrupt cancels this run and `finally` shuts the kernel down.
            await km.start_kernel(cwd=str(cwd), extra_arguments=["--HistoryManager.hist_file=:memory:"])
            await client.async_start_new_kernel_client()
            for i, (cell, nb_cell) in enumerate(zip(runnable, nb.cells, strict=True)):
                try:
                    await client.async_execute_cell(nb_cell, i)
                except CellTimeoutError:
                    stopped = f"{cell.label} did not finish within {timeout:g} s"
                    outputs[cell.cell_id] = [dict(o) for o in nb_cell.outputs]
                    break
                outputs[cell.cell_id] = [dict(o) for o in nb_cell.outputs]
            if stopped is None:
                variables = await _fresh_variables(client.kc, timeout)
        finally:
            # Also when interrupted or a cell timed out; a second interrupt does not stop the shutdown.
            if client.kc is not None:
                client.kc.stop_channels()
            if km.has_kernel:
                await asyncio.shield(km.shutdown_kernel(now=True))
    return FreshRun(outputs=outputs, variables=variables, kernel=kernel, seconds=time.monotonic() - t0, stopped=stopped)


async def _fresh_variables(kc: Any, timeout: float) -> list[VariableInfo] | None:
    reply = await kc.execute(
        "", silent=True, store_history=False, user_expressions={"v": _DESCRIBE}, reply=True, timeout=timeout
    )
    found = reply.get("content", {}).get("user_expressions", {}).get("v", {})
    if found.get("status") != "ok":
        return None
    import ast

    rows = json.loads(ast.literal_eval(found["data"]["text/plain"]))
    return [VariableInfo(name=n, type=t, summary=s) for n, t, s in rows]


# --- the comparison -----------------------------------------------------------------------------


def output_text(outputs: Sequence[Mapping[str, Any]]) -> str:
    """A cell's outputs as comparable text: streams, results, errors; images by size and hash."""
    lines: list[str] = []
    for o in outputs:
        kind = o.get("output_type")
        if kind == "stream":
            lines.append(_joined(o.get("text")))
        elif kind == "error":
            lines.append(f"{o.get('ename')}: {o.get('evalue')}\n")
        elif kind in ("execute_result", "display_data"):
            data = o.get("data") or {}
            image = next((m for m in _IMAGE_MIMES if m in data), None)
            if image is not None:
                raw = _joined(data[image])
                blob = raw.encode() if image == "image/svg+xml" else base64.b64decode(raw.encode(), validate=False)
                lines.append(f"[{image}: {len(blob):,} bytes, sha256 {hashlib.sha256(blob).hexdigest()[:12]}]\n")
            elif "text/plain" in data:
                lines.append(_joined(data["text/plain"]) + "\n")
    text = "".join(lines)
    return _ADDRESS.sub("0x…", text.replace("\r\n", "\n"))


def _joined(value: object) -> str:
    return "".join(value) if isinstance(value, list) else str(value or "")


def _diff(live: str, fresh: str) -> str:
    lines = list(
        difflib.unified_diff(
            live.splitlines(), fresh.splitlines(), fromfile="live notebook", tofile="fresh run", lineterm="", n=1
        )
    )
    if len(lines) > DIFF_LINES:
        lines = [*lines[:DIFF_LINES], f"… ({len(lines) - DIFF_LINES} more diff lines)"]
    return "\n".join(lines)


def compare(
    cells: Sequence[VerifyCell],
    fresh: FreshRun,
    *,
    live_variables: list[VariableInfo] | None,
    runs: RunLog | None,
) -> VerifyReport:
    """The report: `live_variables` and `runs` None when the notebook is not the kernel's (a file)."""
    code = [c for c in cells if c.cell_type == "code" and c.source.strip()]
    raised: list[CellProblem] = []
    differ: list[CellProblem] = []
    for c in code:
        if c.never_run or c.cell_id not in fresh.outputs:
            continue
        got = fresh.outputs[c.cell_id]
        error = next((o for o in got if o.get("output_type") == "error"), None)
        if error is not None:
            raised.append(
                CellProblem(label=c.label, cell_id=c.cell_id, text=f"{error.get('ename')}: {error.get('evalue')}")
            )
        if c.execution_count is None and not c.outputs:
            continue  # never run where the person sees it: nothing to compare with
        live_text, fresh_text = output_text(c.outputs), output_text(got)
        if live_text != fresh_text:
            differ.append(CellProblem(label=c.label, cell_id=c.cell_id, text=_diff(live_text, fresh_text)))
    report_vars: list[Mismatch] = []
    hidden: list[Mismatch] = []
    if live_variables is not None and fresh.variables is not None:
        fresh_by = {v.name: v for v in fresh.variables}
        binds = {c.cell_id: cell_effects(c.source).binds for c in code}
        bound = {n for names in binds.values() for n in names}
        ran = {c.cell_id for c in code if _ran_here(c, runs)}
        not_yet = bound - {n for cell_id in ran for n in binds[cell_id]}  # bound only by cells not run here
        for v in live_variables:
            here = f"{v.type} = {v.summary}"
            other = fresh_by.get(v.name)
            if other is None:
                if v.name in bound:
                    report_vars.append(Mismatch(name=v.name, live=here, fresh="not defined"))
                else:
                    hidden.append(Mismatch(name=v.name, live=here, fresh="no cell defines it"))
            elif (other.type, other.summary) != (v.type, v.summary):
                report_vars.append(Mismatch(name=v.name, live=here, fresh=f"{other.type} = {other.summary}"))
        live_names = {v.name for v in live_variables}
        for name, other in fresh_by.items():
            if name not in live_names and name not in not_yet:
                report_vars.append(Mismatch(name=name, live="not defined", fresh=f"{other.type} = {other.summary}"))
    return VerifyReport(
        kernel=fresh.kernel,
        seconds=fresh.seconds,
        ran=len(fresh.outputs),
        raised=raised,
        outputs_differ=differ,
        variables_differ=report_vars,
        hidden_state=hidden,
        out_of_order=out_of_order([c for c in code if not c.agent_magic], runs) if runs is not None else [],
        skipped=[c.label for c in code if c.never_run],
        agent_cells=[c.label for c in code if c.agent_magic and not c.never_run],
        stopped=fresh.stopped,
        live_compared=live_variables is not None,
    )


def _ran_here(c: VerifyCell, runs: RunLog | None) -> bool:
    """Whether the cell ran in the live kernel: the page shows a count or outputs, or the run log has it."""
    return c.execution_count is not None or bool(c.outputs) or (runs is not None and runs.get(c.cell_id) is not None)


def out_of_order(code: Sequence[VerifyCell], runs: RunLog) -> list[str]:
    """Cells whose last run in this kernel came before the last run of a cell above them."""
    found: list[str] = []
    latest: tuple[int, VerifyCell] | None = None  # the highest count above, and its cell
    for c in code:
        run = runs.get(c.cell_id)
        count = run.execution_count if run is not None else None
        if count is None:
            continue
        if latest is not None and count < latest[0]:
            found.append(f"{c.label} ran [{count}] before {latest[1].label} above it ran [{latest[0]}]")
        if latest is None or count > latest[0]:
            latest = (count, c)
    return found
