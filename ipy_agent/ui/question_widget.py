"""The prompt of an AskUserQuestion row: each question with its options as buttons, a box for
an answer of the person's own ("Other"), and Answer / Skip.

It is an approval prompt in every way the run view cares about (pending, cancel, void, focus,
the outcome line the record keeps), so it opens, waits, is announced and is cancelled by an
interrupt exactly like one; only what it shows and what its answer carries differ. A click
reads the widgets' values (already synced from the browser) and hands the answer to the event
loop with `call_soon_threadsafe`, as ApprovalPrompt does. `choose(i, label)`, `type_other(i,
text)`, `submit()` and `skip()` go through the same widgets, for code and tests.
"""

from __future__ import annotations

import asyncio
import html
import threading
from typing import Any

import ipywidgets as W

from ipy_agent.contract.questions import OTHER, Question
from ipy_agent.permissions.decide import PermissionAnswer, PermissionRequest

from .approval_widget import ApprovalPrompt
from .comm_ack import Ack, AckText

__all__ = ["QuestionPrompt"]

SKIPPED = "The person chose not to answer these questions. Do not ask them again; choose yourself and say so."


class _Asked:
    """The widgets of one question."""

    def __init__(self, question: Question, ack: Ack | None) -> None:
        self.question = question
        labels = [o.label for o in question.options]
        tips = [o.description or o.label for o in question.options]
        if question.multi_select:
            self.checks = [W.Checkbox(description=label, value=False, indent=False) for label in labels]
            self.choice: W.ToggleButtons | None = None
            choices: W.Widget = W.VBox(self.checks)
        else:
            self.checks = []
            # Each button as wide as its label: the default width (about 150 px) cut "Grid search
            # (recommended)" to "Grid search (reco…" with the rest of the line empty. The buttons
            # wrap onto more lines when they need more room than the prompt has.
            self.choice = W.ToggleButtons(
                options=[*labels, OTHER],
                value=None,
                tooltips=[*tips, "Type your answer"],
                style=W.ToggleButtonsStyle(button_width="auto"),
            )
            choices = self.choice
        self.other = AckText(
            ack=ack, placeholder=f"{OTHER}: your own answer", layout=W.Layout(flex="1 1 auto", min_width="14em")
        )
        notes = "".join(
            f"<li><b>{html.escape(o.label)}</b>: {html.escape(o.description)}</li>"
            for o in question.options
            if o.description
        )
        head = f"<div><b>{html.escape(question.question)}</b>"
        head += " <i style='opacity:0.7'>(choose any)</i></div>" if question.multi_select else "</div>"
        self.widget = W.VBox(
            [W.HTML(head + (f"<ul style='margin:0'>{notes}</ul>" if notes else "")), choices, self.other]
        )

    def answer(self) -> str:
        own = str(self.other.value).strip()
        if self.choice is not None:
            chosen = self.choice.value
            # Typing an answer of one's own is choosing "Other", unless an option was clicked.
            return own if chosen in (None, OTHER) else str(chosen)
        picked = [c.description for c in self.checks if c.value]
        return ", ".join([*picked, *([own] if own else [])])

    def disable(self) -> None:
        self.other.stop_acking()
        for w in [*self.checks, self.other, *([self.choice] if self.choice is not None else [])]:
            w.disabled = True


class QuestionPrompt(ApprovalPrompt):
    """The questions of one AskUserQuestion call; the answer resolves the approval future."""

    def __init__(  # the approval prompt's state, with other widgets
        self,
        request: PermissionRequest,
        loop: asyncio.AbstractEventLoop,
        future: asyncio.Future[Any],
        *,
        ack: Ack | None = None,
    ) -> None:
        self.request = request
        self.rule = request.tool_name
        self.answer: PermissionAnswer | None = None
        self._loop, self._future = loop, future
        self._clicked = False
        self._void_note = ""
        self.outcome_text = ""
        self._lock = threading.Lock()
        questions = request.preview.questions if request.preview is not None else ()
        self.asked = [_Asked(q, ack) for q in questions]
        self.answer_button = W.Button(description="Answer", button_style="success", layout=W.Layout(width="auto"))
        self.skip_button = W.Button(
            description="Skip", tooltip="Do not answer; the agent chooses itself", layout=W.Layout(width="auto")
        )
        self.answer_button.on_click(lambda _b: self._submit())
        self.skip_button.on_click(lambda _b: self.resolve(PermissionAnswer(behavior="deny", message=SKIPPED)))
        self.outcome = W.HTML()
        self.widget = W.VBox(
            [*(a.widget for a in self.asked), W.HBox([self.answer_button, self.skip_button]), self.outcome],
            layout=W.Layout(border="1px solid rgba(47,129,247,0.6)", padding="4px", margin="2px 0 2px 1.5em"),
        )

    # --- the programmatic API: the same widgets as a person ---------------------------------
    def choose(self, index: int, label: str) -> None:
        asked = self.asked[index]
        if asked.choice is not None:
            asked.choice.value = label
        else:
            next(c for c in asked.checks if c.description == label).value = True

    def type_other(self, index: int, text: str) -> None:
        self.asked[index].other.value = text

    def submit(self) -> None:
        self.answer_button.click()

    def skip(self) -> None:
        self.skip_button.click()

    def focus(self) -> None:
        if self.asked:
            self.asked[0].other.focus()

    # --- internals -------------------------------------------------------------------------
    def _submit(self) -> None:
        answers = {a.question.question: a.answer() for a in self.asked}
        self.resolve(PermissionAnswer(behavior="allow", answers=answers))

    def _settle(self, answer: PermissionAnswer) -> None:
        if self._future.done():
            return
        self.answer = answer
        self._future.set_result(answer)
        if self._void_note:
            note = self._void_note
        elif answer.answers is not None:
            note = "Answered: " + "; ".join(
                f"{a.question.header}: {answer.answers.get(a.question.question) or '(no answer)'}" for a in self.asked
            )
        else:
            note = "Skipped"
        self._finish(note)

    def _finish(self, note: str) -> None:
        self.outcome_text = note
        for asked in self.asked:
            asked.disable()
        self.answer_button.disabled = self.skip_button.disabled = True
        self.outcome.value = f'<i style="opacity:0.8">{html.escape(note)}</i>'
        questions = "".join(f"<div>{html.escape(a.question.question)}</div>" for a in self.asked)
        self.widget.children = (W.HTML(questions), self.outcome)
        self.widget.layout.border = "none"
        self.widget.layout.padding = "0"
