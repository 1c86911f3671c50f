"""Asking the person, and telling them first: the Notification hooks fire wherever a run waits.

Every question a run puts to the person passes through its approver: a permission prompt, the
trust prompt of a project's MCP server, an MCP server's form (elicitation). `notifying` wraps
that approver once, where the agent hands it to a run (`Agent.ask_person`), so each question
fires the Notification hooks as it opens, whichever tool, server or subagent asked, with
Claude Code's `notification_type`: "permission_prompt" or "elicitation_dialog". A tool that
waits for the person without a prompt (TodoHuman's TODO(human) cell) calls the same notifier
(`NOTIFY_PERSON` in the conversation's session) with "idle_prompt". An approver that answers by
itself (`interactive = False`: no one is there) asks no one, so it notifies no one.

The hooks run alongside the prompt, not before it (a slow notifier does not hold the question
back), and the answer is returned only once they are done, so what they did is done when the
run goes on. What a Notification hook answers is ignored: it tells, it does not decide.
"""

from __future__ import annotations

import asyncio
import contextlib

from ipy_agent.contract.hooks import NotifyPerson
from ipy_agent.contract.tool import maybe_await
from ipy_agent.mcp.elicitation import ElicitationRequest
from ipy_agent.permissions.decide import AnswerLike, Approver, PermissionRequest

__all__ = ["notification_for", "notifying"]


def notification_for(request: PermissionRequest | ElicitationRequest) -> tuple[str, str]:
    """The Notification's (message, notification_type) for a question to the person."""
    if isinstance(request, ElicitationRequest):
        return f"The MCP server {request.server} asks you: {request.message}", "elicitation_dialog"
    what = request.display_name or request.tool_name
    summary = f": {request.summary}" if request.summary else ""
    return f"ipy_agent needs your permission to use {what}{summary}", "permission_prompt"


def notifying(approver: Approver | None, notify: NotifyPerson) -> Approver | None:
    """`approver`, firing the Notification hooks (`notify`) as each of its questions opens."""
    if approver is None or getattr(approver, "interactive", True) is False:
        return approver
    asks = approver

    async def ask(request: PermissionRequest) -> AnswerLike:
        told = asyncio.ensure_future(notify(*notification_for(request)))
        try:
            answer: AnswerLike = await maybe_await(asks(request))
        finally:
            with contextlib.suppress(Exception):
                await told
        return answer

    return ask
