"""Run a notebook cell's code in this kernel, capturing what it shows, for NotebookRun.

Why the kernel runs the code itself instead of asking the front end to execute the cell: the
front end sends an `execute_request`, which the kernel takes only after the request that is
running now. In the default mode that running request is the `%agent` cell itself, which waits
for the agent: the agent would wait for a cell that waits for the agent (a deadlock). So the
code runs here, through IPython's own `run_cell_async` (magics, history, `In`/`Out`, the
execution counter, `pre/post_run_cell` hooks all behave as for a cell the person runs), with
its outputs captured instead of published, and the bridge writes them into the target cell.
See docs/live-notebook.md.

What is captured, in order: stdout and stderr (merged into stream outputs), `display()` calls
(the display publisher), the value of the last expression (the display hook, which also sets
`_` and `Out`), and the traceback of an error (the shell's traceback hook). All four are
swapped for the run and restored after it, whatever happens.

Stopping: a synchronous cell blocks the kernel's event loop, so neither a timeout nor
ipykernel's SIGINT handling (which cancels the awaiting `%agent` cell through the loop) could
reach it. For the run, SIGINT raises KeyboardInterrupt in the cell's code (Python's default
handler); a timer thread sends SIGINT when the timeout passes. A person's interrupt then also
goes on to the handler that was there before, so the agent stops as a person expects. Code
with top-level `await` runs on the loop and is cancelled with `asyncio.wait_for` instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import summarize_error
from .protocol_types import Output

__all__ = ["RunOutcome", "run_code"]


@dataclass(kw_only=True)
class RunOutcome:
    outputs: list[Output] = field(default_factory=list)  # nbformat v4 outputs, as `set_outputs` sends them
    execution_count: int | None = None
    error: str | None = None  # "Name: value" of an error the code raised
    summary: str | None = None  # the error told for the fix (errors.py): the cell's line, the person's frames
    timed_out: bool = False
    interrupted: bool = False  # by the person (kernel interrupt)
    seconds: float = 0.0


class _Stream:
    """Stands in for sys.stdout / sys.stderr during the run."""

    def __init__(self, name: str, outputs: list[Output], lock: threading.Lock) -> None:
        self.name = name
        self._outputs = outputs
        self._lock = lock
        self.encoding = "utf-8"

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            text = str(text)
        with self._lock:
            last = self._outputs[-1] if self._outputs else None
            if last is not None and last.get("output_type") == "stream" and last.get("name") == self.name:
                before = last.get("text", "")
                last["text"] = (before if isinstance(before, str) else "".join(before)) + text
            elif text:
                self._outputs.append({"output_type": "stream", "name": self.name, "text": text})
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        raise OSError("captured stream has no file descriptor")


class _DisplayPub:
    """Stands in for the shell's display publisher: `display()` becomes a display_data output."""

    is_publishing = False

    def __init__(self, outputs: list[Output], lock: threading.Lock) -> None:
        self._outputs = outputs
        self._lock = lock

    def publish(
        self,
        data: Mapping[str, object],
        metadata: Mapping[str, object] | None = None,
        source: Any = None,
        *,
        transient: Any = None,
        update: bool = False,
        **_: Any,
    ) -> None:
        with self._lock:
            self._outputs.append({"output_type": "display_data", "data": dict(data), "metadata": dict(metadata or {})})

    def clear_output(self, wait: bool = False) -> None:
        with self._lock:
            self._outputs.clear()

    def set_parent(self, *_: Any, **__: Any) -> None:
        pass


class _DisplayHook:
    """Stands in for sys.displayhook: the last expression's value becomes an execute_result."""

    def __init__(self, shell: Any, outputs: list[Output], lock: threading.Lock) -> None:
        self.shell = shell
        self._outputs = outputs
        self._lock = lock

    def __call__(self, result: Any = None) -> None:
        if result is None:
            return
        hook = self.shell.displayhook
        try:
            if hook.quiet():
                return
        except Exception:  # quiet() reads the input history; never fail the run over it
            pass
        data, metadata = self.shell.display_formatter.format(result)
        with contextlib.suppress(Exception):
            hook.update_user_ns(result)  # `_`, `__`, `Out[n]`, as for any cell
        with self._lock:
            self._outputs.append(
                {
                    "output_type": "execute_result",
                    "data": data,
                    "metadata": metadata,
                    "execution_count": _running_count(self.shell),
                }
            )


