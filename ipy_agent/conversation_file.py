"""A conversation saved to JSON, and loaded back so it can go on in another cell or kernel.

What is saved is what the next request needs: the messages, exactly as the model saw them, and
the rules the person granted with "always" (so the same calls are not asked about again). Read
state is not saved on purpose: after a reload the files may have changed, so the agent must
read them again before it edits. A file written during an interrupted run is repaired on load,
because the Messages API refuses a history with unanswered tool_use blocks.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .runtime.history import history_problems, repair_history
from .runtime.rules import parse_rule
from .runtime.secrets import redact_data

__all__ = ["SAVE_FORMAT", "save_conversation", "load_conversation"]

SAVE_FORMAT = "ipy_agent.conversation"


def save_conversation(agent: Any, path: str | Path) -> None:
    granted = {k: [r.text for r in getattr(agent.rules, k) if r.source == "granted"] for k in ("allow", "ask", "deny")}
    data = {"format": SAVE_FORMAT, "version": 1, "cwd": str(agent.cwd), "model": getattr(agent.model, "name", ""),
            "messages": redact_data(agent.messages), "granted": granted}  # no credential lands in a file
    Path(path).write_text(json.dumps(data, indent=1, ensure_ascii=False), encoding="utf-8")


def load_conversation(path: str | Path, agent: Any) -> tuple[bool, list[str]]:
    """Put the saved messages and granted rules on `agent`.

    Returns (whether the history needed repair, messages for granted rules that were skipped).
    Raises ValueError with a message for the person when the file cannot be used.
    """
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"{str(path)!r} does not exist; save a conversation with %agent_save PATH first.") from None
    except (OSError, ValueError) as e:
        raise ValueError(f"could not read {str(path)!r} as JSON ({e}).") from None
    if not isinstance(data, dict) or data.get("format") != SAVE_FORMAT or not isinstance(data.get("messages"), list):
        raise ValueError(f"{str(path)!r} is not a conversation saved by %agent_save.")
    agent.messages = repair_history(data["messages"])
    return bool(history_problems(data["messages"])), _restore_granted(data, agent)


def _restore_granted(data: dict[str, Any], agent: Any) -> list[str]:
    """Put back the allow rules granted with "always"; return why any were not.

    A saved file may come from someone else, or from another project: rules only come back
    for the directory they were granted in (path rules are relative to it), never as a
    whole-tool grant (`Bash` would allow any command), and the caller lists what came back.
    """
    granted = data.get("granted") or {}
    texts = granted.get("allow") if isinstance(granted, dict) else None
    if not isinstance(texts, list) or not texts:
        return []
    if str(data.get("cwd", "")) != str(agent.cwd):
        return [f"{len(texts)} granted rule(s) were for {data.get('cwd')!r}, not {str(agent.cwd)!r}; grant them again here if you want them"]
    skipped = []
    for text in texts:
        try:
            rule = parse_rule(text, "granted")
        except ValueError as e:
            skipped.append(str(e))
            continue
        if rule.whole_tool:
            skipped.append(f"{rule.text!r} would allow every {rule.tool} call; grant it again if you mean it")
            continue
        agent.rules.add("allow", rule, source="granted")
    return skipped
