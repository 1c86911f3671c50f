"""Asking the person: AskUserQuestion, one to four questions with two to four options each.

- `tool`: `AskUserQuestionTool`, whose questions go through the approval prompt (a widget in
  the cell, a text prompt in a terminal) and whose result is the person's answers.
"""

from __future__ import annotations

from .tool import AskUserQuestionTool

__all__ = ["AskUserQuestionTool"]
