"""Small helpers shared by the magics tests."""

from __future__ import annotations

from typing import Any


def use(name: str, tid: str, **inp: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": tid, "name": name, "input": inp}


def results(model: Any, request: int) -> dict[str, dict[str, Any]]:
    """tool_result blocks (by tool_use_id) in the last message of the model's request #request."""
    last = model.requests[request]["messages"][-1]
    return {b["tool_use_id"]: b for b in last["content"] if b.get("type") == "tool_result"}


def text_of(block: dict[str, Any]) -> str:
    c = block["content"]
    return c if isinstance(c, str) else "".join(b.get("text", "") for b in c)


def edit_script(script: Any, tmp_path: Any, new: str = "howdy") -> str:
    """A transcript that reads a.txt ("hello") and then edits it to `new`."""
    (tmp_path / "a.txt").write_text("hello\n")
    return script(
        [use("Read", "r1", file_path="a.txt")],
        [use("Edit", "e1", file_path="a.txt", old_string="hello", new_string=new)],
        "done",
    )
