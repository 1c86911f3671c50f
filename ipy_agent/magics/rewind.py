"""`%agent_rewind [N] [--force]`: back to just before prompt N (loop/rewind.py).

In a kernel the cell awaits it (cell_runner.py), like `%agent`, so the open notebook's page can
put its cells back; elsewhere the notebook's file is used."""

from __future__ import annotations

from IPython.core.error import UsageError
from IPython.display import display

from ipy_agent.loop.rewind_report import RewindReport
from ipy_agent.ui.rewind_view import rewind_bundle

from .session import AgentSession

__all__ = ["parse_rewind", "rewind_command", "show_rewind"]

USAGE = "usage: %agent_rewind [N] [--force]  (N: the prompt's number in %agent_history; default: the last)"


def parse_rewind(line: str) -> tuple[int | None, bool]:
    prompt: int | None = None
    force = False
    for word in line.split():
        if word in ("--force", "-f"):
            force = True
        elif word.isdigit() and prompt is None:
            prompt = int(word)
        else:
            raise UsageError(f"{word!r} is not understood; {USAGE}")
    return prompt, force


async def rewind_command(session: AgentSession, line: str, *, live: bool) -> RewindReport:
    prompt, force = parse_rewind(line)
    agent = session.need_agent()
    if agent.running:
        raise UsageError("The agent is running; stop it first with %agent_stop.")
    try:
        report = await agent.arewind(prompt, force) if live else agent.rewind(prompt, force)
    except ValueError as e:
        raise UsageError(str(e)) from None
    session.prompt_records.rewound(agent, report.prompt)
    return report


def show_rewind(report: RewindReport) -> None:
    display(rewind_bundle(report), raw=True)
