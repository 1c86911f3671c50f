"""Which cells ran in this kernel, in what order, with what source, and how long they took.

Jupyter keeps no record of what ran; each cell shows only its last execution count. The
staleness hints of NotebookRead and the "last run" line of NotebookRun's prompt need more: the
source a cell had when it last ran here (so an edit since is visible), its execution count in
this kernel (so a cell rerun after another is visible), and how long it took. `RunLog` keeps
that per cell id; `watch` fills it from IPython's `pre_run_cell` / `post_run_cell` events, which
carry the front end's cell id for cells the person runs, and NotebookRun records its own runs.

Execution counts: NotebookRun's code runs inside the cell that runs the agent (the `%agent`
cell is still executing) and takes the kernel's next count, as a cell the person runs would.
IPython counts up when a cell starts, and ipykernel replies to the running cell with "the
counter minus one", read when the cell ends: after a run inside it, that is the count the run
took, so the `%agent` cell and the cell it ran would both show `[5]`. `nested()` marks such a
run (its events are not the running cell's) and `took()` the count it took; when the running
cell ends on a count a run took, it takes the next count of its own (its input stored again
under it, so `In` stays aligned with the counts) and the reply carries that count.
The shell is duck-typed: nothing here imports IPython.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["PERSON_RUNS_CELLS", "PERSON_TO_RUN", "CellRun", "RunLog", "describe_run", "person_ran"]

# In a conversation's `ToolContext.session`: True while the person can run cells during the run
# (a background run), so a tool may wait for their run (`RunLog.next_run`); set by the magics.
PERSON_RUNS_CELLS = "ipy_agent.person_runs_cells"
# In a conversation's session: the id of the cell a foreground run left for the person to run
# (TodoHuman's TODO(human) cell); their run of it continues the conversation (magics/todo_human.py).
PERSON_TO_RUN = "ipy_agent.person_to_run"


def _resolve(future: asyncio.Future[CellRun], run: CellRun) -> None:
    if not future.done():
        future.set_result(run)


@dataclass(frozen=True, kw_only=True)
class CellRun:
    """A cell's last run in this kernel."""

    cell_id: str
    source: str
    execution_count: int | None
    seconds: float
    error: str | None = None
    output_count: int | None = None
    output_chars: int | None = None


