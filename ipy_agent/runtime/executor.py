"""Runs the tool calls of one assistant message: safe calls together, others alone, in order.

Calls arrive one at a time (`submit`), as a streaming model completes each tool_use block, so
a read-only call can start before the message ends. Scheduling, as in Claude Code's streaming
executor: a call starts when nothing is running, or when it and everything running are
concurrency-safe (at most `max_concurrency` at once); the first waiting call that cannot start
holds back the ones after it, so an unsafe call never overtakes an earlier one or is overtaken.
Results come back in the order of the tool_use blocks whatever order they finish in.

When a call that cancels siblings on error (Bash that is not read-only) fails, the calls after
it in the message get a synthetic error naming it: a chain of dependent shell steps should not
run on after a failure. An interrupt answers every unanswered call with a synthetic error, so
the conversation stays valid.
"""

from __future__ import annotations

import asyncio
import functools
from dataclasses import dataclass, field

from ipy_agent.base.threads import reserve_threads
from ipy_agent.contract.limits import SELF_LIMITING
from ipy_agent.history.blocks import ToolResultBlock, ToolUseBlock

from .lifecycle import Call, prepare, run_call
from .run_env import RunEnv, error_result, mark_started, note_budget, settle
from .trace import CallEvent, CallRecord, CallStatus, now

__all__ = ["INTERRUPTED_TEXT", "ToolExecutor"]

INTERRUPTED_TEXT = (
    "Interrupted by the person before this tool call finished; it may have had partial effects. "
    "Do not assume it ran. Wait for their next instruction."
)


@dataclass(kw_only=True)
class _Entry:
    block: ToolUseBlock
    record: CallRecord
    call: Call | None = None  # found and parsed (by `prepare`), once, when first needed
    task: asyncio.Task[ToolResultBlock] | None = None
    result: ToolResultBlock | None = None
    done: asyncio.Event = field(default_factory=asyncio.Event)