def _running_count(shell: Any) -> int | None:
    """The count of the code running now: IPython's display hook knows it (IPython 9 counts up
    when a cell starts, so the counter is one ahead; IPython 8 counted up at the end)."""
    try:
        return int(shell.displayhook.prompt_count)
    except Exception:
        return getattr(shell, "execution_count", None)


async def run_code(
    shell: Any, code: str, *, timeout: float, on_progress: Callable[[list[Output]], object] | None = None
) -> RunOutcome:
    """Run `code` as a cell in `shell`; outputs are captured, not sent to any front end.
    `on_progress`, when given, is called from a thread with a copy of the outputs so far each
    time they changed (at most every PROGRESS_EVERY seconds), so they can reach the cell while
    the code runs, even code that blocks the event loop."""
    outcome = RunOutcome()
    transformed, exc_tuple = _transform(shell, code)
    is_async = exc_tuple is None and bool(
        shell.should_run_async(code, transformed_cell=transformed, preprocessing_exc_tuple=None)
    )
    run_args = {"store_history": True, "transformed_cell": transformed, "preprocessing_exc_tuple": exc_tuple}
    main = threading.current_thread() is threading.main_thread()
    old_sigint = signal.getsignal(signal.SIGINT) if main else None
    deadline = _Deadline(timeout) if main and not is_async else None
    start = time.monotonic()
    progress = _Progress(outcome.outputs, on_progress) if on_progress is not None else None
    try:
        with _captured(shell, outcome.outputs, progress):
            if main and not is_async:
                signal.signal(signal.SIGINT, signal.default_int_handler)
            result = await _run(shell, code, run_args, timeout, is_async, deadline, outcome)
        fired = deadline is not None and deadline.fired
        outcome.execution_count = getattr(result, "execution_count", None) or shell.execution_count - 1
        error = getattr(result, "error_in_exec", None) or getattr(result, "error_before_exec", None)
        if isinstance(error, KeyboardInterrupt):
            outcome.timed_out = outcome.timed_out or fired
            outcome.interrupted = not fired
        if error is not None:
            outcome.error = f"{type(error).__name__}: {error}"
            if not isinstance(error, KeyboardInterrupt):
                outcome.summary = _summary(error, code, shell)
    finally:
        if progress is not None:
            progress.stop()
        if main and old_sigint is not None:
            signal.signal(signal.SIGINT, old_sigint)
        outcome.seconds = time.monotonic() - start
    if outcome.timed_out and not any(o.get("output_type") == "error" for o in outcome.outputs):
        outcome.outputs.append(
            {
                "output_type": "error",
                "ename": "TimeoutError",
                "evalue": f"the cell was stopped after {timeout:g} s",
                "traceback": [],
            }
        )
    if outcome.interrupted and callable(old_sigint) and old_sigint is not signal.default_int_handler:
        # The person pressed stop: let the kernel's own handler stop the agent's cell as well.
        old_sigint(signal.SIGINT, None)
    return outcome


def _summary(error: BaseException, code: str, shell: Any) -> str | None:
    try:
        return summarize_error(error, code, shell.user_ns).text
    except Exception:  # the traceback in the outputs still says what happened
        return None


def _transform(shell: Any, code: str) -> tuple[str, Any]:
    """The cell's code after IPython's input transformers, or the error they raised."""
    try:
        return shell.transform_cell(code), None
    except Exception:  # run_cell reports it, as for a cell the person runs
        return code, sys.exc_info()


