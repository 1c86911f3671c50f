"""The form an MCP server asks the person to fill in (elicitation), built from its JSON Schema.

Each field of the schema becomes a widget: a text box for a string (a password box for
`format: password`), a text box read as a number or an integer, a checkbox for a boolean with a
default (yes / no / left out without one), a drop-down for an enum (titled or not) and check
boxes for a multi-select. Defaults are prefilled; required fields are marked with `*`. Submit
sends what the person filled in, with the schema's defaults for the rest; an answer that does
not fit the schema stays open with what is wrong. Decline and Cancel say no. It is an approval
prompt in every way the run view cares about (pending, cancel, void, focus, the outcome line),
like the question prompt; clicks hand their answer to the event loop with `call_soon_threadsafe`.
`fill(name, value)`, `submit()`, `decline()` and `cancel_form()` go through the same widgets.
"""

from __future__ import annotations

import asyncio
import html
import threading
from typing import Any

import ipywidgets as W

from ipy_agent.history.blocks import JsonObject, JsonValue
from ipy_agent.mcp.elicitation import (
    ElicitationAnswer,
    ElicitationRequest,
    choices,
    field_kind,
    normalize_elicitation,
    problems,
    record_text,
    with_defaults,
)
from ipy_agent.permissions.decide import PermissionAnswer, PermissionRequest

from .approval_widget import ApprovalPrompt

__all__ = ["ElicitationForm"]

_UNSET = "—"


class _Field:
    def __init__(self, name: str, spec: JsonObject, required: bool) -> None:
        self.name, self.spec, self.required = name, spec, required
        self.kind = field_kind(spec)
        default = spec.get("default")
        label = html.escape(str(spec.get("title") or name)) + (" <b style='color:#f85149'>*</b>" if required else "")
        hint = html.escape(str(spec.get("description") or ""))
        self.checks: list[W.Checkbox] = []
        self.input: W.Widget
        if self.kind == "multi":
            chosen = [str(v) for v in default] if isinstance(default, list) else []
            self.checks = [W.Checkbox(description=lbl, value=v in chosen, indent=False) for lbl, v in choices(spec)]
            self.values = [v for _, v in choices(spec)]
            self.input = W.VBox(self.checks)
        elif self.kind == "enum":
            opts: list[tuple[str, str | None]] = [(_UNSET, None), *choices(spec)]
            self.input = W.Dropdown(options=opts, value=str(default) if default is not None else None)
        elif self.kind == "boolean" and isinstance(default, bool):
            self.input = W.Checkbox(value=default, indent=False)
        elif self.kind == "boolean":
            self.input = W.Dropdown(options=[(_UNSET, None), ("yes", True), ("no", False)], value=None)
        else:
            box = W.Password if spec.get("format") == "password" else W.Text
            placeholder = {"number": "a number", "integer": "a whole number"}.get(self.kind, hint[:60])
            self.input = box(value="" if default is None else str(default), placeholder=placeholder)
        self.widget = W.VBox(
            [W.HTML(f"<div>{label}" + (f" <i style='opacity:0.7'>{hint}</i>" if hint else "") + "</div>"), self.input]
        )

    def fill(self, value: JsonValue) -> None:
        if self.kind == "multi":
            wanted = [str(v) for v in value] if isinstance(value, list) else []
            for check, v in zip(self.checks, self.values, strict=True):
                check.value = v in wanted
        elif isinstance(self.input, (W.Text, W.Password)):
            self.input.value = "" if value is None else str(value)
        else:
            self.input.value = value

    def value(self) -> tuple[JsonValue, str | None]:
        """The value the person gave (None: left out), or why it cannot be read."""
        if self.kind == "multi":
            picked: list[JsonValue] = [v for c, v in zip(self.checks, self.values, strict=True) if c.value]
            return (picked or None), None
        raw = self.input.value
        if not isinstance(self.input, (W.Text, W.Password)):
            return raw, None
        text = str(raw).strip() if self.kind in ("number", "integer") else str(raw)
        if text == "":
            return None, None
        if self.kind == "integer":
            try:
                return int(text), None
            except ValueError:
                return None, f"{self.name}: {text!r} is not a whole number"
        if self.kind == "number":
            try:
                return float(text), None
            except ValueError:
                return None, f"{self.name}: {text!r} is not a number"
        return text, None

    def disable(self) -> None:
        for w in [self.input, *self.checks]:
            w.disabled = True


