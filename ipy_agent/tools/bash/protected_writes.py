"""Bash commands that may write a file deciding what runs or what is allowed (see `tools/protected`).

A command that is not read-only and names such a path anywhere (an argument, an option's value,
a redirection target, a `cd` on the way) asks in every mode, as Edit and Write do for the same
files; so does `git config` that sets something, which writes `.git/config` without naming it.
What a command writes without naming it (an archive unpacked, a patch applied) is not seen.
"""

from __future__ import annotations

import os

from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.tools.shared.protected import protected_reason, write_checker

from .options import path_candidates
from .syntax import analyze
from .wrappers import program_name, unwrap

__all__ = ["protected_write"]

_GIT_CONFIG_READS = frozenset(
    {
        "--get",
        "--get-all",
        "--get-regexp",
        "--get-urlmatch",
        "-l",
        "--list",
        "get",
        "list",
        "--get-color",
        "--get-colorbool",
    }
)


def protected_write(command: str, ctx: ToolContext | None = None, start: str | None = None) -> str | None:
    """Why a (not read-only) command may write a protected file, or None. With `ctx`, paths
    (relative to `start`, the shell's directory) are also judged by the live environment:
    the kernel's sys.path, modules a file would shadow, git's hooks path (`write_reason`)."""
    try:
        a = analyze(command)
    except Exception:
        return "the command could not be parsed, so what it writes is unknown"
    words = [w for c in a.everything for w in ([c.name] if c.name else []) + list(c.args)]
    words += [r.target for r in a.redirects if r.target is not None]
    check = write_checker(ctx) if ctx is not None else None
    base = start or (str(ctx.cwd) if ctx is not None else "")
    for w in words:
        texts = [w.text] if w.text is not None else [w.source]
        for text in texts:
            for candidate in dict.fromkeys([text, *path_candidates(text)]):
                reason = protected_reason(candidate)
                if reason is None and check is not None and candidate and not candidate.startswith("-"):
                    reason = check(os.path.join(base, os.path.expanduser(candidate)))
                if reason:
                    return f"the command names {candidate!r}, and {reason}: it asks every time"
    for cmd in a.everything:
        _wrappers, real = unwrap([cmd.name, *cmd.args] if cmd.name else [])
        if real and program_name(real[0]) == "git":
            texts = [w.text or w.source for w in real[1:]]
            sub = next((t for t in texts if not t.startswith("-")), "")
            if sub == "config" and not set(texts) & _GIT_CONFIG_READS:
                return "git config can set a pager, hooks path or alias that runs programs later"
            if any(t.startswith("--template") for t in texts):
                return "git --template installs hooks that run later"
    return None
