"""Shared pieces of the context-window tests: a tool with large results, and scripted turns
that check the history the model is shown."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from ipy_agent import build_tool
from ipy_agent.history.messages import history_problems


class FetchInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    n: int


def fetch_tool(size: int = 20_000, *, max_result_chars: int = 50_000):
    """`Fetch(n)`: a read-only tool whose result is `size` characters of numbered lines."""

    def call(inp: FetchInput, ctx: Any) -> str:
        line = f"page {inp.n}: " + "x" * 70 + "\n"
        return (line * (size // len(line) + 1))[:size]

    return build_tool(
        name="Fetch",
        input_model=FetchInput,
        description="Fetch page n (test tool).",
        call=call,
        is_read_only=True,
        is_concurrency_safe=True,
        max_result_chars=max_result_chars,
    )


def fetch(n: int) -> dict[str, Any]:
    return {"type": "tool_use", "id": f"toolu_fetch_{n:05d}", "name": "Fetch", "input": {"n": n}}


class HistoryCheck:
    """Scripted turns that first check the conversation the model was sent."""

    def __init__(self) -> None:
        self.problems: list[tuple[int, list[str]]] = []
        self.seen = 0

    def turn(self, i: int, blocks: list[dict[str, Any]] | str):
        def reply(messages: list[dict[str, Any]]) -> Any:
            self.seen += 1
            if problems := history_problems(messages):
                self.problems.append((i, problems))
            return blocks

        return reply
