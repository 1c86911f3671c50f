"""How a `%agent` cell waits for its run in a kernel, and how the line reaches the magic.

- kernel: an input transformer turns `%agent ...` / `%%agent` into `await run_agent_cell(...)`,
  which waits with a 0.25 s tick so a kernel interrupt ends the run promptly (a plain await
  would not wake up) and widget clicks are delivered meanwhile. `--background` instead starts
  a task on the kernel's loop and returns at once. `%agent_instructions` (and `%agent_rewind`) is awaited the same way
  (`run_instructions_cell`): it asks the notebook's page for the notebook's instructions, and
  the page's answer reaches the kernel only while the cell awaits. `%agent_tools` too
  (`run_tools_cell`): with Run All, the page's hello after `%load_ext` queues behind the cells
  already sent, and reaches the kernel only while a cell awaits; the table then says what the
  page answered, not what had arrived before it could.
- terminal IPython: a transformer hands `%agent ...` lines to the magic before IPython's help
  syntax sees a trailing `?`.
The session the magics share is found through the shell (`current_session`).
"""

from __future__ import annotations

import asyncio
import re
from typing import TYPE_CHECKING

from IPython.core.error import UsageError

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from .session import AgentSession

__all__ = [
    "INTERRUPTED",
    "TICK",
    "RunInterrupted",
    "agent_transformer",
    "current_session",
    "run_agent_cell",
    "run_instructions_cell",
    "run_tools_cell",
    "terminal_transformer",
]

TICK = 0.25  # seconds between wake-ups while a cell awaits the agent (kernel interrupts need them)

INTERRUPTED = "the agent run was interrupted; the conversation is intact, continue it with %agent"


class RunInterrupted(KeyboardInterrupt):
    """An interrupted `%agent` cell: IPython shows its one line (`_render_traceback_`), not the
    frames of the awaited call the transformer wrote into the cell."""

    def _render_traceback_(self) -> list[str]:
        return [f"\x1b[31mKeyboardInterrupt\x1b[0m: {self}"]


# The kernel's reply names the exception by its class's name: front ends and nbclient know
# "KeyboardInterrupt" (an interrupted cell), so that is the name it keeps.
RunInterrupted.__name__ = RunInterrupted.__qualname__ = "KeyboardInterrupt"


_MODULE = '__import__("ipy_agent.magics.cell_runner", fromlist=["run_agent_cell"])'
_LINE_RE = re.compile(r"^%agent(?:[ \t]|$)")
# The magics a kernel cell awaits, and the function it awaits for each.
_AWAITED = {
    "agent": "run_agent_cell",
    "agent_instructions": "run_instructions_cell",
    "agent_rewind": "run_rewind_cell",
    "agent_tools": "run_tools_cell",
    "agent_verify": "run_verify_cell",
}
_MAGIC_RE = re.compile(r"^(%%?)(agent|agent_instructions|agent_rewind|agent_tools|agent_verify)(?:[ \t]|$)")


def agent_transformer(lines: list[str]) -> list[str]:
    """Rewrite `%%agent` cells and unindented `%agent` lines (and `%agent_instructions` ones)
    into an awaited call.

    A line magic cannot await, and only an awaiting cell lets ipykernel deliver widget clicks,
    comm replies and interrupts while the agent runs. `%agent?` (help) is left alone.
    """
    if lines and (m := _MAGIC_RE.match(lines[0])) and m.group(1) == "%%":
        call = f"{_MODULE}.{_AWAITED[m.group(2)]}"
        return [f"await {call}({lines[0][m.end(2) :].strip()!r}, {''.join(lines[1:])!r})\n"]
    out = []
    for ln in lines:
        m = _MAGIC_RE.match(ln)
        if m is None or m.group(1) != "%" or ln.rstrip().endswith("\\"):
            out.append(ln)
        else:
            out.append(f"await {_MODULE}.{_AWAITED[m.group(2)]}({ln[m.end(2) :].strip()!r})\n")
    return out


