"""Text rendering of a run, for terminal IPython and kernels with widgets switched off.

The same compact view as the widgets, in lines: the assistant's text as it streams, one row per
tool call when it settles (status, name, summary, duration, and a short excerpt of the detail,
such as a diff), notices, and a footer with the token counts. Approval is an `input()` prompt,
`[y]es / [a]lways / [n]o` (for a cell edit under review, Accept / Reject in the words of the cell,
ui/prompt_words.py), with a reason asked after "n"; an empty answer or EOF denies, because
a prompt that cannot be answered must not run anything. rich does the colours; the raw
tool_result is never printed here (that is what `%agent_inspect` is for).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.text import Text

from ipy_agent.contract.questions import Question
from ipy_agent.history.blocks import JsonObject, JsonValue
from ipy_agent.loop.turn import INTERRUPTED_NOTICE
from ipy_agent.mcp.elicitation import ElicitationRequest, choices, field_kind
from ipy_agent.permissions.decide import PermissionAnswer, PermissionRequest
from ipy_agent.runtime.trace import (
    AgentEvent,
    CallEvent,
    CallRecord,
    ContextEvent,
    NoticeEvent,
    RunEndEvent,
    TextEvent,
    ThinkingEvent,
    TurnEvent,
)

from .prompt_words import Words, prompt_notes, words_for
from .status import STATUS, call_time, status_look
from .usage_line import turns_text, usage_parts

__all__ = [
    "STATUS_MARK",
    "TextRenderer",
    "ask_in_terminal",
    "call_row",
    "make_console",
    "render_diff",
    "terminal_approver",
]

# The icon per status (ui/status.py holds the one table every view reads).
STATUS_MARK = {k: v.icon for k, v in STATUS.items()}
_SETTLED = ("done", "error", "denied", "cancelled")
DETAIL_LINES = 12


def make_console(*, kernel: bool = False) -> Console:
    # In a kernel, plain ANSI text on stdout (the cell output renders it); rich's own Jupyter
    # mode would make one display per print and break the streamed text apart.
    return Console(highlight=False, soft_wrap=True, force_jupyter=False, force_terminal=True if kernel else None)


def render_diff(diff: str, max_lines: int | None = None) -> Text:
    """A unified diff, coloured line by line; cut to `max_lines` with a note."""
    lines = diff.rstrip("\n").splitlines()
    cut = max_lines is not None and len(lines) > max_lines
    out = Text()
    for line in lines[: max_lines if cut else None]:
        style = (
            "bold"
            if line.startswith(("+++", "---"))
            else "green"
            if line.startswith("+")
            else "red"
            if line.startswith("-")
            else "cyan"
            if line.startswith("@@")
            else ""
        )
        out.append(line + "\n", style=style)
    if cut:
        out.append(f"… {len(lines) - max_lines} more lines\n", style="dim")  # type: ignore[operator]
    return out


def call_row(rec: CallRecord) -> Text:
    """One compact line for a call: mark, name, what it did, how it ended, how long."""
    name = rec.display_name or rec.tool_name
    row = Text("  ")
    look = status_look(rec.status)
    row.append(look.icon + " ", style=look.style)
    row.append(name, style="bold")
    if rec.summary_use:
        row.append(" " + rec.summary_use)
    if rec.status == "denied":
        reason = getattr(rec.decision, "reason", "") or rec.summary_result
        row.append(f" — denied{': ' + reason if reason else ''}", style="yellow")
    elif rec.summary_result:
        row.append(f" — {rec.summary_result}", style="red" if rec.status == "error" else "")
    if d := call_time(rec):
        row.append(f"  ({d})", style="dim")
    return row


class TextRenderer:
    """An `agent.on_event` listener that prints the run as text."""

    def __init__(self, console: Console | None = None, model: Any = None) -> None:
        self.console = console or make_console()
        self.model = model  # for the footer's cost and context share
        self.context_tokens = 0
        self._mid_line = False
        self._thinking = False
        # A settled call can be reported again (the message budget spilled its result); a
        # printed line stays printed, so each call gets one row.
        self._printed: set[int] = set()  # id() of the records (kept alive by the agent's trace)

    def __call__(self, event: AgentEvent) -> None:
        match event:
            case TextEvent():
                self._write(event.text)
            case ThinkingEvent():
                if not self._thinking:
                    self._newline()
                    self.console.print(Text("(thinking…)", style="dim italic"))
                    self._thinking = True
            case CallEvent() if event.record.status == "waiting":
                self._newline()  # the approval prompt starts on a line of its own
            case CallEvent() if event.record.status in _SETTLED and id(event.record) not in self._printed:
                self._printed.add(id(event.record))
                self._newline()
                rec = event.record
                self.console.print(call_row(rec))
                if rec.detail and rec.status == "done":
                    self.console.print(_indent(render_diff(rec.detail, DETAIL_LINES)), end="")
            case TurnEvent(phase="end") if event.usage is not None:
                self.context_tokens = event.usage.context_tokens
            case ContextEvent():
                self._newline()
                self.console.print(Text(f"  ⇣ {event.text}", style="cyan"))
            case NoticeEvent() if event.text == INTERRUPTED_NOTICE:
                pass  # the footer says how the run ended
            case NoticeEvent():
                self._newline()
                style = {"error": "bold red", "warning": "yellow"}.get(event.level, "dim")
                self.console.print(Text(event.text, style=style))
            case RunEndEvent():
                self._newline()
                self.console.print(Text(footer(event.result, self.model, self.context_tokens), style="dim"))
            case _:
                pass

    def _write(self, text: str) -> None:
        self._thinking = False
        self.console.file.write(text)
        self.console.file.flush()
        self._mid_line = not text.endswith("\n")

    def _newline(self) -> None:
        if self._mid_line:
            self.console.file.write("\n")
            self._mid_line = False


_ENDED = {
    "end_turn": "Finished",
    "interrupted": "Interrupted",
    "max_turns": "Stopped at max_turns",
    "budget_exceeded": "Stopped at the budget",
}


def footer(result: Any, model: Any = None, context_tokens: int = 0) -> str:
    """How the run ended, its turns, tokens, cost (real models) and context share."""
    reason = str(getattr(result, "stop_reason", "?"))
    turns = int(getattr(result, "turns", 0) or 0)
    parts = [_ENDED.get(reason, f"Ended: {reason}") + (f" ({turns_text(turns)})" if turns else "")]
    u = getattr(result, "usage", None)
    if u is not None:
        parts += usage_parts(model, u, context_tokens, answered=turns > 0 and model is not None)
    if budget := getattr(result, "budget", ""):
        parts.append(f"budget: {budget}")
    return " · ".join(parts)


def _indent(text: Text, prefix: str = "      ") -> Text:
    out = Text()
    for line in text.split("\n", allow_blank=False):
        out.append(prefix)
        out.append_text(line)
        out.append("\n")
    return out


def describe_request(request: PermissionRequest) -> Text:
    """What will happen if the person says yes: the call, the diff or command, warnings."""
    out = Text()
    out.append("? ", style="bold cyan")
    out.append(request.display_name or request.tool_name, style="bold")
    out.append(f" {request.summary}" if request.summary else "")
    if request.reason:
        out.append(f"  ({request.reason})", style="dim")
    out.append("\n")
    preview = request.preview
    diff = request.diff or getattr(preview, "diff", None)
    if diff:
        out.append_text(_indent(render_diff(diff), "    "))
        added, removed = getattr(preview, "added", 0), getattr(preview, "removed", 0)
        if added or removed:
            out.append(f"    (+{added} -{removed})\n", style="dim")
    command = getattr(preview, "command", None)
    if command:
        out.append(f"    $ {command}\n", style="bold")
        if getattr(preview, "description", None):
            out.append(f"    {preview.description}\n", style="dim")  # type: ignore[union-attr]
    for note in prompt_notes(request):
        out.append(f"    {note}\n", style="yellow")
    if request.destructive:
        out.append("    ! this call may destroy data that cannot be recovered\n", style="bold red")
    return out


def terminal_approver(
    console: Console | None = None, on_interrupt: Callable[[], None] | None = None
) -> Callable[[PermissionRequest], PermissionAnswer]:
    """An approver that asks with `input()`: [y]es / [a]lways / [n]o (then a reason).

    Empty or EOF denies. Ctrl-C at the prompt denies and calls `on_interrupt` (the agent's
    interrupt), so the run ends with a valid history instead of a traceback.
    """
    con = console or make_console()

    def approve(request: PermissionRequest) -> PermissionAnswer:
        # The agent's approver also gets an MCP server's form (as the widget view's does).
        if isinstance(request, ElicitationRequest):
            return _form_or_cancel(request, con)  # type: ignore[return-value]
        if request.preview is not None and request.preview.questions:
            return _questions_or_deny(request.preview.questions, con, on_interrupt)
        con.print(describe_request(request), end="")
        rule = request.suggested_rule or request.tool_name
        words = words_for(request)
        review = request.preview.review if request.preview is not None else None
        question, choices = _choices(words, rule)
        keys = [k for k in choices if k in ("y", "n", "a", "ya", "na")]  # the short answers the question shows
        try:
            with _sigint_raises():
                while True:
                    answer = input(question).strip().lower()
                    behavior = choices.get(answer, "") if answer else "deny"
                    if behavior:
                        break
                    shown = ", ".join(keys[:-1]) + f" or {keys[-1]}"
                    con.print(Text(f"Please answer {shown} (not {answer!r}).", style="yellow"))
                if behavior == "allow":
                    return PermissionAnswer(behavior="allow")
                if behavior == "always":
                    return PermissionAnswer(behavior="always", rule=rule)
                if behavior == "accept_all" and review is not None:
                    review.stand("allow")
                    return PermissionAnswer(behavior="allow")
                reason = input(f"{words.reason}, Enter to skip: ").strip() if answer else ""
                if behavior == "reject_all" and review is not None:
                    review.stand("deny", reason)
        except EOFError:
            reason = ""
        except KeyboardInterrupt:
            if on_interrupt is not None:
                on_interrupt()
            return PermissionAnswer(behavior="deny", message="The person interrupted the run at this prompt.")
        return PermissionAnswer(behavior="deny", message=reason)

    return approve


def _choices(words: Words, rule: str) -> tuple[str, dict[str, str]]:
    """The question, and what each answer a person may type stands for: the prompt's vocabulary."""
    if words.review:
        always = words.always[0].lower() + words.always[1:]
        return (
            f"Accept? [y]es / [n]o, reject / [ya] accept all / [na] reject all / [a] {always}: ",
            {"y": "allow", "yes": "allow", "n": "deny", "no": "deny", "ya": "accept_all", "na": "reject_all"}
            | {"a": "always", "always": "always"},
        )
    return (
        f"Allow? [y]es / [a]lways allow {rule} / [n]o: ",
        {"y": "allow", "yes": "allow", "a": "always", "always": "always", "n": "deny", "no": "deny"},
    )


