"""The permission stage's words, as a tool and the runtime share them: the modes a person runs
in, what a rule or a hook or a tool may say about a call, who let a call run, and the
`CallDecision` a tool's `call` is given.

They live in the contract because both sides name them: the permission stage (permissions/)
decides with them, and a tool reads them (Bash contains what no one approved, the run's mode
shows in its guidance).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, get_args

__all__ = [
    "APPROVALS",
    "BEHAVIORS",
    "CHECK_BEHAVIORS",
    "PERMISSION_MODES",
    "UNDECIDED",
    "Behavior",
    "CallDecision",
    "CheckBehavior",
    "DecisionSource",
    "PermissionMode",
    "WriteDecision",
]

PermissionMode = Literal["default", "acceptEdits", "plan", "bypassPermissions"]
PERMISSION_MODES: tuple[PermissionMode, ...] = get_args(PermissionMode)

# What a rule, a hook or the decision says about a call.
Behavior = Literal["allow", "ask", "deny"]
BEHAVIORS: tuple[Behavior, ...] = get_args(Behavior)
# What a tool's own check may say (`PermissionCheck`): the same, or "passthrough" (no opinion).
CheckBehavior = Literal["allow", "ask", "deny", "passthrough"]
CHECK_BEHAVIORS: tuple[CheckBehavior, ...] = get_args(CheckBehavior)

# Which step of the permission decision let a call run (see `permissions.decide`). "rule",
# "person", "mode" and "hook" are approvals; "tool" and "default" mean the runtime judged the
# call safe by itself, so a tool may contain it (Bash runs such commands in its OS sandbox).
DecisionSource = Literal["rule", "mode", "hook", "person", "tool", "default", "approver"]
APPROVALS: frozenset[DecisionSource] = frozenset({"rule", "mode", "hook", "person"})


@dataclass(frozen=True, kw_only=True)
class WriteDecision:
    """What the permission decision saw of a file a tool is about to write: where its path
    really led then (symlinks resolved), and why writing there changes what runs (None: nothing
    said so). The file writer (tools/shared/fileio.py: `atomic_write`) lands there or nowhere."""

    real: Path
    protected: str | None = None


@dataclass(frozen=True, kw_only=True)
class CallDecision:
    """What the permission stage decided for one call, given to the tool's `call` with its input.

    `source` is who let the call run (None: nobody said, as for a direct call, which counts as
    "not approved": fail closed); `answers` are the person's answers to the questions the call
    asked (AskUserQuestion), question -> answer, None when no person answered; `writes`, what
    the tool's own permission check saw of each file the call will write, by the path as named
    (`resolve`d): the writer refuses to land anywhere else, so a directory swapped for a symlink
    after the decision cannot redirect it.
    """

    source: DecisionSource | None = None
    answers: Mapping[str, str] | None = None
    writes: Mapping[str, WriteDecision] = field(default_factory=dict)

    @property
    def approved(self) -> bool:
        """A person, a rule, a mode or a hook let this call run (not the runtime's own judgement)."""
        return self.source in APPROVALS

    @property
    def by_person(self) -> bool:
        """A person answered this very call's prompt."""
        return self.source == "person"


# The decision of a call no permission stage saw (a tool called directly): nothing approved it.
UNDECIDED = CallDecision()
