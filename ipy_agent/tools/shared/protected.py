"""Files whose contents decide what runs or what is allowed: writing them always asks.

acceptEdits lets edits inside the project pass, and a person's allow rule may cover a whole
folder; neither is meant to let the model make itself a command runner. A git hook, a
`core.pager` in `.git/config`, an agent or Claude Code settings file that adds allow rules, an
MCP server list, a shell start-up file, IPython start-up scripts: each turns one write into code
that runs later without anyone being asked. So Edit, Write, NotebookEdit and Bash commands that
name such a path ask in every mode, bypassPermissions included (a person who chose "never ask"
still sees these), and whatever allow rules say.

Paths are judged by their components, case-insensitively (macOS and Windows file systems), and
globs are matched as the shell would: `.g?t/hooks` is `.git/hooks`, while `*` does not match a
name that starts with a dot.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re

__all__ = ["PROTECTED_DIRS", "PROTECTED_FILES", "protected_paths_reason", "protected_reason"]

# A directory anywhere on the path: everything below it is protected.
PROTECTED_DIRS = frozenset(
    {
        ".git",  # config (pager, fsmonitor, hooksPath, aliases) and hooks
        ".ipy_agent",
        ".claude",  # this agent's and Claude Code's settings: permission rules, hooks
        ".vscode",
        ".idea",  # editor tasks that run when a folder opens
        ".ipython",
        ".jupyter",  # start-up scripts and configuration run by the next kernel
        ".ssh",  # `ProxyCommand`, authorized keys
    }
)
# A file of this name anywhere.
PROTECTED_FILES = frozenset(
    {
        ".mcp.json",
        ".gitconfig",
        ".gitmodules",
        ".npmrc",
        ".envrc",
        ".bashrc",
        ".bash_profile",
        ".bash_login",
        ".bash_logout",
        ".profile",
        ".inputrc",
        ".zshrc",
        ".zshenv",
        ".zprofile",
        ".zlogin",
        ".zlogout",
        ".kshrc",
        ".cshrc",
        ".tcshrc",
        ".login",
        "config.fish",
        "sitecustomize.py",
        "usercustomize.py",
    }
)
_GLOB = re.compile(r"[*?\[]")


def _matches(component: str, name: str) -> bool:
    if not _GLOB.search(component):
        return component == name
    # bash's globs never match a leading dot they do not spell out (dotglob is off); a glob is
    # held against the dotted names only, or `rm *` would ask wherever a sitecustomize.py might be.
    return name.startswith(".") and component.startswith(".") and fnmatch.fnmatchcase(name, component)


_SEPARATORS = re.compile(r"[/\\]+")


@functools.lru_cache(maxsize=4096)  # a long Bash command asks about every word, and again per check
def protected_reason(path: str) -> str | None:
    """Why writing `path` may change what runs or what is allowed (a phrase without the path),
    or None."""
    parts = [p.lower() for p in _SEPARATORS.split(path) if p not in ("", ".")]
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        # A plain name matches only itself: a set lookup; only globs are held against each name.
        glob = _GLOB.search(part) is not None
        if not glob and part in PROTECTED_DIRS:
            return f"{part}/ decides what runs or what is allowed"
        for d in PROTECTED_DIRS if glob else ():
            if _matches(part, d):
                return f"{d}/ decides what runs or what is allowed"
        if last:
            named = any(_matches(part, f) for f in PROTECTED_FILES) if glob else part in PROTECTED_FILES
            if named:
                return f"{part} is read at start-up by a shell, git or the agent, so it decides what runs"
            if part.endswith(".pth") and "site-packages" in parts:
                return "a .pth file in site-packages is run by Python at start-up"
    return None


def protected_paths_reason(*paths: str) -> str | None:
    """The first of `paths` (a path as written and where it really is) that is protected."""
    for p in paths:
        for candidate in dict.fromkeys([p, os.path.realpath(p)]):
            if reason := protected_reason(candidate):
                return reason
    return None
