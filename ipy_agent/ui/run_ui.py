"""How a run is shown and who answers its prompts, chosen once per run.

- kernel, widgets on: the widget RunView (ui/widgets.py) shows the run and asks with buttons;
  an optional timeout denies a prompt nobody answers.
- kernel with widgets off (`--no-widgets`, `AgentMagics.widgets = False`,
  IPY_AGENT_NONINTERACTIVE=1), or widgets not importable: text output and the non-interactive
  approver (a kernel cannot tell whether anyone is watching, so it must not wait for input).
- terminal IPython: text output and an `input()` prompt, unless IPY_AGENT_NONINTERACTIVE is set.
- IPY_AGENT_COURSE_AUTOANSWER=1 (the course build and the tests only): the widget view as in a
  kernel, each prompt answered through its buttons as the transcript's scene says, and a line
  in the cell saying so (ui/course_answers.py).

Nothing heavy is imported here at module level: `import ipy_agent` must stay cheap.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ipy_agent.permissions.decide import Approver
from ipy_agent.runtime.conversation import Conversation, Listener

if TYPE_CHECKING:
    from IPython.display import DisplayHandle

    from .widgets import RunView

__all__ = ["RunUI", "choose_ui", "noninteractive_env"]


@dataclass(kw_only=True)
class RunUI:
    """How one run is shown and who answers its prompts."""

    listener: Listener
    approver: Approver
    show_error: Callable[[str], None]  # a warning or error line for the person
    show_crash: Callable[[BaseException], None]  # the run itself failed (a bug)
    close: Callable[[], None]
    background: bool
    kind: Literal["widgets", "text"]  # for tests and messages
    view: RunView | None = None  # with widgets: its `prompts` can be answered from code


def noninteractive_env() -> bool:
    return os.environ.get("IPY_AGENT_NONINTERACTIVE", "").strip().lower() not in ("", "0", "false", "no")


def choose_ui(
    agent: Conversation,
    *,
    kernel: bool,
    background: bool,
    widgets: bool,
    approval_timeout: float | None = None,
    handle: DisplayHandle | None = None,
) -> RunUI:
    """`handle`: the display the cell already shows (the start line); the widget view replaces
    it, and the static record replaces the view when the run ends."""
    from ipy_agent.runtime.trace import NoticeEvent

    from .approver import NonInteractiveApprover, with_timeout
    from .course_answers import NOTICE, autoanswer_env, autoanswering

    notes: list[str] = []
    if kernel and widgets and not noninteractive_env():
        try:
            from .widgets import RunView
        except ImportError as e:
            notes.append(
                f"The widget UI is not available ({e}); showing text, and only what the rules and mode allow will run."
            )
        else:
            from IPython.display import display

            if handle is None:
                handle = display({"text/plain": "ipy_agent: starting…"}, raw=True, display_id=True)
            view = RunView(agent, background=background, on_stop=agent.interrupt, handle=handle)
            handle.update(view.live_bundle(), raw=True)
            asks: Approver = view.approver
            if autoanswer_env():  # the course build and the tests only; the cell says so first
                view.listener(NoticeEvent(text=NOTICE, level="info"))
                asks = autoanswering(view.approver, view.prompts, getattr(agent.model, "person", None) or {})
            return RunUI(
                listener=view.listener,
                approver=with_timeout(asks, approval_timeout),
                show_error=lambda text: view.listener(NoticeEvent(text=text, level="warning")),
                show_crash=view.show_error,
                close=view.close,
                background=background,
                kind="widgets",
                view=view,
            )

    from .text import TextRenderer, make_console, terminal_approver

    console = make_console(kernel=kernel)
    approver: Approver
    if noninteractive_env():
        approver = NonInteractiveApprover("IPY_AGENT_NONINTERACTIVE is set")
    elif kernel:
        approver = NonInteractiveApprover("widgets are switched off")
    elif background:
        approver = NonInteractiveApprover("a background run cannot prompt")
    else:
        approver = terminal_approver(console, on_interrupt=agent.interrupt)

    def show_error(text: str) -> None:
        print(text, file=sys.stderr)

    def show_crash(exc: BaseException) -> None:
        show_error("The agent crashed:\n" + "".join(traceback.format_exception(exc)))

    for note in notes:
        show_error(note)
    return RunUI(
        listener=TextRenderer(console, model=agent.model),
        approver=approver,
        show_error=show_error,
        show_crash=show_crash,
        close=lambda: None,
        background=background,
        kind="text",
    )
