"""A conversation saved to JSON, and loaded back so it can go on in another cell or kernel.

What is saved is what the next request needs: the messages, exactly as the model saw them, and
the rules the person granted with "always" (so the same calls are not asked about again),
signed with the person's key so that an edit of the file brings back no grant (person_key.py). Read
state is not saved on purpose: after a reload the files may have changed, so the agent must
read them again before it edits. A file written during an interrupted run is repaired on load,
because the Messages API refuses a history with unanswered tool_use blocks.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from ipy_agent.base.secrets import redact_data
from ipy_agent.history.blocks import JsonObject
from ipy_agent.history.messages import history_problems, repair_history
from ipy_agent.permissions.rules import matches_everything, parse_rule
from ipy_agent.runtime.conversation import Conversation

from .person_key import sign, verify

__all__ = ["SAVE_FORMAT", "load_conversation", "save_conversation", "shape_problem"]

SAVE_FORMAT = "ipy_agent.conversation"
_GRANTS = "saved grants"  # what the signature is for, so it signs nothing else


def save_conversation(agent: Conversation, path: str | Path) -> None:
    granted = {k: [r.text for r in getattr(agent.rules, k) if r.source == "granted"] for k in ("allow", "ask", "deny")}
    data = {
        "format": SAVE_FORMAT,
        "version": 1,
        "cwd": str(agent.cwd),
        "model": agent.model.name,
        "messages": redact_data(agent.messages),
        "granted": granted,
        # The file sits where commands write: its grants come back only with the person's signature.
        "granted_signature": sign(_GRANTS, [str(agent.cwd), granted]),
    }  # no credential lands in a file
    _replace(Path(path), json.dumps(data, indent=1, ensure_ascii=False))


def _replace(path: Path, text: str) -> None:
    """`path` becomes a new file holding `text`. Written to a temporary file made here and now
    (`O_EXCL`) and renamed onto the name, so a symbolic link at `path` (one a command planted to
    the person's AGENTS.md) is replaced, never written through."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load_conversation(path: str | Path, agent: Conversation) -> tuple[bool, list[str]]:
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
    if (problem := shape_problem(data["messages"])) is not None:
        raise ValueError(f"{str(path)!r} is damaged: {problem}. Nothing was loaded; fix or delete the file.")
    try:
        messages = repair_history(data["messages"])
        repaired = bool(history_problems(data["messages"]))
    except Exception as e:  # a shape shape_problem did not foresee: still the file's fault
        raise ValueError(f"{str(path)!r} is damaged and could not be repaired ({type(e).__name__}: {e}).") from None
    agent.messages = messages
    return repaired, _restore_granted(data, agent)


_BLOCK_FIELDS: dict[str, dict[str, type | tuple[type, ...]]] = {
    "text": {"text": str},
    "tool_use": {"id": str, "name": str, "input": dict},
    "tool_result": {"tool_use_id": str, "content": (str, list)},
    "thinking": {"thinking": str},
    "image": {"source": dict},
}


def shape_problem(messages: list[Any]) -> str | None:
    """The first way `messages` is not a list of Messages API messages, or None.

    A saved file may have been edited by hand, truncated, or written by someone else; what the
    history repair then meets must at least have the right shape, and the person is told where
    it does not."""
    seen_ids: set[str] = set()
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            return f"message {i} is {type(m).__name__}, not an object"
        if m.get("role") not in ("user", "assistant"):
            return f"message {i} has role {m.get('role')!r} (expected 'user' or 'assistant')"
        content = m.get("content")
        if isinstance(content, str):
            continue
        if not isinstance(content, list):
            return f"message {i} has content of type {type(content).__name__} (expected text or a list of blocks)"
        for j, b in enumerate(content):
            if not isinstance(b, dict) or not isinstance(b.get("type"), str):
                return f"block {j} of message {i} is not an object with a 'type'"
            for name, kind in _BLOCK_FIELDS.get(b["type"], {}).items():
                if not isinstance(b.get(name), kind):
                    return f"the {b['type']} block {j} of message {i} has {name}={b.get(name)!r:.60}"
            if (
                b["type"] == "tool_result"
                and isinstance(b["content"], list)
                and not all(isinstance(x, dict) for x in b["content"])
            ):
                return f"the tool_result block {j} of message {i} has content items that are not objects"
            if b["type"] == "tool_use":
                if b["id"] in seen_ids:
                    return f"tool_use id {b['id']!r} appears twice (message {i})"
                seen_ids.add(b["id"])
    return None


def _restore_granted(data: JsonObject, agent: Conversation) -> list[str]:
    """Put back the allow rules granted with "always"; return why any were not.

    A saved file may come from someone else, from another project, or have been changed by a
    command since it was saved (it sits in the working directory): rules only come back when
    the person's key signed them (`person_key.py`: so %agent_save wrote them as they are), for
    the directory they were granted in (path rules are relative to it), never as a whole-tool
    grant (`Bash` would allow any command), and the caller lists what came back.
    """
    granted = data.get("granted") or {}
    texts = granted.get("allow") if isinstance(granted, dict) else None
    if not isinstance(texts, list) or not texts:
        return []
    if str(data.get("cwd", "")) != str(agent.cwd):
        return [
            f"{len(texts)} granted rule(s) were for {data.get('cwd')!r}, not {str(agent.cwd)!r}; grant them again here if you want them"
        ]
    if not verify(_GRANTS, [str(data.get("cwd", "")), granted], data.get("granted_signature")):
        return [
            f"{len(texts)} granted rule(s) were not restored: they do not carry the signature %agent_save "
            "gives them with your key, so they were written or changed after the save, by hand or by a "
            "command (or saved by another person); the conversation itself is back. Grant them again if "
            "you want them"
        ]
    skipped = []
    for text in texts:
        if not isinstance(text, str):
            skipped.append(f"{text!r:.60} is not a rule")
            continue
        try:
            rule = parse_rule(text, "granted")
        except ValueError as e:
            skipped.append(str(e))
            continue
        if matches_everything(rule):  # `Bash`, `Bash(*)`, `Read(**)`, `Edit(//**)`...
            skipped.append(f"{rule.text!r} would allow every {rule.tool} call; grant it again if you mean it")
            continue
        agent.rules.add("allow", rule, source="granted")
    return skipped
