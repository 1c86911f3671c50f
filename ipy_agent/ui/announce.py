"""Tell the person, outside the run's cell, that a background run waits for their answer.

A `--background` run goes on while the person works in other cells; its prompt may open far
from where they are looking, and nothing happens until they answer. So while a background
prompt is open:

- the notebook front end is asked to show a notification, through the live-notebook bridge
  (`agent.notebook.notify(message, type)`, the `notify` op of the `ipy_agent.notebook` comm)
  when the JupyterLab extension is connected; other announcers can be added to `ANNOUNCERS`;
- without the extension (Notebook 7 or VS Code without it, nbclient), every cell the person runs
  starts with a one-line note (on stdout: a notice, not an error) saying which cell waits and
  for what (an IPython `pre_run_cell` hook): it reaches the person wherever they are working, and needs nothing in the front end.

A foreground run needs none of this: its cell is the one running, and its prompt takes focus.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["ANNOUNCERS", "announce_answered", "announce_waiting", "cell_number", "waiting_note"]

# Extra announcers, called with (message, view) when a background prompt opens.
ANNOUNCERS: list[Callable[[str, Any], None]] = []
_WAITING: dict[int, tuple[Any, str]] = {}  # id(view) -> (view, what it waits for)
_HOOKED: list[Any] = []  # the shell whose pre_run_cell carries the note


def cell_number(shell: Any = None) -> int | None:
    """The number (In [N]) of the cell running now, or None outside a cell.

    IPython counts `execution_count` up when a cell starts, so the running cell is one less."""
    if shell is None:
        try:
            from IPython import get_ipython

            shell = get_ipython()
        except Exception:
            return None
    count = getattr(shell, "execution_count", None)
    return count - 1 if isinstance(count, int) and count > 1 else None


def waiting_note() -> str:
    """The note for the next cell, or "" when no background prompt is open."""
    notes = []
    for view, what in list(_WAITING.values()):
        if not view.waiting_prompts():
            continue
        cell = getattr(view, "cell_number", None)
        where = f"cell [{cell}]" if cell else "its cell"
        notes.append(f"⏳ ipy_agent: a background run in {where} is waiting for your approval: {what}.")
    return "\n".join(notes)


def announce_waiting(view: Any, request: Any) -> None:
    if not getattr(view, "background", False):
        return
    what = f"{request.display_name or request.tool_name} {request.summary}".strip()
    _WAITING[id(view)] = (view, what)
    _hook_cells()
    cell = getattr(view, "cell_number", None)
    message = (
        f"ipy_agent is waiting for your approval in cell [{cell}]: {what}"
        if cell
        else f"ipy_agent is waiting for your approval: {what}"
    )
    _notify_front_end(view, message)
    for announcer in list(ANNOUNCERS):
        with contextlib.suppress(Exception):  # an announcer is a courtesy; it must not break the prompt
            announcer(message, view)


def announce_answered(view: Any) -> None:
    if id(view) in _WAITING and not view.waiting_prompts():
        del _WAITING[id(view)]


def _notify_front_end(view: Any, message: str) -> None:
    bridge = getattr(getattr(view, "agent", None), "notebook", None)
    notify = getattr(bridge, "notify", None)
    if notify is None or not getattr(bridge, "connected", False):
        return
    try:
        task = asyncio.get_running_loop().create_task(notify(message, "warning"))
    except RuntimeError:
        return
    task.add_done_callback(lambda t: t.cancelled() or t.exception())  # a failed notification is not an error


def _hook_cells() -> None:
    try:
        from IPython import get_ipython

        shell = get_ipython()
    except Exception:
        return
    if shell is None or shell in _HOOKED:
        return
    shell.events.register("pre_run_cell", _before_cell)
    _HOOKED.append(shell)


def _before_cell(*_args: Any) -> None:
    note = waiting_note()
    if note:
        # On stdout: a notice, not an error (a page draws stderr in a pink box, as it draws a
        # traceback, and the tour's approving cell looked as if it had failed).
        print(note, file=sys.stdout)
