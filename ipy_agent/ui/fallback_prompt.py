"""Notice an approval prompt no page shows or can answer, and ask through the extension instead.

Why this exists: a prompt is an ipywidgets widget; a page that cannot draw it, or whose clicks
never reach the kernel, leaves the run waiting with nothing to click. It happens when the
server's environment lacks the widgets extension (jupyterlab_widgets): the page answers each
widget comm the kernel opens with a close. It happened in Notebook 7 when another page closed
the widget comms (notebook/comm_guard.py fixes the cause found). Nothing in stock ipywidgets
tells the kernel that a view was drawn, so the kernel asks the page that has the ipy_agent
extension, which can see the notebook's DOM.

How: a foreground prompt's widget carries a DOM class naming it (`mark`). While it is open,
`watch` asks the connected page, over the live-notebook comm, whether that element is on the
page (`prompt_shown`: the page looks for it for up to `ACK_WAIT` seconds and answers at once
when it appears: the view-side acknowledgement). The prompt counts as dead when the kernel
lost its widget comms (a page closed them) or the page says it does not show it. Then the cell
gets one line saying what happened and what to do, and the page draws Allow / Always allow /
Deny and a reason box under the running cell (`ask_permission`); for a cell edit under review
Accept / Reject, Accept all / Reject all and "Always accept edits to …" (`review`,
`always_label`: the prompt's own words, ui/prompt_words.py); or, for AskUserQuestion, each
question's options, a box for an answer of one's own, Answer and Skip; the reply is the person's
answer, given to the same prompt. Whichever path answers first wins; a late one is ignored,
and the page's buttons are withdrawn when the widget answered first (`withdraw_prompt`).
Without a connected page and with the widget comms lost, the line says so and how to stop.
Without a page and with the comms open, nothing can be known, and nothing is said: widgets
may well work (VS Code, a page without the extension).
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Callable
from typing import Any, Literal

from ipy_agent.history.blocks import JsonObject
from ipy_agent.notebook.bridge import BridgeError
from ipy_agent.permissions.decide import PermissionAnswer

from .approval_widget import ApprovalPrompt
from .prompt_words import prompt_notes
from .question_widget import SKIPPED

__all__ = ["ACK_WAIT", "comms_lost", "dead_line", "mark", "running_cell_id", "watch"]

ACK_WAIT = 4.0  # seconds a page has to show a prompt before the fallback is offered
CLASS_PREFIX = "ipy-agent-prompt-"
_BEHAVIORS = ("allow", "always", "deny", "accept_all", "reject_all")  # the last two: a review's


def mark(prompt: ApprovalPrompt) -> str:
    """Give the prompt's widget a DOM class the page can look for; returns the prompt's id."""
    prompt_id = uuid.uuid4().hex[:12]
    prompt.widget.add_class(CLASS_PREFIX + prompt_id)
    return prompt_id


def running_cell_id() -> str | None:
    """The id of the cell running now, as the page sent it (`cellId` in the request's metadata)."""
    try:
        from IPython import get_ipython

        parent = get_ipython().kernel.get_parent("shell")
    except Exception:
        return None
    cell_id = ((parent or {}).get("metadata") or {}).get("cellId")
    return cell_id if isinstance(cell_id, str) and cell_id else None


def comms_lost(prompt: ApprovalPrompt) -> bool:
    """True when the kernel no longer has the comm of the prompt's buttons: a page closed it,
    so no click can arrive."""
    button = getattr(prompt, "answer_button", None) or prompt.allow_button  # a question's, or an approval's
    comm = getattr(button, "comm", None)
    return comm is None or bool(getattr(comm, "_closed", False))


def dead_line(what: str, *, page: bool, lost: bool, question: bool = False, review: bool = False) -> str:
    """The one line the cell gets: what happened, and what to do."""
    why = (
        "its buttons' connection to the kernel was closed by the page (is the widgets extension, "
        "jupyterlab_widgets, installed where the server runs?)"
        if lost
        else "this page did not draw it"
    )
    if question and page:
        return (
            f"ipy_agent: the question {what} is not usable here ({why}). "
            "Answer it in the boxes the ipy_agent extension drew below this cell."
        )
    if question:
        return (
            f"ipy_agent: the question {what} is not usable here ({why}). Interrupt the kernel (the ■ button, "
            "or Kernel > Interrupt) to stop the run, then ask again with the answer in your request."
        )
    if page:
        return (
            f"ipy_agent: the approval prompt for {what} is not usable here ({why}). "
            f"Answer with the {'Accept / Reject' if review else 'Allow / Deny'} buttons the ipy_agent extension "
            "drew below this cell."
        )
    return (
        f"ipy_agent: the approval prompt for {what} is not usable here ({why}), and no page with the "
        "ipy_agent extension is connected to answer it instead. Interrupt the kernel (the ■ button, or "
        "Kernel > Interrupt) to stop the run; run the agent with --allow RULE for the calls you approve, "
        "or --no-widgets to have the rest denied."
    )


async def _shown(bridge: Any, prompt_id: str, wait: float) -> bool | None:
    """The page's acknowledgement: True when it shows the prompt, None when no page answered."""
    if bridge is None or not bridge.connected:
        await asyncio.sleep(wait)
        return None
    try:
        result = await bridge.request("prompt_shown", timeout=wait + 5.0, prompt_id=prompt_id, wait_ms=int(wait * 1000))
    except BridgeError:
        return None
    return bool(result.get("shown"))


async def watch(
    prompt: ApprovalPrompt,
    prompt_id: str,
    bridge: Any,
    *,
    cell_id: str | None,
    say: Callable[[str], None] = print,
    wait: float = ACK_WAIT,
) -> None:
    """Run beside an open prompt; the caller cancels it when the prompt is answered."""
    shown = await _shown(bridge, prompt_id, wait)
    lost = comms_lost(prompt)
    if not prompt.pending or (shown is not False and not lost):
        return  # acknowledged, or nothing can be known
    request = prompt.request
    what = f"{request.display_name or request.tool_name} {request.summary}".strip()
    questions = _questions(prompt)
    page = shown is not None and bridge.connected
    review = not questions and prompt.review is not None
    say(dead_line(what, page=page, lost=lost, question=bool(questions), review=review))
    if not page:
        return
    asked = False
    try:
        asked = True
        reply = await bridge.request(
            "ask_permission",
            timeout=None,
            prompt_id=prompt_id,
            cell_id=cell_id,
            title=what,
            detail=_detail(prompt),
            rule=prompt.rule,
            review=review,
            always_label=prompt.words.always if not questions else "",
            **({"questions": questions} if questions else {}),
        )
        asked = False  # the page answered; its buttons say so
        behavior = reply.get("behavior")
        if behavior not in _BEHAVIORS:
            say(
                f"ipy_agent: the page's answer {behavior!r} is not one of {', '.join(_BEHAVIORS)}; the prompt stays open."
            )
            return
        if behavior in ("accept_all", "reject_all"):
            if prompt.review is None:
                say(f"ipy_agent: the page's answer {behavior!r} is for a review; the prompt stays open.")
                return
            prompt.answer_all("allow" if behavior == "accept_all" else "deny", str(reply.get("message") or ""))
            return
        prompt.resolve(_answer(prompt, behavior, reply, questions))
    except BridgeError as e:
        asked = False
        say(f"ipy_agent: the page could not draw the answer buttons ({e}). Interrupt the kernel to stop the run.")
    finally:
        if asked:  # the widget answered first (or the run was stopped): take the page's buttons away
            with contextlib.suppress(Exception):
                bridge.post("withdraw_prompt", prompt_id=prompt_id, outcome=prompt.outcome_text or "Answered")


def _questions(prompt: ApprovalPrompt) -> list[JsonObject]:
    """AskUserQuestion's questions as the page draws them; [] for an approval prompt."""
    preview = prompt.request.preview
    return [
        {
            "question": q.question,
            "header": q.header,
            "options": [{"label": o.label, "description": o.description} for o in q.options],
            "multi_select": q.multi_select,
        }
        for q in (preview.questions if preview is not None else ())
    ]


def _answer(
    prompt: ApprovalPrompt,
    behavior: Literal["allow", "always", "deny"],
    reply: JsonObject,
    questions: list[JsonObject],
) -> PermissionAnswer:
    """The page's reply as the prompt's own answer: for questions, Answer or Skip as in the widget."""
    if questions:
        if behavior == "deny":
            return PermissionAnswer(behavior="deny", message=SKIPPED)
        got = reply.get("answers")
        given: JsonObject = got if isinstance(got, dict) else {}  # an older page sends none
        asked = [str(q["question"]) for q in questions]  # only what was asked, as text
        return PermissionAnswer(behavior="allow", answers={q: str(given.get(q) or "") for q in asked})
    return PermissionAnswer(
        behavior=behavior,
        message=str(reply.get("message") or "").strip() if behavior == "deny" else "",
        rule=prompt.rule if behavior == "always" else None,
    )


def _detail(prompt: ApprovalPrompt) -> str:
    """The prompt's body as plain text: the command or the diff, and why it asks."""
    request = prompt.request
    p = request.preview
    parts: list[str] = []
    if p is not None and p.command:
        parts.append(p.command)
    diff = p.diff if p is not None and p.diff is not None else request.diff
    if diff is not None:
        parts.append(str(diff))
    parts.extend(f"⚠ {note}" for note in prompt_notes(request))
    if request.reason:
        parts.append(f"Asking because: {request.reason}")
    return "\n".join(parts)[:4000]