class ElicitationForm(ApprovalPrompt):
    """A server's form; the answer (an ElicitationAnswer) resolves the prompt's future."""

    def __init__(  # the approval prompt's state, with other widgets
        self,
        elicitation: ElicitationRequest,
        loop: asyncio.AbstractEventLoop,
        future: asyncio.Future[Any],
    ) -> None:
        self.elicitation = elicitation
        # What the row, the record and the fallback read of a prompt.
        self.request = PermissionRequest(
            tool_name=f"mcp__{elicitation.server}",
            input={},
            summary="asks you to fill in a form",
            suggested_rule="",
            tool_use_id=elicitation.id,
            display_name=f"MCP server {elicitation.server}",
        )
        self.rule = ""
        self.review = None
        self.answer: PermissionAnswer | None = None
        self.result: ElicitationAnswer | None = None
        self._loop, self._future = loop, future
        self._clicked = False
        self._void_note = ""
        self.outcome_text = ""
        self._lock = threading.Lock()
        required = set(elicitation.required)
        self.fields = [_Field(n, s, n in required) for n, s in elicitation.fields.items()]
        auto = W.Layout(width="auto")
        self.submit_button = W.Button(description="Submit", button_style="success", layout=auto)
        self.decline_button = W.Button(description="Decline", tooltip="Do not give this information", layout=auto)
        self.cancel_button = W.Button(description="Cancel", tooltip="Dismiss without deciding", layout=auto)
        self.submit_button.on_click(lambda _b: self._submit())
        self.decline_button.on_click(lambda _b: self._resolve(ElicitationAnswer(action="decline")))
        self.cancel_button.on_click(lambda _b: self._resolve(ElicitationAnswer(action="cancel")))
        self.problem = W.HTML()
        self.outcome = W.HTML()
        head = (
            f"<div><b>The MCP server {html.escape(elicitation.server)!s} asks:</b> "
            f"{html.escape(elicitation.message)}</div>"
        )
        self.widget = W.VBox(
            [
                W.HTML(head),
                *(f.widget for f in self.fields),
                W.HBox([self.submit_button, self.decline_button, self.cancel_button]),
                self.problem,
                self.outcome,
            ],
            layout=W.Layout(border="1px solid rgba(47,129,247,0.6)", padding="4px", margin="2px 0 2px 1.5em"),
        )

    # --- the programmatic API: the same widgets as a person ---------------------------------
    def fill(self, name: str, value: JsonValue) -> None:
        next(f for f in self.fields if f.name == name).fill(value)

    def submit(self) -> None:
        self.submit_button.click()

    def decline(self, reason: str = "") -> None:
        self.decline_button.click()

    def cancel_form(self) -> None:
        self.cancel_button.click()

    @property
    def answered_status(self) -> str | None:
        if self.pending:
            return None
        action = self.result.action if self.result is not None else "cancel"
        return {"accept": "done", "decline": "denied"}.get(action, "cancelled")

    def focus(self) -> None:
        first = next((f.input for f in self.fields if isinstance(f.input, (W.Text, W.Password))), None)
        if first is not None:
            first.focus()

    # --- internals -------------------------------------------------------------------------
    def _submit(self) -> None:
        content: JsonObject = {}
        wrong: list[str] = []
        for f in self.fields:
            value, problem = f.value()
            if problem:
                wrong.append(problem)
            elif value is not None:
                content[f.name] = value
        wrong += problems(self.elicitation, with_defaults(self.elicitation, content))
        if wrong:  # the form stays open: the person can fix it
            self.problem.value = '<div style="color:#f85149">Not sent: ' + html.escape("; ".join(wrong)) + "</div>"
            return
        self._resolve(normalize_elicitation(self.elicitation, {"action": "accept", "content": content}))

    def _resolve(self, answer: ElicitationAnswer) -> bool:
        with self._lock:
            if self._clicked or self._future.done():
                return False
            self._clicked = True
        try:
            self._loop.call_soon_threadsafe(self._settle_form, answer)
        except RuntimeError:
            return False
        return True

    def _settle(self, answer: PermissionAnswer) -> None:  # void(): nobody will answer any more
        self._settle_form(ElicitationAnswer(action="cancel", note=answer.message))

    def _settle_form(self, answer: ElicitationAnswer) -> None:
        if self._future.done():
            return
        self.result = answer
        self._future.set_result(answer)
        self._finish(self._void_note or record_text(self.elicitation, answer))

    def _finish(self, note: str) -> None:
        self.outcome_text = note
        for f in self.fields:
            f.disable()
        for b in (self.submit_button, self.decline_button, self.cancel_button):
            b.disabled = True
        self.outcome.value = f'<i style="opacity:0.8">{html.escape(note)}</i>'
        self.widget.children = (self.outcome,)
        self.widget.layout.border = "none"
        self.widget.layout.padding = "0"
