"""The tools around a conversation's runs: what each run starts with, and what the conversation's
end closes.

At the start of each run the executable surfaces are looked at afresh (sys.path, Jupyter's and
git's paths may have changed: base/surfaces.py) and what a tool warns about its state here (no OS
sandbox, say) is said once per kernel. When the conversation ends (`Agent.reset`, a Task's
subagent done) what tools kept in its session is closed first (Bash's background commands stop)
and forgotten.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence

from ipy_agent.base.surfaces import refresh as refresh_surfaces
from ipy_agent.contract.tool import Tool
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.runtime.trace import AgentEvent, NoticeEvent

__all__ = ["begin_run", "end_session", "warn_once"]

Emit = Callable[[AgentEvent], None]

_SAID: set[str] = set()  # warnings tools gave that were said in this process (the kernel)


def begin_run(tools: Sequence[Tool], ctx: ToolContext, emit: Emit) -> None:
    """What each run starts with: the executable surfaces looked at afresh (sys.path, Jupyter's
    and git's paths may have changed: base/surfaces.py), and the tools' warnings."""
    refresh_surfaces()
    warn_once(tools, ctx, emit)


def warn_once(tools: Sequence[Tool], ctx: ToolContext, emit: Emit) -> None:
    """What a tool warns about its state here (no OS sandbox, say), once per kernel."""
    for tool in tools:
        try:
            status = tool.status(ctx)
        except Exception:  # a status is a courtesy; a broken one is not the run's problem
            continue
        if status is not None and status.warning and status.text not in _SAID:
            _SAID.add(status.text)
            emit(NoticeEvent(text=status.text, level="warning"))


def end_session(session: dict[str, object]) -> None:
    """Forget what tools kept for the conversation, closing what can be closed first (Bash's
    background commands are stopped)."""
    for value in list(session.values()):
        close = getattr(value, "close", None)
        if callable(close):
            with contextlib.suppress(Exception):
                close()
    session.clear()
