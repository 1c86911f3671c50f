"""Small helpers for the MCP tests."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

SERVERS = Path(__file__).parent / "servers"
TOOLBOX = str(SERVERS / "toolbox.py")
BROKEN = str(SERVERS / "broken.py")


def stdio(script: str = TOOLBOX, **extra: Any) -> dict[str, Any]:
    """A stdio server entry that runs `script` with this Python."""
    return {"command": sys.executable, "args": [script], **extra}


def use(tool: str, tid: str, **inp: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": tid, "name": tool, "input": inp}


def results(agent: Any) -> dict[str, dict[str, Any]]:
    """Every tool_result of the conversation, by tool_use_id."""
    out: dict[str, dict[str, Any]] = {}
    for m in agent.messages:
        if m["role"] == "user" and isinstance(m["content"], list):
            out.update({b["tool_use_id"]: b for b in m["content"] if b.get("type") == "tool_result"})
    return out


def text(block: dict[str, Any]) -> str:
    c = block["content"]
    return c if isinstance(c, str) else "\n".join(b.get("text", "") for b in c if b.get("type") == "text")


def offered(model: Any, request: int = 0) -> list[str]:
    return [t["name"] for t in model.requests[request]["tools"]]


def as_json(block: dict[str, Any]) -> Any:
    return json.loads(text(block))
