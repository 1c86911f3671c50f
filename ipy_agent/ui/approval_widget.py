"""The approval prompt of a notebook tool row: what will happen, and Allow / Always / Deny
(Accept / Reject for a cell edit under review: ui/prompt_words.py has both vocabularies).

Kept apart from the run view because it is the one piece a person acts on, and the one with
threading rules: a click may arrive on a kernel subshell thread (JupyterLab sends comm messages
there), so a click only hands its answer to the event loop with `call_soon_threadsafe`; the loop
resolves the approval future and disables the buttons. The programmatic `allow()` / `always()` /
`deny(reason)` (`accept()` / `reject(reason)` for a review) go through the very same buttons,
like ipywidgets' own `Button.click()`.
"""

from __future__ import annotations

import asyncio
import html
import json
import threading
from typing import Any, Literal

import ipywidgets as W

from ipy_agent.permissions.decide import PermissionAnswer, PermissionRequest

from .comm_ack import Ack, AckText
from .diff_html import diff_html, pre_html
from .prompt_words import prompt_notes, words_for

__all__ = ["ApprovalPrompt", "what_will_happen"]


def what_will_happen(request: PermissionRequest) -> str:
    """HTML for the body of an approval prompt: the diff or command, and every warning.

    The prompt sits right under its tool row, which already says the tool's name and summary
    (for Bash, the command's description): repeating them here made a person read the same
    words three times before reaching the command."""
    name = request.display_name or request.tool_name
    shown = {request.summary, f"{name} {request.summary}"}
    parts: list[str] = []
    p = request.preview
    if p is not None and p.title and p.title not in shown:
        parts.append(f"<div><b>{html.escape(p.title)}</b></div>")
    diff = p.diff if p is not None and p.diff is not None else request.diff
    if diff is not None:
        parts.append(diff_html(diff, p.added if p else None, p.removed if p else None))
    if p is not None and p.command:
        parts.append(pre_html(p.command))
        if p.description and p.description not in shown:
            parts.append(f"<div><i>{html.escape(p.description)}</i></div>")
    if p is None or (diff is None and not p.command):
        # No preview: show the input itself so the person knows what they approve.
        parts.append(pre_html(json.dumps(request.input, indent=1, ensure_ascii=False, default=str)))
    for note in prompt_notes(request):
        parts.append(f'<div style="color:#d08700"><b>⚠ {html.escape(note)}</b></div>')
    if request.destructive:
        parts.append(
            '<div style="color:#f85149"><b>⚠ This call may destroy data (delete, overwrite or discard work) '
            "and cannot be undone from here. Read it before allowing.</b></div>"
        )
    if request.reason:
        # Why the runtime asks (a rule, the mode, not read-only): context, not the question.
        parts.append(f'<div style="opacity:0.7;font-size:90%">Asking because: {html.escape(request.reason)}</div>')
    return "".join(parts)


