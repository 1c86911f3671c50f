"""Conversation pieces in Anthropic format: the tool_use blocks a scripted model sends, and the
tool_result blocks the model got back (by tool_use id), with their text."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def use(name: str, tool_use_id: str, /, **tool_input: Any) -> dict[str, Any]:
    """A tool_use block: the model calls tool `name` with `tool_input` (any field names)."""
    return {"type": "tool_use", "id": tool_use_id, "name": name, "input": tool_input}


def results_of(message: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The tool_result blocks of one message, by tool_use_id, in order (none in a text message)."""
    content = message["content"]
    if not isinstance(content, list):
        return {}
    return {b["tool_use_id"]: b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"}


def first_result(message: dict[str, Any]) -> dict[str, Any]:
    """The first tool_result block of one message (it must have one)."""
    found = results_of(message)
    assert found, f"no tool_result in this message: {message['content']!r:.300}"
    return next(iter(found.values()))


def all_results(messages: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Every tool_result block of a conversation, by tool_use_id, in order."""
    out: dict[str, dict[str, Any]] = {}
    for message in messages:
        if message["role"] == "user":
            out.update(results_of(message))
    return out


def results_sent(model: Any, request: int) -> dict[str, dict[str, Any]]:
    """The tool_results in the last message of a ScriptedModel's request number `request`."""
    return results_of(model.requests[request]["messages"][-1])


def result_text(block: dict[str, Any]) -> str:
    """What the model reads in a tool_result: its text, text blocks joined by newlines."""
    content = block.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text")


def edit_script(script: Any, tmp_path: Any, new: str = "howdy") -> str:
    """A transcript that reads a.txt ("hello") and then edits it to `new`."""
    (tmp_path / "a.txt").write_text("hello\n")
    return script(
        [use("Read", "r1", file_path="a.txt")],
        [use("Edit", "e1", file_path="a.txt", old_string="hello", new_string=new)],
        "done",
    )
