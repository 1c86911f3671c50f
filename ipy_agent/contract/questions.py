"""Questions a tool asks the person (AskUserQuestion): what the approval prompt shows instead of
Allow / Deny, and the answers that come back with the person's answer to the call.

A question has two to four options, each a label and what choosing it means; `multi_select`
lets the person pick several. Every prompt also takes an answer of the person's own ("Other").
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["OTHER", "Question", "QuestionOption", "answers_text"]

OTHER = "Other"  # the choice that takes the person's own words


@dataclass(frozen=True)
class QuestionOption:
    label: str
    description: str = ""


@dataclass(frozen=True)
class Question:
    question: str
    header: str
    options: tuple[QuestionOption, ...]
    multi_select: bool = False


def answers_text(questions: tuple[Question, ...], answers: dict[str, str]) -> str:
    """The questions and the person's answers, one line each ("(no answer)" for a skipped one)."""
    return "\n".join(f'"{q.question}" = "{answers.get(q.question) or "(no answer)"}"' for q in questions)