class ToolExecutor:
    def __init__(
        self, env: RunEnv, *, turn: int, trace: list[CallRecord], batch_counter: list[int], max_concurrency: int = 10
    ) -> None:
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be at least 1, not {max_concurrency!r}")
        self.env = env
        self.turn = turn
        self.trace = trace
        self.max_concurrency = max_concurrency
        # Sync tools run in worker threads: enough of them for a whole batch to run at once.
        reserve_threads(max_concurrency)
        self._batches = batch_counter  # shared across turns: batch numbers grow per conversation
        self._entries: list[_Entry] = []
        self._by_id: dict[str, _Entry] = {}
        self._cancel_reason: str | None = None

    # --- intake ------------------------------------------------------------------------
    def submit(self, block: ToolUseBlock) -> None:
        tid = str(block.get("id"))
        name = str(block.get("name"))
        tool = self.env.tools.get(name)
        raw_input = block.get("input")
        shown = tool.display_name() if tool else name
        record = CallRecord(
            index=len(self.trace),
            tool_use_id=tid,
            tool_name=name,
            input=dict(raw_input) if isinstance(raw_input, dict) else {"_raw": raw_input},
            turn=self.turn,
            # The row and the record say who made a call from outside (an MCP client).
            display_name=f"{shown} · via {self.env.client}" if self.env.client else shown,
            client=self.env.client,
        )
        self.trace.append(record)
        entry = _Entry(block=block, record=record)
        self._entries.append(entry)
        self._by_id.setdefault(tid, entry)
        self.env.emit(CallEvent(record=record))
        if self._cancel_reason is not None:
            self._finish(entry, error_result(tid, self._cancel_reason), "cancelled")
        self._schedule()

    def has(self, tool_use_id: str) -> bool:
        return tool_use_id in self._by_id

    @property
    def submitted(self) -> int:
        return len(self._entries)

    @property
    def pending(self) -> bool:
        return any(e.result is None for e in self._entries)

    # --- scheduling ----------------------------------------------------------------------
    def _running(self) -> list[_Entry]:
        return [e for e in self._entries if e.task is not None and e.result is None]

    def _prepared(self, entry: _Entry) -> Call:
        if entry.call is None:
            entry.call = prepare(entry.block, self.env, entry.record)
        return entry.call

    def _safe(self, entry: _Entry) -> bool:
        return self._prepared(entry).record.concurrency_safe

    def _schedule(self) -> None:
        if self.env.stop_requested and self._cancel_reason is None:
            # A hook stopped the run: nothing else in this message starts.
            self._cancel_reason = f"Not run: a hook stopped the run ({self.env.stop_reason})."
            for entry in self._entries:
                if entry.task is None and entry.result is None:
                    self._finish(entry, error_result(entry.record.tool_use_id, self._cancel_reason), "cancelled")
        for entry in self._entries:
            if entry.task is not None or entry.result is not None:
                continue
            running = self._running()
            if not running:
                self._start(entry, new_batch=True)
                continue
            if len(running) < self.max_concurrency and self._safe(entry) and all(self._safe(e) for e in running):
                self._start(entry, new_batch=False)
                continue
            break  # the first call that must wait holds back everything after it

    def _start(self, entry: _Entry, *, new_batch: bool) -> None:
        if new_batch:
            self._batches[0] += 1
        entry.record.batch = self._batches[0]
        mark_started(self.env, entry.record)
        entry.task = asyncio.ensure_future(run_call(self._prepared(entry)))
        entry.task.add_done_callback(functools.partial(self._on_done, entry))

    def _on_done(self, entry: _Entry, task: asyncio.Task[ToolResultBlock]) -> None:
        if entry.result is not None:
            return
        if task.cancelled():
            self._finish(
                entry, error_result(entry.record.tool_use_id, self._cancel_reason or INTERRUPTED_TEXT), "cancelled"
            )
        elif task.exception() is not None:
            exc = task.exception()
            self._finish(
                entry,
                error_result(entry.record.tool_use_id, f"Internal error while running the tool: {exc!r}"),
                "error",
            )
        else:
            entry.result = task.result()
            entry.done.set()
            if entry.record.call_failed and self._cancels_siblings(entry):
                self._cancel_after(entry)
        self._schedule()

    @staticmethod
    def _cancels_siblings(entry: _Entry) -> bool:
        call = entry.call
        if call is None or call.tool is None or call.inp is None:
            return False
        try:
            return bool(call.tool.cancels_siblings_on_error(call.inp))
        except Exception:
            return False

    def _cancel_after(self, failed: _Entry) -> None:
        raw = failed.block.get("input")
        # Name the failed call the way the model wrote it: Bash(<its command>), else its summary.
        label = str(raw.get("command") or failed.record.summary_use) if isinstance(raw, dict) else ""
        what = (
            f"{failed.record.tool_name}({label[:40]}{'…' if len(label) > 40 else ''})"
            if label
            else failed.record.tool_name
        )
        reason = (
            f"Cancelled: an earlier call in the same message, {what}, failed, so this call was not run. "
            "Fix that failure first, then retry this call if it is still needed."
        )
        self._cancel_reason = reason
        after = self._entries[self._entries.index(failed) + 1 :]
        for e in after:
            if e.result is None:
                if e.task is not None:
                    e.task.cancel()
                self._finish(e, error_result(e.record.tool_use_id, reason), "cancelled")

    def _finish(self, entry: _Entry, block: ToolResultBlock, status: CallStatus) -> None:
        entry.result = block
        settle(self.env, entry.record, block, status, summary=status)
        entry.done.set()

    # --- completion ----------------------------------------------------------------------
    async def results(self) -> list[ToolResultBlock]:
        """Wait for every submitted call; the results in tool_use order, within the message budget."""
        for entry in list(self._entries):
            await entry.done.wait()
        results = [e.result for e in self._entries if e.result is not None]
        self._apply_message_budget(results)
        return results

    def _apply_message_budget(self, results: list[ToolResultBlock]) -> None:
        """Spill the largest results when the message's results together are over budget.

        Self-limiting tools (Read) keep theirs; each replaced result is noted on its record."""
        started = now()
        exempt = frozenset(
            e.record.tool_use_id
            for e in self._entries
            if e.call is not None and e.call.tool is not None and e.call.tool.max_result_chars >= SELF_LIMITING
        )
        for tid, path in self.env.budget.apply_message_limit(results, exempt).items():
            entry = self._by_id[tid]
            entry.result = next(b for b in results if b.get("tool_use_id") == tid)
            note_budget(self.env, entry.record, entry.result, None if path is None else str(path), started)

    def interrupt(self, reason: str = INTERRUPTED_TEXT) -> list[ToolResultBlock]:
        """Answer every unanswered call with `reason` now; running tasks are cancelled."""
        self._cancel_reason = reason
        for e in self._entries:
            if e.result is None:
                if e.task is not None and not e.task.done():
                    e.task.cancel()
                self._finish(e, error_result(e.record.tool_use_id, reason), "cancelled")
        return [e.result for e in self._entries if e.result is not None]

    async def drain(self) -> None:
        """Let cancelled tasks run their cleanup (kill process groups) before the run returns."""
        tasks = [e.task for e in self._entries if e.task is not None and not e.task.done()]
        if tasks:
            await asyncio.wait(tasks, timeout=5)
