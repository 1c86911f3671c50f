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

Names are only half of it. `write_reason` also asks the live environment (base/surfaces.py,
the one list every layer enforces: this rule layer, the writable sandbox's read-only binds,
the file writer): the kernel's sys.path, modules the project would shadow, Jupyter's and
IPython's directories, the hooks directory and config files git really uses, the person's own
ipy_agent directories (settings, AGENTS.md, skills: `base/paths.py: personal_dirs`); and the
run itself (`ToolContext.protected_files`: the scripts MCP servers run). The names themselves
are in base/surface_names.py.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
from collections.abc import Callable

from ipy_agent.base.surface_names import PROTECTED_DIRS, PROTECTED_FILES
from ipy_agent.base.surfaces import surfaces
from ipy_agent.contract.tool_context import ToolContext, realpath_via

__all__ = [
    "protected_paths_reason",
    "protected_reason",
    "write_checker",
    "write_reason",
]

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


def write_reason(path: str, ctx: ToolContext) -> str | None:
    """Why writing `path` (relative to cwd, `~` expanded; as named and where it really is)
    changes what runs later: by its name, by the live environment, or because the run names
    it (an MCP server's script). None when nothing says so."""
    return write_checker(ctx)(path)


def write_checker(ctx: ToolContext) -> Callable[[str], str | None]:
    """`write_reason` with the environment looked up once, for a caller checking many paths
    (a long Bash command names hundreds): each directory is resolved once, each path costs an
    lstat at most, a dictionary lookup and a scan of a few dozen prefixes."""
    found = surfaces(ctx.all_dirs())
    extra = dict(ctx.protected_files)
    extra_dirs = [(d.rstrip("/") + "/", why) for d, why in ctx.protected_files]
    cwd = str(ctx.cwd)
    real_dirs: dict[str, str] = {}

    seen: dict[str, str | None] = {}

    def reason(path: str) -> str | None:
        if path in seen:
            return seen[path]
        seen[path] = found_reason = _reason(path)
        return found_reason

    def _reason(path: str) -> str | None:
        target = os.path.normpath(os.path.join(cwd, os.path.expanduser(path) if path.startswith("~") else path))
        candidates = [target]
        if (real := realpath_via(target, real_dirs)) != target:
            candidates.append(real)
        for p in candidates:
            if why := protected_reason(p):
                return why
        for p in candidates:
            if why := extra.get(p) or next((w for d, w in extra_dirs if p.startswith(d)), None):
                return why
            if why := found.reason(p):
                return why
        return None

    return reason