def ask_in_terminal(questions: tuple[Question, ...], con: Console) -> PermissionAnswer:
    """Each question with numbered options; the person types numbers (several, with commas,
    where allowed) or an answer of their own."""
    answers: dict[str, str] = {}
    for q in questions:
        con.print(Text(f"\n? {q.question}", style="bold"))
        for i, o in enumerate(q.options, 1):
            con.print(f"  {i}. {o.label}" + (f" - {o.description}" if o.description else ""))
        hint = "numbers separated by commas" if q.multi_select else "a number"
        typed = input(f"Answer ({hint}, or type your own): ").strip()
        picks = [p.strip() for p in typed.split(",")] if q.multi_select else [typed]
        if typed and all(p.isdigit() and 1 <= int(p) <= len(q.options) for p in picks):
            answers[q.question] = ", ".join(q.options[int(p) - 1].label for p in picks)
        else:
            answers[q.question] = typed
    return PermissionAnswer(behavior="allow", answers=answers)


def _questions_or_deny(
    questions: tuple[Question, ...], con: Console, on_interrupt: Callable[[], None] | None
) -> PermissionAnswer:
    """AskUserQuestion's answers; end of input denies, Ctrl-C denies and interrupts the run."""
    try:
        with _sigint_raises():
            return ask_in_terminal(questions, con)
    except EOFError:
        return PermissionAnswer(behavior="deny", message="The person gave no answer (end of input).")
    except KeyboardInterrupt:
        if on_interrupt is not None:
            on_interrupt()
        return PermissionAnswer(behavior="deny", message="The person interrupted the run at this question.")


