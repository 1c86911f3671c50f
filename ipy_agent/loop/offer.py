"""What the model is offered for one request: the tools in their API form, MCP servers' tools,
what a tool warns the person about before a run, and the news tools give the model at its next
turn (a background command ended).

The registry (runtime/registry.py) decides which tools are exposed this turn; this module turns
them into the request's tool list, hiding a tool whose description fails rather than failing the
request, and keeps MCP servers' tools in the registry up to date.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence

from ipy_agent.base.surfaces import refresh as refresh_surfaces
from ipy_agent.contract.tool import Tool
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.history.blocks import Message, ToolSpec
from ipy_agent.history.messages import append_user
from ipy_agent.mcp import McpManager
from ipy_agent.permissions.decide import Approver, PermissionRules
from ipy_agent.runtime.registry import Exposure, ToolRegistry
from ipy_agent.runtime.trace import AgentEvent, NoticeEvent

__all__ = ["begin_run", "end_session", "offer_tools", "remind", "sync_mcp", "warn_once"]

Emit = Callable[[AgentEvent], None]

_SAID: set[str] = set()  # warnings tools gave that were said in this process (the kernel)


def offer_tools(
    registry: ToolRegistry, rules: PermissionRules, ctx: ToolContext, *, simple: bool, emit: Emit | None
) -> tuple[Exposure, list[ToolSpec]]:
    """The tools for this request and their API form; a tool whose description fails is hidden
    (and the person is told, when `emit` is given)."""
    exposure = registry.exposed(ctx, rules, simple=simple)
    offered, hidden = [], dict(exposure.hidden)
    api: list[ToolSpec] = []
    for tool in exposure.offered:
        try:
            api.append(tool.to_api(ctx))
            offered.append(tool)
        except Exception as e:
            hidden[tool.name] = f"its description failed ({type(e).__name__}: {e})"
            if emit is not None:
                emit(NoticeEvent(text=f"Tool {tool.name} is hidden this turn: {hidden[tool.name]}", level="warning"))
    return Exposure(offered=tuple(offered), hidden=hidden), api


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


async def sync_mcp(mcp: McpManager, registry: ToolRegistry, approver: Approver | None, emit: Emit) -> None:
    """MCP servers: start them at the first request that needs them (asking about project
    ones), pick up changed tool lists, tell the person what is down; then offer their tools."""
    if mcp.idle:
        return
    for level, text in await mcp.sync(approver):
        emit(NoticeEvent(text=text, level=level))
    mcp.skipped.update(registry.set_group("mcp", mcp.tools()))


def remind(messages: list[Message], tools: Sequence[Tool], ctx: ToolContext, emit: Emit) -> None:
    """What tools have to tell the model since its last turn (`Tool.take_reminders`): added to
    the person's last message, which ends the history when a turn begins, and shown in the cell."""
    notes: list[str] = []
    for tool in tools:
        try:
            notes += tool.take_reminders(ctx)
        except Exception:  # news is a courtesy; a broken tool must not stop the turn
            continue
    if not notes or not messages or messages[-1]["role"] != "user":
        return
    for note in notes:
        emit(NoticeEvent(text=note, level="info"))
    text = "\n".join(notes)
    append_user(messages, [{"type": "text", "text": f"<system-reminder>\n{text}\n</system-reminder>"}])


def end_session(session: dict[str, object]) -> None:
    """Forget what tools kept for the conversation, closing what can be closed first (Bash's
    background commands are stopped)."""
    for value in list(session.values()):
        close = getattr(value, "close", None)
        if callable(close):
            with contextlib.suppress(Exception):
                close()
    session.clear()