class ApprovalPrompt:
    """Allow / Always allow `<rule>` / Deny for one call (Accept / Reject, Accept all / Reject
    all and "Always accept edits to …" for a cell edit under review); the answer resolves an
    asyncio future."""

    def __init__(
        self,
        request: PermissionRequest,
        loop: asyncio.AbstractEventLoop,
        future: asyncio.Future[Any],
        *,
        ack: Ack | None = None,
    ) -> None:
        self.request = request
        self.rule = request.suggested_rule or request.tool_name
        self.answer: PermissionAnswer | None = None
        self._loop, self._future = loop, future
        self._clicked = False
        self._void_note = ""
        self.outcome_text = ""  # the answered prompt's line, e.g. "Denied: <reason>"
        self._lock = threading.Lock()
        self.words = words = words_for(request)
        auto = W.Layout(width="auto")
        self.allow_button = W.Button(
            description=words.allow, button_style="success", tooltip=words.allow_tip, layout=auto
        )
        self.always_button = W.Button(description=words.always, tooltip=words.always_tip, layout=auto)
        self.deny_button = W.Button(description=words.deny, button_style="danger", tooltip=words.deny_tip, layout=auto)
        # `ack`: the cell awaits the run, so each typed key must be acknowledged (ui/comm_ack.py).
        self.reason = AckText(
            ack=ack,
            placeholder=words.reason,
            layout=W.Layout(flex="1 1 auto", min_width="14em"),
        )
        # A tool's lasting denials ("Never run this cell"), beside Deny.
        actions = request.preview.actions if request.preview is not None else ()
        self.action_buttons = [
            W.Button(description=a.label, tooltip=a.message, button_style="warning", layout=auto) for a in actions
        ]
        for button, action in zip(self.action_buttons, actions, strict=True):
            button.on_click(lambda _b, label=action.label: self._act(label))
        # A change staged in the cell for review: Accept all / Reject all, as the page offers them.
        self.review = request.preview.review if request.preview is not None else None
        self.all_buttons = (
            [
                W.Button(
                    description="Accept all",
                    tooltip="Accept this and every other change the agent proposes in this run",
                    layout=auto,
                ),
                W.Button(
                    description="Reject all",
                    tooltip="Reject this and every other change the agent proposes in this run",
                    layout=auto,
                ),
            ]
            if self.review is not None
            else []
        )
        for button, behavior in zip(self.all_buttons, ("allow", "deny"), strict=False):
            button.on_click(lambda _b, b=behavior: self.answer_all(b))
        self.outcome = W.HTML()
        self.allow_button.on_click(lambda _b: self._click("allow"))
        self.always_button.on_click(lambda _b: self._click("always"))
        self.deny_button.on_click(lambda _b: self._click("deny"))
        self.widget = W.VBox(
            [
                W.HTML(what_will_happen(request)),
                W.HBox(
                    [
                        # A review: Accept, Reject, Accept all, Reject all, then the lasting choice.
                        *(
                            (self.allow_button, self.deny_button, *self.all_buttons, self.always_button)
                            if self.review is not None
                            else (self.allow_button, self.always_button, self.deny_button)
                        ),
                        *self.action_buttons,
                        self.reason,
                    ],
                    layout=W.Layout(flex_flow="row wrap"),
                ),
                self.outcome,
            ],
            layout=W.Layout(border="1px solid rgba(208,135,0,0.6)", padding="4px", margin="2px 0 2px 1.5em"),
        )

    # --- the programmatic API: the same path as a click ------------------------------------
    def allow(self) -> None:
        self.allow_button.click()

    def always(self) -> None:
        self.always_button.click()

    def deny(self, reason: str = "") -> None:
        if reason:
            self.reason.value = reason
        self.deny_button.click()

    # A cell edit under review says Accept / Reject: the same buttons.
    accept = allow
    reject = deny

    def focus(self) -> None:
        """Put the keyboard in the reason box: the browser scrolls the prompt into view. Not for a
        change drawn in its cell: the page scrolls there, and the prompt would scroll it away."""
        if self.review is not None and self.review.shown:
            return
        self.reason.focus()

    @property
    def pending(self) -> bool:
        return not self._clicked and not self._future.done()

    @property
    def answered_status(self) -> str | None:
        """How the question ended, in a row's words: "done" (allowed, answered), "denied"
        (denied, declined, skipped) or "cancelled" (never answered); None while it is open."""
        if self.pending:
            return None
        if self.answer is None:
            return "cancelled"
        return "denied" if self.answer.behavior == "deny" else "done"

    # --- internals -------------------------------------------------------------------------
    def _click(self, behavior: Literal["allow", "always", "deny"]) -> None:
        message = self.reason.value.strip() if behavior == "deny" else ""
        rule = self.rule if behavior == "always" else None
        self.resolve(PermissionAnswer(behavior=behavior, message=message, rule=rule))

    def answer_all(self, behavior: Literal["allow", "deny"], reason: str | None = None) -> None:
        """Accept all / Reject all: this answer, and a standing one for the run's later staged
        changes. `reason`: a rejection's, when typed elsewhere (the page's box); else the prompt's."""
        if self.review is None or not self.pending:
            return
        typed = self.reason.value if reason is None else reason
        reason = typed.strip() if behavior == "deny" else ""
        self.review.stand(behavior, reason)
        self._void_note = ("Accepted (Accept all)" if behavior == "allow" else "Rejected (Reject all)") + (
            f": {reason}" if reason else ""
        )
        self.resolve(PermissionAnswer(behavior=behavior, message=reason))

    def _act(self, label: str) -> None:
        self.resolve(PermissionAnswer(behavior="deny", message=self.reason.value.strip(), action=label))

    def resolve(self, answer: PermissionAnswer) -> bool:
        """Answer from any thread; the first answer wins. False when it came too late."""
        with self._lock:
            if self._clicked or self._future.done():
                return False
            self._clicked = True
        try:
            self._loop.call_soon_threadsafe(self._settle, answer)
        except RuntimeError:  # the loop is closed: the run is long over
            return False
        return True

    def _settle(self, answer: PermissionAnswer) -> None:
        if self._future.done():
            return
        self.answer = answer
        self._future.set_result(answer)
        words = {"allow": self.words.allowed, "always": self.words.always_allowed, "deny": self.words.denied}
        if answer.action:
            words["deny"] = f"Denied: {answer.action}"
        note = self._void_note or words[answer.behavior]
        if answer.behavior == "deny" and answer.message and not self._void_note:
            note += f": {answer.message}"
        self._finish(note)

    def answered_elsewhere(self, answer: PermissionAnswer, note: str) -> bool:
        """The same question was answered where the change is staged (in the cell): this prompt
        resolves with that answer and shows `note`. False when the prompt was answered first."""
        with self._lock:
            if self._clicked or self._future.done():
                return False
            self._void_note = note
        return self.resolve(answer)

    def void(self, note: str, message: str) -> None:
        """Deny a prompt nobody will answer any more (the view was closed), so the run goes on."""
        self._void_note = note
        self.resolve(PermissionAnswer(behavior="deny", message=message))

    def cancel(self, note: str = "Cancelled before an answer") -> None:
        with self._lock:
            self._clicked = True
        self._finish(note)

    def _finish(self, note: str) -> None:
        """`note`: plain text, what the person sees on the answered prompt (and the record keeps)."""
        self.reason.stop_acking()
        self.outcome_text = note
        for w in (
            self.allow_button,
            self.always_button,
            self.deny_button,
            *self.all_buttons,
            *self.action_buttons,
            self.reason,
        ):
            w.disabled = True
        self.outcome.value = f'<i style="opacity:0.8">{html.escape(note)}</i>'
        # Answered: shrink to the outcome line. Left open, every answered prompt kept its diff and
        # greyed buttons on screen, and the row's Details repeated the same diff right below it.
        self.widget.children = (self.outcome,)
        self.widget.layout.border = "none"
        self.widget.layout.padding = "0"