def _form_or_cancel(request: ElicitationRequest, con: Console) -> JsonObject:
    """The form's answer; end of input or Ctrl-C cancels it."""
    try:
        with _sigint_raises():
            return ask_form_in_terminal(request, con)
    except (EOFError, KeyboardInterrupt):
        return {"action": "cancel"}


def ask_form_in_terminal(request: ElicitationRequest, con: Console) -> JsonObject:
    """An MCP server's form in the terminal: each field asked in turn (Enter keeps the default or
    leaves it out), then whether to send it. A value of the wrong kind is asked again."""
    con.print(Text(f"\n? {request.server} asks: {request.message}", style="bold"))
    content: JsonObject = {}
    for name, spec in request.fields.items():
        kind = field_kind(spec)
        options = choices(spec)
        title = str(spec.get("title") or name)
        if spec.get("description"):
            con.print(Text(f"  {spec['description']}", style="dim"))
        for i, (label, _value) in enumerate(options, 1):
            con.print(f"    {i}. {label}")
        hint = {
            "boolean": "y/n",
            "enum": "a number",
            "multi": "numbers separated by commas",
            "number": "a number",
            "integer": "a whole number",
        }.get(kind, "text")
        default = f", Enter for {spec['default']!r}" if "default" in spec else ""
        required = " (required)" if name in request.required else ""
        while True:
            typed = input(f"  {title}{required} [{hint}{default}]: ").strip()
            if not typed:
                break
            value = _form_value(kind, typed, [v for _label, v in options])
            if value is not None:
                content[name] = value
                break
            con.print(Text(f"  Please give {hint} (not {typed!r}).", style="yellow"))
    send = input("Send this to the server? [y]es / [n]o, decline: ").strip().lower()
    return {"action": "accept", "content": content} if send in ("y", "yes") else {"action": "decline"}


