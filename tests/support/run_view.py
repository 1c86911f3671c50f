"""The cell's widgets without a kernel: a RunView over an agent with a scripted model, a.txt
in the project, and waiting for the approval prompts it opens (answered through their API, which
goes through the very buttons a click would)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from ipy_agent import Agent, ScriptedModel
from ipy_agent.ui.approval_widget import ApprovalPrompt
from ipy_agent.ui.widgets import RunView

from .transcript import use
from .waits import timed_out, waiting_for

TIMEOUT = 30


def edit(tid: str, old: str, new: str) -> list[dict[str, Any]]:
    return [use("Edit", tid, file_path="a.txt", old_string=old, new_string=new)]


def make(tmp_path: Path, turns: list[Any], **view_kw: Any) -> tuple[Agent, RunView, ScriptedModel]:
    (tmp_path / "a.txt").write_text("hello world\nsecond line\n")
    model = ScriptedModel(turns)
    agent = Agent(model=model, cwd=tmp_path, permission_mode="default")
    view = RunView(agent, **view_kw)
    agent.approver = view.approver
    agent.on_event(view.listener)
    return agent, view, model


async def next_prompt(view: RunView, task: asyncio.Task[Any]) -> ApprovalPrompt:
    """The first approval prompt still waiting for an answer, once there is one."""

    async def poll() -> ApprovalPrompt:
        while True:
            pending = [p for p in view.prompts.values() if p.pending]
            if pending:
                return pending[0]
            assert not task.done(), f"the run ended without asking: {task.result()}"
            await asyncio.sleep(0.01)

    with waiting_for("the run to open an approval prompt"):
        try:
            return await asyncio.wait_for(poll(), TIMEOUT)
        except TimeoutError:
            rows = {tid: row.status for tid, row in view.rows.items()}
            raise timed_out("the run did not open an approval prompt", TIMEOUT, f"rows: {rows}") from None


async def until_prompt(tmp_path: Path, turns: list[Any] | None = None, **view_kw: Any):
    """Start a run and return (agent, view, model, task, prompt) once its first prompt is open."""
    agent, view, model = make(tmp_path, turns or READ_EDIT_DONE, **view_kw)
    task = asyncio.create_task(agent.arun("go"))
    return agent, view, model, task, await next_prompt(view, task)


READ_EDIT_DONE = [[use("Read", "t1", file_path="a.txt")], edit("t2", "hello world", "goodbye world"), "All **done**."]
