"""`%agent_verify`: does the notebook reproduce? The person's own NotebookVerify, without the model.

    %agent_verify                    the open notebook, in a new kernel, top to bottom
    %agent_verify other.ipynb        a notebook file (its saved outputs are compared)
    %agent_verify --timeout 300      seconds per cell
    %agent_verify --full             the whole report, as the model would read it

The person typed it, so nothing is asked; their cell policies still hold (`agent:never-run`
cells are skipped and named). It runs the same code as the tool (tools/notebook/verify.py):
the report is the same, shown as a compact table. Ctrl-C (the kernel's interrupt) stops the run
and shuts the new kernel down.
"""

from __future__ import annotations

import asyncio
import shlex
from pathlib import Path
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class

from .session import AgentSession

__all__ = ["VerifyMagics", "verify_command"]


@magics_class
class VerifyMagics(Magics):
    def __init__(self, shell: Any, session: AgentSession) -> None:
        super().__init__(shell=shell)
        self.session = session

    @line_magic
    def agent_verify(self, line: str = "") -> None:
        """Run the notebook top to bottom in a new kernel and say whether it reproduces (see the module)."""
        from ipy_agent.base.threads import run_to_end

        running: list[tuple[asyncio.AbstractEventLoop, asyncio.Task[Any]]] = []

        async def go() -> str:
            task = asyncio.current_task()
            if task is not None:
                running.append((asyncio.get_running_loop(), task))
            return await verify_command(self.session, line)

        def interrupt() -> None:
            for loop, task in running:
                loop.call_soon_threadsafe(task.cancel)

        try:
            print(run_to_end(go, interrupt=interrupt))
        except asyncio.CancelledError:
            print("Interrupted: the new kernel was shut down.")


async def verify_command(session: AgentSession, line: str) -> str:
    from ipy_agent.contract.tool import ToolError
    from ipy_agent.tools.notebook.verify import (
        file_target,
        open_notebook_target,
        report_table,
        report_text,
        verify_target,
    )

    args = shlex.split(line)
    full = "--full" in args
    args = [a for a in args if a != "--full"]
    timeout: float | None = None
    if "--timeout" in args:
        i = args.index("--timeout")
        try:
            timeout = float(args[i + 1])
        except (IndexError, ValueError):
            raise UsageError("--timeout needs seconds, e.g. %agent_verify --timeout 300") from None
        del args[i : i + 2]
    if len(args) > 1:
        raise UsageError("usage: %agent_verify [NOTEBOOK] [--timeout S] [--full]")
    bridge = session.bridge
    cwd = Path.cwd()
    try:
        if args and not (bridge is not None and bridge.connected and bridge.is_open_notebook(cwd / args[0])):
            target = file_target(cwd / args[0], args[0])
        elif bridge is not None and bridge.connected:
            target = await open_notebook_target(bridge, cwd)
        else:
            raise UsageError(
                "No notebook is open in JupyterLab with the extension here; name a notebook file: %agent_verify NB.ipynb"
            )
        report = await verify_target(target, timeout)
    except ToolError as e:
        raise UsageError(str(e)) from None
    return report_text(target.display, report) if full else report_table(report)
