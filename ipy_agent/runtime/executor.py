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
from dataclasses import dataclass, field
from typing import Any

from .lifecycle import RunEnv, error_result, parse_input, run_tool_use
from .trace import CallEvent, CallRecord, now

__all__ = ["ToolExecutor", "INTERRUPTED_TEXT"]

INTERRUPTED_TEXT = (
    "Interrupted by the person before this tool call finished; it may have had partial effects. "
    "Do not assume it ran. Wait for their next instruction."
)


@dataclass(kw_only=True)
class _Entry:
    block: dict[str, Any]
    record: CallRecord
    safe: bool
    task: asyncio.Task[dict[str, Any]] | None = None
    result: dict[str, Any] | None = None
    done: asyncio.Event = field(default_factory=asyncio.Event)


class ToolExecutor:
    def __init__(self, env: RunEnv, *, turn: int, trace: list[CallRecord], batch_counter: list[int],
                 max_concurrency: int = 10) -> None:
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be at least 1, not {max_concurrency!r}")
        self.env = env
        self.turn = turn
        self.trace = trace
        self.max_concurrency = max_concurrency
        self._batches = batch_counter  # shared across turns: batch numbers grow per conversation
        self._entries: list[_Entry] = []
        self._cancel_reason: str | None = None

    # --- intake ------------------------------------------------------------------------
    def submit(self, block: dict[str, Any]) -> None:
        tid = str(block.get("id"))
        name = str(block.get("name"))
        tool = self.env.tools.get(name)
        safe = read_only = destructive = False
        if tool is not None:
            parsed = parse_input(tool, block.get("input"))
            if not isinstance(parsed, str):
                safe = tool.is_concurrency_safe(parsed)
                read_only = tool.is_read_only(parsed)
                destructive = tool.is_destructive(parsed)
        raw_input = block.get("input")
        record = CallRecord(
            index=len(self.trace), tool_use_id=tid, tool_name=name,
            input=dict(raw_input) if isinstance(raw_input, dict) else {"_raw": raw_input},
            turn=self.turn, concurrency_safe=safe, read_only=read_only, destructive=destructive,
            display_name=tool.display_name() if tool else name,
        )
        self.trace.append(record)
        entry = _Entry(block=block, record=record, safe=safe)
        self._entries.append(entry)
        self.env.emit(CallEvent(record=record))
        if self._cancel_reason is not None:
            self._finish(entry, error_result(tid, self._cancel_reason), "cancelled")
        self._schedule()

    def has(self, tool_use_id: str) -> bool:
        return any(e.record.tool_use_id == tool_use_id for e in self._entries)

    @property
    def submitted(self) -> int:
        return len(self._entries)

    @property
    def pending(self) -> bool:
        return any(e.result is None for e in self._entries)

    # --- scheduling ----------------------------------------------------------------------
    def _running(self) -> list[_Entry]:
        return [e for e in self._entries if e.task is not None and e.result is None]

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
            if entry.safe and all(e.safe for e in running) and len(running) < self.max_concurrency:
                self._start(entry, new_batch=False)
                continue
            break  # the first call that must wait holds back everything after it

    def _start(self, entry: _Entry, *, new_batch: bool) -> None:
        if new_batch:
            self._batches[0] += 1
        entry.record.batch = self._batches[0]
        entry.task = asyncio.ensure_future(run_tool_use(entry.block, self.env, entry.record))
        entry.task.add_done_callback(lambda t, e=entry: self._on_done(e, t))

    def _on_done(self, entry: _Entry, task: asyncio.Task[dict[str, Any]]) -> None:
        if entry.result is not None:
            return
        if task.cancelled():
            self._finish(entry, error_result(entry.record.tool_use_id, self._cancel_reason or INTERRUPTED_TEXT), "cancelled")
        elif task.exception() is not None:
            exc = task.exception()
            self._finish(entry, error_result(entry.record.tool_use_id, f"Internal error while running the tool: {exc!r}"), "error")
        else:
            entry.result = task.result()
            entry.done.set()
            tool = self.env.tools.get(entry.record.tool_name)
            if entry.record.call_failed and tool is not None and self._cancels_siblings(tool, entry):
                self._cancel_after(entry)
        self._schedule()

    def _cancels_siblings(self, tool: Any, entry: _Entry) -> bool:
        parsed = parse_input(tool, entry.block.get("input"))
        if isinstance(parsed, str):
            return False
        try:
            return bool(tool.cancels_siblings_on_error(parsed))
        except Exception:
            return False

    def _cancel_after(self, failed: _Entry) -> None:
        raw = failed.block.get("input")
        # Name the failed call the way the model wrote it: Bash(<its command>), else its summary.
        label = str(raw.get("command") or failed.record.summary_use) if isinstance(raw, dict) else ""
        what = f"{failed.record.tool_name}({label[:40]}{'…' if len(label) > 40 else ''})" if label else failed.record.tool_name
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

    def _finish(self, entry: _Entry, block: dict[str, Any], status: str) -> None:
        entry.result = block
        rec = entry.record
        rec.result, rec.is_error = block, True
        rec.summary_result = rec.summary_result or status
        if rec.start is None:
            rec.start = now()
        rec.end = now()
        rec.status = status  # type: ignore[assignment]
        entry.done.set()
        self.env.emit(CallEvent(record=rec))

    # --- completion ----------------------------------------------------------------------
    async def results(self) -> list[dict[str, Any]]:
        """Wait for every submitted call; the results in tool_use order."""
        for entry in list(self._entries):
            await entry.done.wait()
        return [e.result for e in self._entries if e.result is not None]

    def interrupt(self, reason: str = INTERRUPTED_TEXT) -> list[dict[str, Any]]:
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