def _form_value(kind: str, typed: str, values: list[str]) -> JsonValue | None:
    """`typed` as the field's kind, or None when it is not one."""
    try:
        if kind == "boolean":
            return {"y": True, "yes": True, "true": True, "n": False, "no": False, "false": False}.get(typed.lower())
        if kind == "integer":
            return int(typed)
        if kind == "number":
            return float(typed)
    except ValueError:
        return None
    if kind in ("enum", "multi"):
        picks = [p.strip() for p in typed.split(",")] if kind == "multi" else [typed]
        chosen = [values[int(p) - 1] if p.isdigit() and 1 <= int(p) <= len(values) else p for p in picks]
        if not all(c in values for c in chosen):
            return None
        return list(chosen) if kind == "multi" else chosen[0]
    return typed


class _sigint_raises:
    """While `input()` waits, Ctrl-C raises KeyboardInterrupt at once.

    asyncio.run's own SIGINT handler only cancels the main task, which a blocking `input()`
    would not notice until Enter is pressed.
    """

    def __enter__(self) -> None:
        self._old: Any = None
        if threading.current_thread() is threading.main_thread():
            try:
                self._old = signal.signal(signal.SIGINT, signal.default_int_handler)
            except (ValueError, OSError):
                self._old = None

    def __exit__(self, *exc: Any) -> None:
        if self._old is not None:
            signal.signal(signal.SIGINT, self._old)