class RunLog:
    """The last run of each cell id in this kernel (bounded: the newest 10,000 cells)."""

    LIMIT = 10_000

    def __init__(self) -> None:
        self._runs: dict[str, CellRun] = {}
        self._started: tuple[str, str, float] | None = None
        self._shell: Any = None
        self._running: Any = None  # the `pre_run_cell` info of the cell the kernel is executing
        self._nested = 0  # runs inside it now (NotebookRun's)
        self._taken: set[int] = set()  # counts those runs took
        self._waiting: dict[str, list[asyncio.Future[CellRun]]] = {}  # `next_run`'s, by cell id
        # Called with each run the person's cells end with, in IPython's `post_run_cell`, while
        # that cell is still the one running (what they display goes to it).
        self.listeners: list[Callable[[CellRun], None]] = []

    def record(self, run: CellRun) -> None:
        self._runs.pop(run.cell_id, None)
        self._runs[run.cell_id] = run
        while len(self._runs) > self.LIMIT:
            del self._runs[next(iter(self._runs))]
        for future in self._waiting.pop(run.cell_id, []):  # IPython's thread, maybe not the waiter's loop
            future.get_loop().call_soon_threadsafe(_resolve, future, run)

    async def next_run(self, cell_id: str) -> CellRun:
        """The next run of `cell_id` that ends in this kernel (the person runs it): an event, no polling."""
        future: asyncio.Future[CellRun] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(cell_id, []).append(future)
        try:
            return await future
        finally:
            if future in self._waiting.get(cell_id, []):
                self._waiting[cell_id].remove(future)

    def get(self, cell_id: str) -> CellRun | None:
        return self._runs.get(cell_id)

    def __len__(self) -> int:
        return len(self._runs)

    # --- IPython's events ---------------------------------------------------------------
    def watch(self, shell: Any) -> None:
        """Record the cells the person runs (a front end that sends cell ids: JupyterLab does)."""
        if self._shell is not None:
            return
        shell.events.register("pre_run_cell", self._pre)
        shell.events.register("post_run_cell", self._post)
        self._shell = shell

    def unwatch(self) -> None:
        if self._shell is None:
            return
        for name, callback in (("pre_run_cell", self._pre), ("post_run_cell", self._post)):
            with contextlib.suppress(ValueError):
                self._shell.events.unregister(name, callback)
        self._shell = None

    @contextlib.contextmanager
    def nested(self) -> Iterator[None]:
        """A run of code inside the running cell (NotebookRun's): its events are not the cell's."""
        self._nested += 1
        try:
            yield
        finally:
            self._nested -= 1

    def took(self, count: int | None) -> None:
        """A nested run took `count`: the running cell must not end on it (see the module's doc)."""
        if count is not None and self._running is not None:
            self._taken.add(count)

    def _pre(self, info: Any) -> None:
        if self._nested:
            return
        self._running, self._taken = info, set()
        cell_id = getattr(info, "cell_id", None)
        source = getattr(info, "raw_cell", None)
        self._started = (cell_id, source, time.monotonic()) if cell_id and isinstance(source, str) else None

    def _post(self, result: Any) -> None:
        if self._nested:
            return
        running, self._running = self._running, None
        taken, self._taken = self._taken, set()
        if running is not None and taken:
            self._own_count(running, result, taken)
        started, self._started = self._started, None
        if started is None:
            return
        cell_id, source, t0 = started
        error = getattr(result, "error_in_exec", None) or getattr(result, "error_before_exec", None)
        self.record(
            CellRun(
                cell_id=cell_id,
                source=source,
                execution_count=getattr(result, "execution_count", None),
                seconds=time.monotonic() - t0,
                error=f"{type(error).__name__}: {error}" if error is not None else None,
            )
        )
        run = self._runs[cell_id]
        for listener in list(self.listeners):
            listener(run)

    def _own_count(self, info: Any, result: Any, taken: set[int]) -> None:
        """The cell ends on a count a nested run took: it takes the next one (ipykernel replies
        with the counter minus one, read after this event)."""
        shell = self._shell
        count = getattr(shell, "execution_count", None)
        if not isinstance(count, int) or count - 1 not in taken:
            return
        raw = getattr(info, "raw_cell", None) or ""
        with contextlib.suppress(Exception):  # In/Out stay aligned with the counts
            shell.history_manager.store_inputs(count, getattr(info, "transformed_cell", None) or raw, raw)
        shell.execution_count = count + 1
        with contextlib.suppress(Exception):
            result.execution_count = count


def person_ran(run: CellRun) -> str:
    """What the model is told once the person ran the cell left for them (TodoHuman's)."""
    outcome = f"It failed: {run.error}" if run.error else "It ran without error."
    return (
        f"The person ran the TODO(human) cell {run.cell_id} (execution count {run.execution_count}). {outcome} "
        f"What they wrote:\n{run.source}\nRead its outputs with NotebookRead if you need them, then build on "
        "their code."
    )


def describe_run(
    run: CellRun | None, *, output_count: int | None = None, output_chars: int | None = None
) -> str | None:
    """How the cell's last run went, for the prompt: "took 2.1 s, 3 outputs (12,000 characters)"."""
    if run is None:
        return None
    count = run.output_count if run.output_count is not None else output_count
    chars = run.output_chars if run.output_chars is not None else output_chars
    text = f"[{run.execution_count}] took {run.seconds:.1f} s"
    if count is not None:
        text += f", {count} output{'s' if count != 1 else ''}"
        if chars:
            text += f" ({chars:,} characters)"
    if run.error:
        text += f", raised {run.error.splitlines()[0][:80]}"
    return text