async def _run(
    shell: Any,
    code: str,
    run_args: dict[str, object],
    timeout: float,
    is_async: bool,
    deadline: _Deadline | None,
    outcome: RunOutcome,
) -> Any:
    """IPython's run of the cell, stopped at the deadline; None when it never finished.

    `run_cell_async` fires `pre_run_cell` but leaves `post_execute` and `post_run_cell` to its
    caller (ipykernel fires them after a person's cell): they fire here too, still captured, so
    matplotlib's inline figures (shown at `post_execute`) land in the cell that drew them."""
    if deadline is not None:
        deadline.start()
    result = None
    try:
        if is_async:
            result = await asyncio.wait_for(shell.run_cell_async(code, **run_args), timeout)
        else:
            result = await shell.run_cell_async(code, **run_args)
    except TimeoutError:
        outcome.timed_out = True
    except KeyboardInterrupt:  # landed outside the cell's code, in IPython's own bookkeeping
        fired = deadline is not None and deadline.fired
        outcome.timed_out, outcome.interrupted = fired, not fired
    finally:
        if deadline is not None:
            deadline.stop()
        shell.events.trigger("post_execute")
        shell.events.trigger("post_run_cell", result)
    return result
    return None


class _Deadline:
    """A timer thread that sends this process SIGINT when a synchronous cell runs too long."""

    def __init__(self, timeout: float) -> None:
        self.fired = False
        self._done = False
        self._lock = threading.Lock()
        self._timer = threading.Timer(timeout, self._fire)
        self._timer.daemon = True

    def start(self) -> None:
        self._timer.start()

    def _fire(self) -> None:
        with self._lock:
            if self._done:
                return
            self.fired = True
        os.kill(os.getpid(), signal.SIGINT)

    def stop(self) -> None:
        with self._lock:
            self._done = True
        self._timer.cancel()
        if self.fired:
            _drain_sigint()


PROGRESS_EVERY = 0.5


class _Progress:
    """A thread that hands a copy of the outputs to a callback when they changed."""

    def __init__(self, outputs: list[Output], callback: Callable[[list[Output]], object]) -> None:
        self.lock = threading.Lock()
        self._outputs, self._callback = outputs, callback
        self._seen: tuple[int, int, int] = (0, 0, 0)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="ipy_agent-cell-progress", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(PROGRESS_EVERY):
            with self.lock:
                outs = self._outputs
                last: Mapping[str, object] = outs[-1] if outs else {}
                text = last.get("text", "")
                # Streams grow their last output.
                mark = (len(outs), len(text) if isinstance(text, str | list) else 0, id(last))
                if mark == self._seen:
                    continue
                self._seen = mark
                snapshot = [o.copy() for o in outs]
            with contextlib.suppress(Exception):  # showing progress never fails the run
                self._callback(snapshot)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)


@contextlib.contextmanager
def _captured(shell: Any, outputs: list[Output], progress: _Progress | None = None) -> Iterator[None]:
    """stdout, stderr, the display hook, the display publisher and the traceback hook send what
    the cell shows into `outputs` for the run; all are restored after it, whatever happens."""
    lock = progress.lock if progress is not None else threading.Lock()

    def show_traceback(etype: Any, evalue: Any, stb: list[str]) -> None:
        with lock:
            outputs.append(
                {
                    "output_type": "error",
                    "ename": getattr(etype, "__name__", str(etype)),
                    "evalue": str(evalue),
                    "traceback": list(stb),
                }
            )

    hook = _DisplayHook(shell, outputs, lock)
    saved = (sys.stdout, sys.stderr, sys.displayhook, shell.display_pub, shell.display_trap.hook)
    saved_traceback = shell.__dict__.get("_showtraceback")
    sys.stdout, sys.stderr = _Stream("stdout", outputs, lock), _Stream("stderr", outputs, lock)
    sys.displayhook = hook
    shell.display_pub = _DisplayPub(outputs, lock)
    shell.display_trap.hook = hook
    shell._showtraceback = show_traceback
    try:
        yield
    finally:
        sys.stdout, sys.stderr, sys.displayhook = saved[0], saved[1], saved[2]
        shell.display_pub, shell.display_trap.hook = saved[3], saved[4]
        if saved_traceback is None:
            shell.__dict__.pop("_showtraceback", None)
        else:
            shell._showtraceback = saved_traceback


def _drain_sigint() -> None:
    """A timeout's SIGINT may still be pending: take it under our handler, not the kernel's."""
    try:
        for _ in range(5):
            time.sleep(0.01)
    except KeyboardInterrupt:
        pass
