"""The Learning style's TODO(human) cell after a foreground run: running the cell goes on.

A foreground `%agent` run executes inside its own cell, and the kernel runs no other cell until
it ends, so the TodoHuman tool (tools/notebook/todo_human.py) cannot wait there for the person:
it inserts the cell, leaves its id in the conversation's session (`PERSON_TO_RUN`), and the
model ends its turn saying what to write. The person writes their piece and runs the cell
(Shift+Enter while the run still goes queues it behind the run). `GoOnAfterTodo`, a listener of
the run log (notebook/runlog.py, IPython's `post_run_cell` of that cell), then starts the next
run in that same cell: the same options as the run that left it (its model, mode, style, rules),
in the background (the person may run other cells meanwhile, and a TODO(human) cell it leaves
is waited for), its prompt what they wrote and how it ran (`person_ran`). A new `%agent` first
forgets the cell: the conversation went on another way.
"""

from __future__ import annotations

import dataclasses
import sys
from typing import TYPE_CHECKING

from IPython.core.error import UsageError

from ipy_agent.notebook.runlog import PERSON_TO_RUN, CellRun, person_ran

if TYPE_CHECKING:
    from .session import AgentSession

__all__ = ["GoOnAfterTodo"]


class GoOnAfterTodo:
    """Called with each cell run the run log records; goes on with the conversation when it is
    the TODO(human) cell a foreground run left."""

    def __init__(self, session: AgentSession) -> None:
        self.session = session

    def __call__(self, run: CellRun) -> None:
        session, agent = self.session, self.session.agent
        if agent is None or session.running or session.last_request is None:
            return
        if agent.session.get(PERSON_TO_RUN) != run.cell_id:
            return
        del agent.session[PERSON_TO_RUN]
        line = dataclasses.replace(
            session.last_request,
            prompt=person_ran(run),
            new=False,
            resume=None,
            record=None,
            script=None,
            model=None,
            background=True,
        )
        print("ipy_agent: you ran the TODO(human) cell; the conversation goes on with what you wrote.")
        try:
            prepared = session.prepare(line, background=True, same_model=True)
        except UsageError as e:  # a policy or settings file that changed since: said, and nothing runs
            print(f"ipy_agent: could not go on: {e}", file=sys.stderr)
            return
        if prepared is not None:
            session.start_background(prepared)