async def run_agent_cell(line: str, cell: str | None = None) -> None:
    """What a transformed `%agent` cell awaits: run, waking every TICK seconds.

    ipykernel's interrupt cancels the cell's task, but a plain `await` only notices when some
    other message wakes the loop; the tick bounds that delay. On cancel the agent closes its
    turn (every tool_use answered) before the cell ends with KeyboardInterrupt.
    """
    session = current_session()
    request = session.parse(line, cell)  # the line is parsed once, here
    handle = session.start_line(request)  # at once: what starts, with which model
    if session.bridge is not None:
        await session.bridge.ensure()  # is the notebook page (still) there? see notebook/bridge.py
        session.bridge.reviews.new_run()  # Accept all / Reject all of an earlier run end here
    try:
        run = session.prepare(request, background=None, handle=handle)
    except BaseException:
        if handle is not None:
            handle.update({"text/plain": ""}, raw=True)  # the error says it all; nothing started
        raise
    if run is None:
        if handle is not None:
            handle.update({"text/plain": ""}, raw=True)
        return
    if run.ui.background:
        session.start_background(run)
        return
    task = asyncio.ensure_future(session.execute(run))
    try:
        while not task.done():
            await asyncio.wait([task], timeout=TICK)
    except asyncio.CancelledError:
        if run.agent.running:
            run.agent.interrupt()
        else:
            task.cancel()
        await asyncio.wait([task], timeout=30)
        # What a person expects from the stop button (ipykernel would show a CancelledError);
        # IPython reports it like any interrupted cell, so Run All stops here too.
        raise RunInterrupted(INTERRUPTED) from None
    task.result()


async def run_instructions_cell(line: str, cell: str | None = None) -> None:
    """What a transformed `%agent_instructions` cell awaits: the command, with the notebook's
    page asked for (and told) the notebook's instructions."""
    from .standing import instructions_command

    session = current_session()
    if session.bridge is not None:
        await session.bridge.ensure()
    print(await instructions_command(session, line, cell, live=True))


async def run_tools_cell(line: str, cell: str | None = None) -> None:
    """What a transformed `%agent_tools` line awaits: the table, once the page had its chance to
    answer (see notebook/bridge.py: `ensure`)."""
    from ipy_agent.ui.inspection import tools_text

    session = current_session()
    if session.bridge is not None:
        await session.bridge.ensure()
    print(tools_text(session.configured_agent()))


async def run_rewind_cell(line: str, cell: str | None = None) -> None:
    """What a transformed `%agent_rewind` cell awaits: the open notebook's page puts its cells back."""
    from .rewind import rewind_command, show_rewind

    session = current_session()
    if session.bridge is not None:
        await session.bridge.ensure()
    show_rewind(await rewind_command(session, line, live=True))


async def run_verify_cell(line: str, cell: str | None = None) -> None:
    """What a transformed `%agent_verify` line awaits: the page answers while the new kernel runs,
    and an interrupt shuts that kernel down before the cell ends (magics/verify.py)."""
    from .verify import verify_command

    session = current_session()
    if session.bridge is not None:
        await session.bridge.ensure()
    task = asyncio.ensure_future(verify_command(session, line))
    try:
        while not task.done():
            await asyncio.wait([task], timeout=TICK)
    except asyncio.CancelledError:
        task.cancel()
        await asyncio.wait([task], timeout=30)
        raise RunInterrupted(INTERRUPTED) from None
    print(task.result())


def terminal_transformer(lines: list[str]) -> list[str]:
    """Terminal IPython: pass `%agent ...` lines to the magic before help syntax sees them.

    Without this, `%agent what does this do?` is taken as a request for help on `do` (a line
    ending in `?`), and questions are the most common prompts. `%agent?` itself is left alone.
    """
    return [
        f"get_ipython().run_line_magic('agent', {ln[len('%agent') :].strip()!r})\n"
        if _LINE_RE.match(ln) and not ln.rstrip().endswith("\\")
        else ln
        for ln in lines
    ]


def current_session(shell: InteractiveShell | None = None) -> AgentSession:
    """The session of the `%agent` magics registered on `shell` (default: the running IPython)."""
    if shell is None:
        from IPython import get_ipython

        shell = get_ipython()
    magics = shell.magics_manager.registry.get("AgentMagics") if shell is not None else None
    session: AgentSession | None = getattr(magics, "session", None)
    if session is None:
        raise UsageError("ipy_agent is not loaded: run `%load_ext ipy_agent` first.")
    return session
