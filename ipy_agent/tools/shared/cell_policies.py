"""The person's cell policies, held on a notebook file whichever editing tool writes it.

Write, Edit and NotebookEdit all write through `FileEditingTool` (edit_plan.py), which asks here
three times, each against the file as it is then: when the input is validated (a refusal is told
to the model at once), in the permission check (an ask names the cells and policies to the person,
in every mode), and right before the atomic write (a refusal holds even if the file changed after
the prompt, and an ask holds only if a person answered it). The judgement itself is the notebook
layer's (`ipy_agent.notebook.cell_guard`).

A file is judged as a notebook when its real path ends in `.ipynb`, or when other names share its
inode (a hard link made by a command can give a notebook another name; the writer rewrites such a
file in place): a file's content with no `agent:` in it is not parsed.
"""

from __future__ import annotations

import os
from pathlib import Path

from ipy_agent.contract.decision import CallDecision
from ipy_agent.contract.tool import PermissionCheck, ToolError
from ipy_agent.notebook.cell_guard import Verdict, file_breaches

__all__ = ["EVERY_TIME", "check_before_write", "permission_for", "refusal_for", "verdict_for"]

EVERY_TIME = "so it is confirmed every time, in every mode"


def _current(path: Path) -> bytes | None:
    """The file's bytes when it may be a notebook, else None."""
    try:
        st = os.stat(path)
        if path.suffix.lower() != ".ipynb" and st.st_nlink < 2:
            return None
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def verdict_for(path: Path, new_raw: bytes) -> Verdict:
    """What writing `new_raw` over `path` now would do to the cell policies it holds."""
    return file_breaches(_current(path), new_raw)


def refusal_for(path: Path, new_raw: bytes, display: str) -> str | None:
    """Why the write is refused (a policy that refuses), or None."""
    verdict = verdict_for(path, new_raw)
    return verdict.refusal(display) if verdict.demand == "refuse" else None


def permission_for(path: Path, new_raw: bytes, display: str) -> PermissionCheck | None:
    """The tool's permission opinion on the write: deny, an ask in every mode, or None."""
    verdict = verdict_for(path, new_raw)
    if verdict.demand == "refuse":
        return PermissionCheck(behavior="deny", message=verdict.refusal(display))
    if verdict.demand == "ask":
        return PermissionCheck(behavior="ask", always=True, message=f"{verdict.question(display)}, {EVERY_TIME}")
    return None


def check_before_write(path: Path, new_raw: bytes, display: str, decision: CallDecision) -> None:
    """Raise unless the write keeps the policies, or only lifts some the person was asked about."""
    verdict = verdict_for(path, new_raw)
    if verdict.demand == "refuse":
        raise ToolError(verdict.refusal(display))
    if verdict.demand == "ask" and not decision.by_person:
        raise ToolError(
            f"Not written: {verdict.question(display)}, and no person approved this call. Ask the person to "
            "change the cell's policy themselves, or leave it."
        )
