"""Approvers for runs nobody is watching, and a timeout for prompts nobody answers.

In nbclient, papermill or CI a kernel cannot tell whether a widget front end is attached, so a
prompt there would wait forever. With widgets switched off the run gets `NonInteractiveApprover`:
only what the rules and the permission mode allow runs, and every other call is denied with a
message that names the rule that would allow it, for the model (which can then try another way)
and for the person reading the output afterwards. `with_timeout` wraps an interactive approver so
an unattended prompt is denied with a note after a while (off by default).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from ipy_agent.contract.tool import maybe_await
from ipy_agent.permissions.decide import Approver, PermissionAnswer, PermissionRequest

__all__ = ["NonInteractiveApprover", "allow_hint", "no_person", "with_timeout"]


def allow_hint(rule: str) -> str:
    """How a person allows `rule` with the magics, in one sentence."""
    return (
        f"To allow it, add the rule {rule!r}: `%agent --allow {rule!r} ...` for one run, "
        f'`%config AgentMagics.allow = [{rule!r}]`, or {{"permissions": {{"allow": [{json.dumps(rule)}]}}}} in '
        ".ipy_agent/settings.json; or choose a permission mode that allows it (--mode acceptEdits for edits)."
    )


def _unanswered(message: str) -> PermissionAnswer:
    """A denial no person gave: the model is told the call was not approved, not refused."""
    return PermissionAnswer(behavior="deny", automatic=True, message=message)


def no_person(why: str) -> PermissionAnswer:
    """The answer to a question (AskUserQuestion) nobody can answer: said at once, never waited for."""
    return _unanswered(
        f"There is no person to ask ({why}). Choose yourself, say in your reply which assumption you made, and go on."
    )


def _asks_questions(request: PermissionRequest) -> bool:
    return request.preview is not None and bool(request.preview.questions)


class NonInteractiveApprover:
    """Denies every call that reached the prompt, naming the rule that would have allowed it.

    `denied` keeps the requests it refused, so a caller can list them after the run.
    """

    interactive = False  # it answers at once: a change is not staged in the page for it (permissions/decide.py)

    def __init__(self, why: str = "widgets are switched off") -> None:
        self.why = why
        self.denied: list[PermissionRequest] = []

    def __call__(self, request: PermissionRequest) -> PermissionAnswer:
        self.denied.append(request)
        if _asks_questions(request):
            return no_person(f"this run is non-interactive: {self.why}")
        rule = request.suggested_rule or request.tool_name
        return _unanswered(
            f"No one can answer approval prompts in this non-interactive run ({self.why}), so this "
            f"{request.tool_name} call was not run. {allow_hint(rule)}"
        )


def with_timeout(approver: Approver, seconds: float | None) -> Approver:
    """`approver`, but a prompt left unanswered for `seconds` is denied with a note.

    None or a value <= 0 returns `approver` unchanged. The wrapped approver is cancelled at the
    deadline, so a widget prompt can close its buttons.
    """
    if seconds is None or seconds <= 0:
        return approver

    async def timed(request: PermissionRequest) -> Any:
        try:
            return await asyncio.wait_for(maybe_await(approver(request)), timeout=seconds)
        except TimeoutError:
            if not isinstance(request, PermissionRequest):  # an MCP server's form: nobody answered it
                return "cancel"
            if _asks_questions(request):
                return no_person(f"no one answered within {seconds:g} s")
            rule = request.suggested_rule or request.tool_name
            return _unanswered(
                f"No one answered the approval prompt within {seconds:g} s "
                f"(AgentMagics.approval_timeout), so this {request.tool_name} call was denied. "
                f"{allow_hint(rule)}"
            )

    return timed
