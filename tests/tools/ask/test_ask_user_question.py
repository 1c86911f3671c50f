"""AskUserQuestion: the person's answer reaches the model as the tool result; nobody to ask
(a background run, a non-interactive kernel, an unanswered prompt) is said at once; the widget
in the cell and the terminal prompt; what the record keeps."""

from __future__ import annotations

import asyncio
import time

import pytest
from pydantic import ValidationError

from ipy_agent import Agent, ScriptedModel
from ipy_agent.history.messages import history_problems
from ipy_agent.permissions.decide import PermissionAnswer
from ipy_agent.tools.ask import AskUserQuestionTool
from ipy_agent.tools.ask.tool import AskUserQuestionInput
from ipy_agent.ui.approver import NonInteractiveApprover, with_timeout
from ipy_agent.ui.question_widget import QuestionPrompt
from ipy_agent.ui.text import terminal_approver
from tests.support.run_view import make, next_prompt
from tests.support.transcript import all_results, result_text, use

QUESTIONS = [
    {
        "question": "Which model should I fit first?",
        "header": "Model",
        "options": [
            {"label": "Linear (recommended)", "description": "fast, a baseline"},
            {"label": "Gradient boosting", "description": "slower, usually better"},
        ],
    },
    {
        "question": "Which plots do you want?",
        "header": "Plots",
        "options": [{"label": "Residuals"}, {"label": "Feature importance"}, {"label": "Learning curve"}],
        "multiSelect": True,
    },
]
ASK = [[use("AskUserQuestion", "q1", questions=QUESTIONS)], "Understood."]


def _agent(tmp_path, approver, **kw) -> tuple[Agent, ScriptedModel]:
    model = ScriptedModel(list(ASK))
    return Agent(model=model, tools=[AskUserQuestionTool()], cwd=tmp_path, approver=approver, **kw), model


def _answer_text(agent: Agent) -> str:
    return result_text(all_results(agent.messages)["q1"])


@pytest.mark.parametrize("mode", ["default", "bypassPermissions", "acceptEdits"])
def test_the_answer_is_the_tool_result_in_every_mode(tmp_path, mode):
    asked = []

    def approver(request):
        asked.append([q.question for q in request.preview.questions])
        return PermissionAnswer(
            behavior="allow",
            answers={"Which model should I fit first?": "Gradient boosting", "Which plots do you want?": "Residuals"},
        )

    agent, _ = _agent(tmp_path, approver, permission_mode=mode)
    result = agent.run("fit something")
    assert asked == [["Which model should I fit first?", "Which plots do you want?"]]  # no mode answers for the person
    text = _answer_text(agent)
    assert '"Which model should I fit first?" = "Gradient boosting"' in text
    assert '"Which plots do you want?" = "Residuals"' in text
    assert result.text == "Understood." and history_problems(agent.messages) == []
    assert agent.trace[0].summary_result == "Model: Gradient boosting; Plots: Residuals"


def test_a_non_interactive_run_says_no_person_at_once(tmp_path):
    agent, _ = _agent(tmp_path, NonInteractiveApprover("IPY_AGENT_NONINTERACTIVE is set"))
    agent.run("fit something")
    text = _answer_text(agent)
    assert "There is no person to ask" in text and "Choose yourself" in text
    assert "To allow it" not in text  # not an approval the person could grant with a rule


def test_an_unanswered_question_times_out(tmp_path):
    never: asyncio.Future | None = None

    async def waits_forever(request):
        nonlocal never
        never = asyncio.get_running_loop().create_future()
        return await never

    agent, _ = _agent(tmp_path, with_timeout(waits_forever, 0.3))
    started = time.monotonic()
    agent.run("fit something")
    assert time.monotonic() - started < 30
    assert "There is no person to ask (no one answered within 0.3 s)" in _answer_text(agent)


def test_bad_questions_are_refused_with_a_reason():
    with pytest.raises(ValidationError, match="at least 2"):
        AskUserQuestionInput.model_validate(
            {"questions": [{"question": "a?", "header": "A", "options": [{"label": "x"}]}]}
        )
    with pytest.raises(ValidationError, match="do not offer 'Other'"):
        AskUserQuestionInput.model_validate(
            {"questions": [{"question": "a?", "header": "A", "options": [{"label": "x"}, {"label": "Other"}]}]}
        )
    with pytest.raises(ValidationError, match="at most 4"):
        AskUserQuestionInput.model_validate({"questions": [QUESTIONS[0]] * 5})


def test_the_tool_only_reads_and_always_asks(tmp_path, ctx):
    tool = AskUserQuestionTool()
    inp = AskUserQuestionInput.model_validate({"questions": QUESTIONS})
    assert tool.is_read_only(inp)
    check = asyncio.run(tool.check_permissions(inp, ctx))
    assert check.behavior == "ask" and check.always


async def test_the_widget_click_and_other_reach_the_model_and_the_record(tmp_path):
    agent, view, _ = make(tmp_path, list(ASK))
    agent.registry = type(agent.registry)([AskUserQuestionTool()])
    task = asyncio.create_task(agent.arun("fit something"))
    prompt = await next_prompt(view, task)
    assert isinstance(prompt, QuestionPrompt)
    assert [a.question.header for a in prompt.asked] == ["Model", "Plots"]
    assert prompt.asked[0].choice is not None and prompt.asked[0].choice.options[-1] == "Other"
    prompt.choose(0, "Gradient boosting")
    prompt.choose(1, "Residuals")
    prompt.type_other(1, "a calibration plot")
    prompt.submit()
    result = await asyncio.wait_for(task, 30)
    assert result.text == "Understood."
    text = _answer_text(agent)
    assert '"Which model should I fit first?" = "Gradient boosting"' in text
    assert '"Which plots do you want?" = "Residuals, a calibration plot"' in text
    assert prompt.outcome_text == "Answered: Model: Gradient boosting; Plots: Residuals, a calibration plot"
    record = view.record_bundle()["text/plain"]  # what the saved notebook keeps
    assert "Which model should I fit first?" in record
    assert "Answered: Model: Gradient boosting; Plots: Residuals, a calibration plot" in record


async def test_a_background_view_says_no_person_without_opening_a_prompt(tmp_path):
    agent, view, _ = make(tmp_path, list(ASK), background=True)
    agent.registry = type(agent.registry)([AskUserQuestionTool()])
    await asyncio.wait_for(agent.arun("fit something"), 30)
    assert view.prompts == {}
    assert "There is no person to ask (a --background run" in _answer_text(agent)


def test_the_terminal_asks_with_numbers_or_words(tmp_path, monkeypatch):
    typed = iter(["2", "Residuals-ish, by week"])
    monkeypatch.setattr("builtins.input", lambda _prompt="": next(typed))
    agent, _ = _agent(tmp_path, terminal_approver())
    agent.run("fit something")
    text = _answer_text(agent)
    assert '"Which model should I fit first?" = "Gradient boosting"' in text
    assert '"Which plots do you want?" = "Residuals-ish, by week"' in text
