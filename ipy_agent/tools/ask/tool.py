"""AskUserQuestion: the model asks the person to choose, and the answer is the tool's result.

The questions travel the way every prompt does: the call always asks (no rule, hook or mode
answers for the person), its preview carries the questions, and the approver shows them: a
widget in the cell (ui/question_widget.py), numbered choices in a terminal (ui/text.py). Where
nobody can answer (a `--background` run, widgets off, a non-interactive kernel) the approver
says so at once, and an unanswered prompt ends with `AgentMagics.approval_timeout` like any
other; the model is then told there is no person to ask. The call only reads.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ipy_agent.contract.decision import UNDECIDED, CallDecision
from ipy_agent.contract.questions import Question, QuestionOption, answers_text
from ipy_agent.contract.tool import PermissionCheck, PermissionPreview, Tool, ToolError
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.history.blocks import ToolResultBlock

__all__ = ["AskUserQuestionInput", "AskUserQuestionTool"]


class OptionInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    label: str = Field(min_length=1, max_length=60, description="The choice, in 1-5 words.")
    description: str = Field(default="", max_length=300, description="What choosing it means, or its trade-off.")


class QuestionInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1, max_length=500, description="The whole question, ending with '?'.")
    header: str = Field(min_length=1, max_length=12, description="A short label for it (at most 12 characters).")
    options: list[OptionInput] = Field(
        min_length=2, max_length=4, description="Two to four distinct choices; 'Other' is added for the person."
    )
    multiSelect: bool = Field(default=False, description="Whether the person may choose several options.")

    @field_validator("options")
    @classmethod
    def _distinct(cls, v: list[OptionInput]) -> list[OptionInput]:
        labels = [o.label.strip().casefold() for o in v]
        if len(set(labels)) != len(labels):
            raise ValueError("option labels must differ from each other")
        if "other" in labels:
            raise ValueError("do not offer 'Other': the person can always type an answer of their own")
        return v


class AskUserQuestionInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    questions: list[QuestionInput] = Field(min_length=1, max_length=4, description="One to four questions.")

    @field_validator("questions")
    @classmethod
    def _distinct(cls, v: list[QuestionInput]) -> list[QuestionInput]:
        texts = [q.question.strip() for q in v]
        if len(set(texts)) != len(texts):
            raise ValueError("each question must be different (the answers are keyed by the question)")
        return v


DESCRIPTION = """\
Ask the person to choose, when their preference decides the work and you cannot find it out: \
which of two approaches, which data set, how far to go. One to four questions, each with two to \
four options (a short label and what it means); the person may always answer in their own words \
("Other"), so do not add an "Other" option. Set multiSelect when several options may be chosen \
together. The result is their answers.

- Ask only what matters and what you cannot read from the files, the notebook or the conversation.
- Put the option you recommend first and say "(recommended)" in its label.
- Where no one can answer (a background run), you are told at once: then choose yourself, say \
which assumption you made, and go on.
"""


def _questions(inp: AskUserQuestionInput) -> tuple[Question, ...]:
    return tuple(
        Question(
            question=q.question.strip(),
            header=q.header.strip(),
            options=tuple(QuestionOption(label=o.label.strip(), description=o.description.strip()) for o in q.options),
            multi_select=q.multiSelect,
        )
        for q in inp.questions
    )


@dataclass(frozen=True)
class Answered:
    questions: tuple[Question, ...]
    answers: dict[str, str]


class AskUserQuestionTool(Tool[AskUserQuestionInput, Answered]):
    name = "AskUserQuestion"
    input_model = AskUserQuestionInput
    kind = "other"

    def description(self, ctx: ToolContext) -> str:
        return DESCRIPTION

    def _read_only(self, inp: AskUserQuestionInput) -> bool:
        return True

    async def check_permissions(self, inp: AskUserQuestionInput, ctx: ToolContext) -> PermissionCheck:
        # Only the person answers: no rule, hook or mode may answer for them.
        return PermissionCheck(behavior="ask", always=True, message="a question for the person")

    async def preview(self, inp: AskUserQuestionInput, ctx: ToolContext) -> PermissionPreview:
        return PermissionPreview(title="A question for you", questions=_questions(inp))

    async def call(self, inp: AskUserQuestionInput, ctx: ToolContext, decision: CallDecision = UNDECIDED) -> Answered:
        if decision.answers is None:
            raise ToolError("No person answered (the call was not asked through a prompt). Choose yourself and say so.")
        return Answered(questions=_questions(inp), answers=dict(decision.answers))

    def map_result(self, output: Answered, tool_use_id: str) -> ToolResultBlock:
        text = (
            "The person answered your questions:\n"
            + answers_text(output.questions, output.answers)
            + "\nGo on with these answers in mind."
        )
        return {"type": "tool_result", "tool_use_id": tool_use_id, "content": text}

    def summarize_use(self, inp: AskUserQuestionInput) -> str:
        first = inp.questions[0].question.strip()
        more = f" (+{len(inp.questions) - 1})" if len(inp.questions) > 1 else ""
        return (first if len(first) <= 80 else first[:79] + "…") + more

    def summarize_result(self, output: Answered) -> str:
        return "; ".join(f"{q.header}: {output.answers.get(q.question) or '(no answer)'}" for q in output.questions)

    def detail_for_person(self, inp: AskUserQuestionInput, output: Answered) -> str:
        return answers_text(output.questions, output.answers)
