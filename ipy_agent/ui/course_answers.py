"""Prompts answered automatically, for the course build and the tests only, and said so in the cell.

A teaching notebook is met two ways. In JupyterLab the learner answers each prompt with the real
widgets: Allow or Deny, Accept or Reject a cell edit, a question's option. The course build
(`python -m examples.course.build`) and the tests run the same notebook headless, where nobody
clicks: there a prompt would wait until the cell's timeout. `IPY_AGENT_COURSE_AUTOANSWER=1` in
the kernel's environment makes those runs answer each prompt through its own buttons, with the
answer the scene's transcript gives for that call (`"person"` in the transcript file,
models/transcript.py): `"allow"`, `"deny"`, `"deny: a reason"`, or a question's option label;
a call the transcript does not name is allowed, a question gets its first option. Only the
build and the tests set it; it is off by default, and when it is on every run's cell says so
first (`NOTICE`), so no reader takes an automatic answer for a person's.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable
from typing import Any

from ipy_agent.permissions.decide import Approver, PermissionAnswer, PermissionRequest

from .approval_widget import ApprovalPrompt
from .elicitation_form import ElicitationForm
from .question_widget import QuestionPrompt

__all__ = ["AUTOANSWER_ENV", "NOTICE", "answer_prompt", "autoanswer_env", "autoanswering"]

AUTOANSWER_ENV = "IPY_AGENT_COURSE_AUTOANSWER"
NOTICE = (
    "Prompts in this run are answered automatically for the course build "
    f"({AUTOANSWER_ENV} is set); in JupyterLab without it, you answer them."
)


def autoanswer_env() -> bool:
    """True when the course build or a test asked for automatic answers."""
    return os.environ.get(AUTOANSWER_ENV, "").strip().lower() not in ("", "0", "false", "no")


def answer_prompt(prompt: ApprovalPrompt, scripted: str | None) -> None:
    """Answer `prompt` through its own buttons, as `scripted` says (None: allow, or the first option)."""
    if isinstance(prompt, ElicitationForm):
        answer_form(prompt, scripted)
        return
    if isinstance(prompt, QuestionPrompt):
        for index, asked in enumerate(prompt.asked):
            labels = [o.label for o in asked.question.options]
            prompt.choose(index, scripted if scripted in labels else labels[0])
        prompt.submit()
        return
    behavior, _, reason = (scripted or "allow").partition(":")
    if behavior.strip() == "deny":
        prompt.deny(reason.strip())
    else:
        prompt.allow()


def answer_form(form: ElicitationForm, scripted: str | None) -> None:
    """An MCP server's form: "decline" or "cancel", or a JSON object of the fields to fill in
    before Submit (None: submit the form as prefilled)."""
    if scripted in ("decline", "cancel"):
        (form.decline if scripted == "decline" else form.cancel_form)()
        return
    for name, value in (json.loads(scripted) if scripted else {}).items():
        form.fill(name, value)
    form.submit()


def autoanswering(
    approver: Callable[[PermissionRequest], Any],
    prompts: dict[str, ApprovalPrompt],
    answers: dict[str, str],
) -> Approver:
    """`approver` (a run view's, which opens a prompt in `prompts` by tool_use id), with each
    prompt it opens answered at once from `answers`."""

    async def answered(request: PermissionRequest) -> PermissionAnswer:
        asking: asyncio.Future[PermissionAnswer] = asyncio.ensure_future(approver(request))
        while request.tool_use_id not in prompts and not asking.done():
            await asyncio.sleep(0)  # the view opens its prompt before it first waits
        prompt = prompts.get(request.tool_use_id)
        if prompt is not None and prompt.pending:
            answer_prompt(prompt, answers.get(request.tool_use_id))
        return await asking

    return answered
