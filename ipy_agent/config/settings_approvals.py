"""Which allow rules of a project's settings files the person has approved, by content.

A project settings file (`.ipy_agent/settings.json`, `.claude/settings*.json` in the working
directory) can be written by a process the agent started and we never see: a `conftest.py` run
by an allowed `pytest`, in any folder (a notebook's kernel starts in the notebook's folder, and
the sandbox cannot put a read-only placeholder in every folder). Its deny and ask rules only add
prompts and always apply; its allow rules remove prompts, so they apply only once the person has
seen and approved exactly them. The approval is kept in the person's settings folder (a protected
surface: no command writes it), keyed by the file's full path and a fingerprint of its allow
rules: a new or changed allow rule asks again, an edit of the file's deny or ask rules does not.
The person's own settings file (`settings_dir()`) is theirs and needs no approval. A file that
cannot be read counts as no approvals.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

from ipy_agent.base.json_store import read_object, section, update_object
from ipy_agent.base.paths import settings_dir
from ipy_agent.history.blocks import JsonObject

__all__ = ["SettingsApprovals", "allow_fingerprint", "ask_on_stdin", "yes_on_stdin"]


def allow_fingerprint(texts: Sequence[str]) -> str:
    """A hash of a file's allow rules, in any order."""
    return hashlib.sha256(json.dumps(sorted(texts)).encode()).hexdigest()[:32]


class SettingsApprovals:
    def __init__(self, path: Path | None = None) -> None:
        self._path = path

    @property
    def path(self) -> Path:
        # Resolved late: tests and people may point IPY_AGENT_CONFIG_DIR elsewhere after import.
        return self._path or settings_dir() / "settings_approvals.json"

    def _load(self) -> JsonObject:
        return read_object(self.path)

    def is_approved(self, file: Path, allow: Sequence[str]) -> bool:
        files = self._load().get("files", {})
        return isinstance(files, dict) and files.get(str(file)) == allow_fingerprint(allow)

    def remember(self, file: Path, allow: Sequence[str]) -> None:
        """Record the approval; an OSError (read-only home) is the caller's to report."""
        fingerprint = allow_fingerprint(allow)
        update_object(self.path, lambda data: section(data, "files").__setitem__(str(file), fingerprint))


_DECLINED: set[tuple[str, str]] = set()  # answered no in this kernel: not asked again until they change


def ask_on_stdin(where: str, allow: list[str]) -> bool:
    """Ask the person, once, whether a project settings file's new allow rules apply; False
    where nobody can answer (no stdin: nbconvert, papermill, a test), and without asking again
    for rules the person declined in this kernel."""
    key = (where, allow_fingerprint(allow))
    if key in _DECLINED:
        return False
    print(
        f"{where} has allow rules you have not approved (a command may have written them):\n"
        + "".join(f"  allow {text}\n" for text in allow)
        + "They would let these calls run without asking. Their deny and ask rules apply either way."
    )
    if yes_on_stdin("Apply these allow rules (remembered until they change)? [y/N] "):
        return True
    _DECLINED.add(key)
    return False


def yes_on_stdin(question: str) -> bool:
    """The person's yes to `question`, typed on stdin; False for anything else and where nobody
    can answer (no stdin: nbconvert, papermill, a test)."""
    try:
        answer = input(question)
    except KeyboardInterrupt:
        raise
    except Exception:  # EOFError, OSError, IPython's StdinNotImplementedError: nobody to ask
        return False
    return answer.strip().lower() in ("y", "yes")
