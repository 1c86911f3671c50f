"""Small helpers for the MCP tests."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.support.transcript import result_text

SERVERS = Path(__file__).parent / "servers"
TOOLBOX = str(SERVERS / "toolbox.py")
BROKEN = str(SERVERS / "broken.py")


def stdio(script: str = TOOLBOX, **extra: Any) -> dict[str, Any]:
    """A stdio server entry that runs `script` with this Python."""
    return {"command": sys.executable, "args": [script], **extra}


def offered(model: Any, request: int = 0) -> list[str]:
    return [t["name"] for t in model.requests[request]["tools"]]


def as_json(block: dict[str, Any]) -> Any:
    return json.loads(result_text(block))
