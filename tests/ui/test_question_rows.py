"""Every question a run puts to the person leaves a row that says how it was answered, once.

One run asks the four kinds a widget view shows: a project MCP server asking to be trusted, its
form (elicitation), AskUserQuestion and a permission prompt for an edit. Each is answered through
its widgets; then the rows in the cell and the static record the saved notebook keeps are read:
no row still says "waiting for you", and each answer is said once.
"""

from __future__ import annotations

import asyncio
import html
import json
import sys
from pathlib import Path
from typing import Any

from ipy_agent import Agent, ScriptedModel
from ipy_agent.mcp import load_mcp_files
from ipy_agent.ui.elicitation_form import ElicitationForm
from ipy_agent.ui.question_widget import QuestionPrompt
from ipy_agent.ui.widgets import RunView
from tests.support.mcp import TOOLBOX
from tests.support.run_view import TIMEOUT, next_prompt
from tests.support.transcript import use

QUESTION = {"question": "Which plot?", "header": "Plot", "options": [{"label": "Bars"}, {"label": "Lines"}]}
EVERY_KIND = [
    [use("mcp__tb__signup", "form")],
    [use("AskUserQuestion", "ask", questions=[QUESTION])],
    [use("Read", "read", file_path="a.txt")],
    [use("Edit", "edit", file_path="a.txt", old_string="hello", new_string="goodbye")],
    "All done.",
]


class Handle:
    """IPython's DisplayHandle for the test: what the cell's display was last updated to."""

    def __init__(self) -> None:
        self.shown: dict[str, Any] = {}

    def update(self, obj: dict[str, Any], raw: bool = False) -> None:
        self.shown = obj


def project_agent(tmp_path: Path, turns: list[Any]) -> tuple[Agent, RunView, Handle]:
    """An agent in a project whose .mcp.json names the toolbox server, loaded as %agent loads it,
    shown in a RunView that asks every question."""
    servers = {"mcpServers": {"tb": {"type": "stdio", "command": sys.executable, "args": [TOOLBOX]}}}
    (tmp_path / ".mcp.json").write_text(json.dumps(servers))
    (tmp_path / "a.txt").write_text("hello\n")
    agent = Agent(
        model=ScriptedModel(turns),
        cwd=tmp_path,
        permission_mode="default",
        allow=["mcp__tb"],  # the form's tool runs unasked: its form is the question
    )
    agent.mcp.set_file_servers(load_mcp_files(tmp_path)[0])
    handle = Handle()
    view = RunView(agent, handle=handle)
    agent.approver = view.approver
    agent.on_event(view.listener)
    return agent, view, handle


async def test_every_kind_of_question_settles_its_row_and_says_the_answer_once(tmp_path):
    agent, view, handle = project_agent(tmp_path, EVERY_KIND)
    try:
        task = asyncio.create_task(agent.arun("go"))
        kinds = []
        while len(kinds) < 4:
            prompt = await next_prompt(view, task)
            if isinstance(prompt, ElicitationForm):
                kinds.append("form")
                prompt.fill("name", "Ada")
                prompt.submit()
            elif isinstance(prompt, QuestionPrompt):
                kinds.append("question")
                prompt.choose(0, "Lines")
                prompt.submit()
            elif prompt.request.tool_use_id == "mcp-trust-tb":
                kinds.append("trust")
                prompt.allow()
            else:
                kinds.append("permission")
                prompt.allow()
        assert kinds == ["trust", "form", "question", "permission"]
        await asyncio.wait_for(task, TIMEOUT)
        view.close()  # what the magics do when the run ends

        live = "".join(row.html for row in view.rows.values())
        record = handle.shown["text/plain"]
        page = handle.shown["text/html"]
        for shown in (live, record, page):
            assert "waiting for you" not in shown
        assert "✓ done: MCP server tb from .mcp.json: start it?" in record
        assert "✓ done: MCP server tb" in record
        answers = [
            "Allowed once",  # the trust prompt's and the edit's
            "MCP server 'tb' asked: 'Who is signing up?'; answered with",
            "Answered: Plot: Lines",
        ]
        assert [record.count(a) for a in answers] == [2, 1, 1], record
        assert [page.count(html.escape(a)) for a in answers] == [2, 1, 1]
    finally:
        agent.close()


async def test_a_declined_trust_prompt_reads_denied_and_the_run_goes_on_without_the_server(tmp_path):
    agent, view, handle = project_agent(tmp_path, ["No server, then."])
    try:
        task = asyncio.create_task(agent.arun("go"))
        prompt = await next_prompt(view, task)
        assert prompt.request.tool_use_id == "mcp-trust-tb"
        prompt.deny("not this project")
        await asyncio.wait_for(task, TIMEOUT)
        view.close()
        record = handle.shown["text/plain"]
        assert "⊘ denied: MCP server tb from .mcp.json: start it?" in record
        assert record.count("Denied: not this project") == 1
        assert "waiting for you" not in record and "waiting for you" not in view.rows["mcp-trust-tb"].html
    finally:
        agent.close()


async def test_a_question_open_when_the_view_closes_is_recorded_as_closed_not_waiting(tmp_path):
    agent, view, handle = project_agent(tmp_path, ["No server, then."])
    try:
        task = asyncio.create_task(agent.arun("go"))
        await next_prompt(view, task)
        view.close()  # the cell's view goes (the magics close it; serving stops) with the prompt open
        await asyncio.wait_for(task, TIMEOUT)
        record = handle.shown["text/plain"]
        assert "⊘ denied: MCP server tb from .mcp.json: start it?" in record
        assert "Closed before an answer" in record and "waiting for you" not in record
    finally:
        agent.close()
