"""The notebook view of one agent run: streamed text, a row per tool call, approval prompts, a footer.

Three constraints shape this module:
- Everything it shows is a widget trait update (`HTML.value`, `Box.children`),
  which travels as a comm message. That reaches the cell while it runs, after it finished (a
  `--background` run) and in every front end with stock ipywidgets 8. `print()` and `with out:`
  do not: VS Code drops outputs that arrive after the cell ended.
- A click can arrive on a thread other than the event loop's (JupyterLab sends comm messages on a
  kernel subshell), so a click only hands its answer to the loop with `call_soon_threadsafe`; the
  loop resolves the approval future and updates the widgets.
- A row shows the tool's summaries, the preview and `record.detail`, never the raw tool_result
  the model received: that stays in the kernel for `%agent_inspect`.

`RunView(agent)` offers `widget` (display it), `listener` (for `agent.on_event`) and `approver`
(for `agent.approver`); the prompts it opens are in `prompts`, keyed by tool_use_id, with a
programmatic `allow()` / `always()` / `deny(reason)` like ipywidgets' own `Button.click()`.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import time
from collections.abc import Callable
from typing import Any, TypeVar

import ipywidgets as W

from ipy_agent.loop.turn import INTERRUPTED_NOTICE
from ipy_agent.mcp.elicitation import ElicitationAnswer, ElicitationRequest
from ipy_agent.models.base import Usage
from ipy_agent.permissions.decide import PermissionAnswer, PermissionRequest
from ipy_agent.runtime.conversation import Conversation
from ipy_agent.runtime.trace import (
    CallEvent,
    CallRecord,
    ContextEvent,
    NoticeEvent,
    RunEndEvent,
    TextEvent,
    ThinkingEvent,
    TurnEvent,
)

from .announce import announce_answered, announce_waiting, cell_number
from .approval_widget import ApprovalPrompt
from .approver import no_person
from .call_row import Blocks, CallRow, shared_html
from .comm_ack import idle_ack
from .diff_html import pre_html
from .elicitation_form import ElicitationForm
from .fallback_prompt import mark, running_cell_id, watch
from .progress import Progress
from .question_widget import QuestionPrompt
from .record import LIVE_TEXT, Entry, record_bundle
from .segments import Segment, markdown_html
from .usage_line import model_name, turns_text, usage_parts

__all__ = ["RunView"]
T = TypeVar("T")
_NOTICE_COLOURS = {"info": "inherit", "warning": "#d08700", "error": "#f85149"}
# Streaming text re-sends the whole segment on every update; batch deltas to this interval
# (short enough that a delta reaches the cell within 50 ms, long enough for a batch of several).
FLUSH_INTERVAL = 0.04
_FINISHED = {
    "end_turn": "Finished",
    "interrupted": "Interrupted",
    "max_turns": "Stopped at max_turns",
    "budget_exceeded": "Stopped at the budget",
}


class RunView:
    """The widgets of one run. Interface used by the magics: widget, listener, approver, prompts, close.

    `handle`: the cell's display handle (IPython's DisplayHandle) this view was shown with; when
    the run ends, the handle's output is replaced by the static record (ui/record.py), so the
    saved notebook keeps a readable account instead of a widget only a live kernel can draw.
    `serving`: set, the view follows the outside calls of the notebook served over MCP
    (magics/serve.py), not a run: the state line says `serving` while no prompt is open, and the
    footer has no model usage (the conversation's model takes no part); `end` ends it.
    """

    def __init__(
        self,
        agent: Conversation,
        background: bool = False,
        on_stop: Callable[[], None] | None = None,
        handle: Any = None,
        serving: str = "",
    ) -> None:
        self.agent = agent
        self.shows_usage = not serving
        self.background = background
        self.on_stop = on_stop
        self.handle = handle
        self.cell_number = cell_number()  # where a background prompt waits (ui/announce.py)
        self.prompts: dict[str, ApprovalPrompt] = {}
        self.rows: dict[str, CallRow] = {}
        self.entries: list[Entry] = []  # the body in order, for the record
        self.result: Any = None
        self.usage = Usage()
        self.context_tokens = 0
        self._turns = 0
        self.closed = False
        self._outcome = ""
        self._segment: Segment | None = None
        self._last_flush = 0.0
        self._flush_scheduled = False
        try:
            self._loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            self._loop = None
        # A foreground run's cell awaits it: typed reasons need acknowledging (ui/comm_ack.py).
        self._ack = None if background else idle_ack()
        self.cell_id = running_cell_id()  # where the fallback's buttons go (ui/fallback_prompt.py)
        self.body = Blocks()
        self.state = W.HTML(layout=W.Layout(flex="1 1 auto"))
        self.progress = Progress(self.state, model=model_name(agent.model), idle=serving)
        self.footer = W.HTML()
        bar: list[W.Widget] = [self.state]
        self.stop_button: W.Button | None = None
        if background or on_stop is not None:
            self.stop_button = W.Button(
                description="Stop",
                icon="stop",
                button_style="warning",
                tooltip="Cancel this run (like %agent_stop)",
                layout=W.Layout(width="auto"),
            )
            self.stop_button.on_click(lambda _b: self._stop_clicked())
            bar.append(self.stop_button)
        self.widget = W.VBox([self.body.widget, W.HBox(bar), self.footer])
        self._render_footer()

    # --- events ----------------------------------------------------------------------------
    def listener(self, event: Any) -> None:
        if self.closed:
            return
        match event:
            case TextEvent():
                self._stream("text", event.text)
            case ThinkingEvent():
                self._stream("thinking", event.text)
            case CallEvent():
                rec = event.record
                self.row(rec.tool_use_id, rec.display_name or rec.tool_name, rec)
                if rec.status == "running":
                    self.progress.set("tools")
            case TurnEvent(phase="start"):
                self.progress.set("thinking")
            case TurnEvent(phase="end"):
                self._end_segment()
                if event.usage is not None:
                    self._turns += 1
                    self.usage += event.usage
                    self.context_tokens = event.usage.context_tokens
                    self._render_footer()
            case ContextEvent():
                self._end_segment()
                self._append(
                    shared_html(
                        f'<div class="ipy-agent-context" style="opacity:0.8">⇣ {html.escape(event.text)}</div>'
                    ),
                    Entry(kind="notice", text=f"⇣ {event.text}"),
                )
            case NoticeEvent() if event.text == INTERRUPTED_NOTICE:
                pass  # the state line says "Interrupted"; once is enough
            case NoticeEvent() if event.question_id in self.rows:
                pass  # the answer of a question asked in its own row: the row says it
            case NoticeEvent():
                self._end_segment()
                colour = _NOTICE_COLOURS.get(event.level, "inherit")
                self._append(
                    shared_html(f'<div style="color:{colour}">{html.escape(event.text)}</div>'),
                    Entry(kind="notice", text=event.text, level=event.level),
                )
            case RunEndEvent():
                self.finish(event.result)

    def row(self, tool_use_id: str, name: str, record: CallRecord | None = None) -> CallRow:
        """The call's row, brought up to `record`; a new one is drawn from it at once, so its
        widget is sent once, already complete."""
        row = self.rows.get(tool_use_id)
        if row is None:
            self._end_segment()
            row = self.rows[tool_use_id] = CallRow(tool_use_id, name, record)
            self._append(row.widget, Entry(kind="row", row=row))
        elif record is not None:
            row.update(record)
        return row

    async def approver(self, request: PermissionRequest) -> PermissionAnswer:
        """Ask the person: a permission prompt, a project MCP server's trust prompt,
        AskUserQuestion's questions, or an MCP server's form (ui/elicitation_form.py)."""
        loop = self._loop = asyncio.get_running_loop()
        if isinstance(request, ElicitationRequest):
            return await self._form(request)  # type: ignore[return-value]
        future: asyncio.Future[PermissionAnswer] = loop.create_future()
        asks = request.preview is not None and bool(request.preview.questions)
        if asks and self.background:
            return no_person("a --background run: the person is working elsewhere")  # never waits
        prompt = (QuestionPrompt if asks else ApprovalPrompt)(request, loop, future, ack=self._ack)
        review = request.preview.review if request.preview is not None else None
        if review is not None:  # staged in the cell too: an answer there resolves this prompt
            review.follow(
                lambda a: prompt.answered_elsewhere(
                    PermissionAnswer(behavior=a.behavior, message=a.message, automatic=a.automatic), a.note
                )
            )
        return await self._ask(prompt, future)

    async def _form(self, request: ElicitationRequest) -> ElicitationAnswer:
        if self.background:
            return ElicitationAnswer(action="decline", note="a --background run: the person is working elsewhere")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[ElicitationAnswer] = loop.create_future()
        return await self._ask(ElicitationForm(request, loop, future), future, watched=False)

    async def _ask(self, prompt: ApprovalPrompt, future: asyncio.Future[T], *, watched: bool = True) -> T:
        """Every question waits for its answer here, whatever its kind: its row shows the prompt
        and "waiting for you", and settles once the answer is in (`CallRow.settle`). `watched`:
        a page that cannot show the prompt is noticed, and the extension asks instead
        (ui/fallback_prompt.py; a server's form has no such fallback)."""
        request = prompt.request
        row = self.row(request.tool_use_id, request.display_name or request.tool_name)
        self.prompts[request.tool_use_id] = prompt
        prompt_id = mark(prompt)
        self.body.replace(row.widget, row.show_prompt(prompt))
        row.set_status("waiting")
        self.progress.prompt_opened()
        self._bring_forward()
        announce_waiting(self, request)
        # In a kernel, a foreground prompt nobody can see or answer is noticed, and answered another way.
        watcher = None
        if self._ack is not None and watched:
            watcher = asyncio.get_running_loop().create_task(
                watch(prompt, prompt_id, getattr(self.agent, "notebook", None), cell_id=self.cell_id)
            )
        try:
            return await future
        except asyncio.CancelledError:
            prompt.cancel()  # an interrupt or Stop while the prompt is open: the question is void now
            raise
        finally:
            row.settle()
            if self.closed:  # answered after the view closed (voided): the record says how it ended
                self.publish_record()
            if watcher is not None:
                watcher.cancel()
            self.progress.prompt_closed()
            announce_answered(self)
            self._bring_forward()

    def waiting_prompts(self) -> list[ApprovalPrompt]:
        return [p for p in self.prompts.values() if p.pending]

    def finish(self, result: Any) -> None:
        """The run ended: flush the text, void open prompts, say how it ended."""
        self.result = result
        self._end_segment()
        self._render_footer()  # the budget line, now the run's spending is known
        for prompt in self.prompts.values():
            if prompt.pending:
                prompt.cancel()
        reason = getattr(result, "stop_reason", "")
        words = _FINISHED.get(reason, f"Ended: {reason}")
        turns = getattr(result, "turns", 0)
        self._outcome = words + (f" ({turns_text(turns)})" if turns else "")
        self.progress.end(
            f"<i>{html.escape(words)}</i>"
            + (f' <span style="opacity:0.7">({turns_text(turns)})</span>' if turns else "")
        )
        self._retire_stop()

    def end(self, outcome: str) -> None:
        """End a view that follows no run of its own (the notebook served to outside agents,
        magics/serve.py): it says `outcome`, and the cell's output becomes the static record."""
        self._outcome = outcome
        self.progress.end(f"<i>{html.escape(outcome)}</i>")
        self.close()

    def show_error(self, error: BaseException) -> None:
        """A crash of the run itself (for the background task's done-callback)."""
        import traceback

        text = "".join(traceback.format_exception(error))
        self._end_segment()
        self._append(
            W.HTML(f'<div style="color:#f85149"><b>The agent crashed:</b></div>{pre_html(text)}'),
            Entry(kind="crash", text=text),
        )
        self._outcome = "Crashed"
        self.progress.end("<i>Crashed</i>")
        self._retire_stop()
        self.publish_record()

    def close(self) -> None:
        """Stop following the agent; an open prompt is answered with a denial, so a run still
        waiting on it goes on instead of hanging. The cell's output becomes the static record."""
        if self.closed:
            return
        self._end_segment()
        self.closed = True
        for prompt in self.prompts.values():
            if prompt.pending:
                prompt.void("Closed before an answer", "The approval prompt was closed before the person answered.")
        self._retire_stop()
        announce_answered(self)
        remove = self.agent.remove_listener
        if remove is not None:
            remove(self.listener)
        self.publish_record()

    # --- the record ------------------------------------------------------------------------
    def record_bundle(self) -> dict[str, str]:
        """The run as static HTML and text (see ui/record.py)."""
        self._end_segment()
        return record_bundle(
            self.entries,
            outcome=self._outcome or "Ended",
            footer=" · ".join(self._usage_parts()),
            markdown=markdown_html,
        )

    def live_bundle(self, text: str = LIVE_TEXT) -> dict[str, object]:
        """What displays the live view: the widget, and a `text` that says what it is (what a
        notebook saved meanwhile shows without the kernel)."""
        data = dict(self.widget._repr_mimebundle_() or {})
        data["text/plain"] = text
        return data

    def note_in_record(self, text: str) -> None:
        """A line for the record of a finished run (a rewind undid what it changed): the record,
        which replaced the widgets, is published again with it."""
        self.entries.append(Entry(kind="notice", text=text, level="info"))
        if self.closed:
            self.publish_record()

    def publish_record(self) -> None:
        if self.handle is not None:
            with contextlib.suppress(Exception):  # the kernel is shutting down: the live view stays
                self.handle.update(self.record_bundle(), raw=True)

    # --- internals -------------------------------------------------------------------------
    def _append(self, widget: W.Widget, entry: Entry) -> None:
        self.entries.append(entry)
        self.body.append(widget)

    def _bring_forward(self) -> None:
        # Focus the reason box of the first open prompt: the browser scrolls it into view, and
        # keys typed next go there instead of becoming notebook shortcuts. A background run
        # leaves the focus alone (the person is working elsewhere; announce_waiting tells them).
        waiting = self.waiting_prompts()
        if waiting and not self.background:
            waiting[0].focus()

    def _stream(self, kind: str, text: str) -> None:
        if self._segment is None or self._segment.kind != kind:
            self._end_segment()
            self._segment = Segment(kind)
            self._append(self._segment.widget, self._segment.entry)
        self._segment.text += text
        self._segment.entry.text = self._segment.text
        if time.monotonic() - self._last_flush >= FLUSH_INTERVAL:
            self._flush()
        elif not self._flush_scheduled:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                self._flush()
                return
            self._flush_scheduled = True
            loop.call_later(FLUSH_INTERVAL, self._flush)

    def _flush(self) -> None:
        self._flush_scheduled = False
        self._last_flush = time.monotonic()
        if self._segment is not None:
            self._segment.flush()

    def _end_segment(self) -> None:
        if self._segment is not None:
            self._segment.flush()
            self._segment = None

    def _retire_stop(self) -> None:
        # A finished run has nothing to stop; a greyed orange button beside "Finished" misled.
        if self.stop_button is not None:
            self.stop_button.disabled = True
            self.stop_button.layout.display = "none"

    def _stop_clicked(self) -> None:
        # May run on a subshell thread: hand the stop to the loop when there is one.
        if self.stop_button is not None:
            self.stop_button.disabled = True
        self.progress.stopping()
        stop = self.on_stop or self.agent.interrupt
        if stop is None:
            return
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(stop)
        else:
            stop()

    def _usage_parts(self) -> list[str]:
        if not self.shows_usage:
            return []
        parts = usage_parts(
            self.agent.model,
            self.usage,
            self.context_tokens,
            answered=bool(self._turns),
            window=self.agent.context_window,
        )
        if budget := getattr(self.result, "budget", ""):
            parts.append(f"budget: {budget}")
        return parts

    def _render_footer(self) -> None:
        text = html.escape(" · ".join(self._usage_parts()))
        self.footer.value = f'<div style="opacity:0.7;font-size:90%">{text}</div>' if text else ""
