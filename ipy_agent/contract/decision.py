"""The permission stage's words, as a tool and the runtime share them: the modes a person runs
in, what a rule or a hook or a tool may say about a call, and who let a call run.

They live in the contract because both sides name them: the permission stage (permissions/)
decides with them, and a tool reads them (Bash contains what no one approved, the run's mode
shows in its guidance).
"""

from __future__ import annotations

from typing import Literal, get_args

__all__ = [
    "APPROVALS",
    "BEHAVIORS",
    "CHECK_BEHAVIORS",
    "PERMISSION_MODES",
    "Behavior",
    "CheckBehavior",
    "DecisionSource",
    "PermissionMode",
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
