"""The permission decision a Bash command gets, as the agent makes it: the tool's own check, then
the rules and the mode (runtime/permissions.decide)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from ipy_agent.permissions.decide import Decision, decide
from ipy_agent.permissions.rules import PermissionRules
from ipy_agent.tools.bash import BashInput, BashTool

from .tools import tool_ctx


def project(root: Path) -> Path:
    """A small project: the files everyday commands name."""
    for name in (
        "README.md",
        "f",
        "a",
        "b",
        "f.json",
        "setup.py",
        "log",
        "x.py",
        "src/main.py",
        "src/util.py",
        "data.csv",
        "notes.txt",
        "tests/test_x.py",
    ):
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x\n")
    return root


def decision(
    command: str,
    cwd: Path,
    *,
    mode: str = "default",
    allow: list[str] | None = None,
    deny: list[str] | None = None,
    ask: list[str] | None = None,
    read_deny: tuple[str, ...] = (),
) -> Decision:
    """As the agent decides: the built-in Read deny rules (credential stores) are in force, with
    `read_deny` after them as the person's own."""
    tool, inp = BashTool(), BashInput(command=command)
    rules = PermissionRules.with_builtin(allow, ask, deny)
    in_force = (*rules.read_deny(cwd, (cwd,)), *read_deny)
    ctx = tool_ctx(cwd, permission_mode=mode, read_deny=in_force, spill_dir=cwd / ".spill")
    check = asyncio.run(tool.check_permissions(inp, ctx))
    return decide(tool=tool, inp=inp, ctx=ctx, rules=rules, mode=mode, tool_check=check, hook_decision=None)
