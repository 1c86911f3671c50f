"""What Read deny rules cover on the live filesystem, found for the sandbox to mask.

A deny rule is a pattern; a mount needs a path. So before a sandboxed command starts, each rule
is expanded against the files as they are: from the deepest directory every match of the rule
lies under (`gitignore.literal_root`: `~/.aws` for `~/.aws/**`, the working directory for
`**/.env`), entries are walked and held against the rules that could match there; each match is
masked at its real path (a symlink's target), a directory whole. A rule ending in `/**` below a
literal directory masks that directory without a walk. Only what the sandbox shows is walked and
masked (`visible`: the mounted directories; None: everything, for a sandbox over the whole
filesystem).

The walk is bounded (entries in the directories it goes through, masks made): past either bound
the caller gets None and does not run the command, since a rule it cannot mask is a rule the
command could break. A directory whose device, inode and mtime are what the last walk saw is
not listed again (one stat instead of a listing), so a repeated walk of a large tree is cheap.

A masked directory is an empty read-only tmpfs. A masked file reads as a one-line notice (so
`grep -r` and ripgrep walk past it and `cat` says why it is empty), except a file git tracks:
that one cannot be opened at all (/dev/null on a nodev mount), because git would read the notice
as an edit and `git diff` would then print the committed content back.

Masks cover files as they are when the command starts, by every name that reaches them
(symlinks resolve to the masked path). What they do not cover: a copy under another name made
before (a hard link, a backup, a file in git's history: `git log -p` shows what was
committed), and a file the command itself creates.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from ipy_agent.base.gitignore import is_exception, literal_root, rule_matcher
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.permissions.rules import ENV_FILES

__all__ = ["MAX_MASKS", "MAX_WALK", "NOTICE", "Mask", "mask_paths", "notice_file"]

NOTICE = "# hidden by the sandbox: a Read deny rule covers this file\n"


@dataclass(frozen=True)
class Mask:
    """A path to hide and how: "dir" (an empty directory), "file" (the notice), "sealed" (a
    file that cannot be opened)."""

    path: str
    kind: Literal["dir", "file", "sealed"]


_NOTICE_FILE: list[str] = []


def notice_file() -> str:
    """A read-only file holding NOTICE, made once per process (again if something removed it)."""
    if _NOTICE_FILE and os.path.isfile(_NOTICE_FILE[0]):
        return _NOTICE_FILE[0]
    fd, path = tempfile.mkstemp(prefix="ipy_agent_masked_", suffix=".txt")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(NOTICE)
    os.chmod(path, 0o444)
    _NOTICE_FILE[:] = [path]
    return path


MAX_WALK = 500_000  # entries in the directories all walks of one command go through
MAX_MASKS = 4_000  # mounts one command's sandbox may get for masks


class _Over(Exception):
    """A bound was passed."""


def mask_paths(ctx: ToolContext, visible: Sequence[str] | None) -> list[Mask] | None:
    """A mask at the real path of everything the Read deny rules cover that the sandbox shows,
    shallowest first; None past a bound."""
    if not ctx.read_deny:
        return []
    home = os.path.expanduser("~")
    roots: dict[str, list[str]] = {}
    whole: list[str] = []
    # `!` exceptions (what explicit allow rules lift; the working directories' own `.env*`) go
    # with every walk, in their place in the list: the last match decides (base/gitignore.py).
    exceptions = tuple(p for p in ctx.read_deny if is_exception(p))
    for pattern in ctx.read_deny:
        if is_exception(pattern) or pattern.strip() == ENV_FILES:
            continue  # `.env*` anywhere is looked for where such files are kept (_env_files)
        root = literal_root(pattern, cwd=ctx.cwd, home=home)
        if _covers_whole(pattern):
            whole.append(root)
        else:
            roots.setdefault(root, []).append(pattern)
    walk = _Walk(ctx, visible)
    try:
        for root in whole:
            for start in walk.starts(root):
                if os.path.lexists(start):
                    walk.mask(start)
        for root, patterns in roots.items():
            # A walk from a root also checks the patterns rooted below it (they match only
            # there), so a root below another one is not walked again.
            if any(other != root and _under(root, other) for other in roots):
                continue
            group = {p for other, ps in roots.items() if _under(other, root) for p in ps} | set(patterns)
            rules = tuple(p for p in ctx.read_deny if p in group or (p in exceptions and group))
            for start in walk.starts(root):
                walk.walk(start, rules)
        if any(p.strip() == ENV_FILES for p in ctx.read_deny):
            _env_files(ctx, walk, home)
    except _Over:
        return None
    found = walk.found()
    tracked = _tracked([path for path, is_dir in found if not is_dir])
    return [Mask(path, "dir" if is_dir else "sealed" if path in tracked else "file") for path, is_dir in found]


@dataclass(frozen=True)
class _Listing:
    """One directory as a walk saw it: what in it is denied, its symlinks (judged again each
    walk), the subdirectories to go on into, and its change stamp (reused while it holds)."""

    stamp: tuple[int, int, int]  # st_dev, st_ino, st_mtime_ns; (0, 0, 0): never reuse
    denied: tuple[str, ...]
    links: tuple[str, ...]
    subdirs: tuple[str, ...]
    entries: int


# Walks from the last few (start, rules, cwd): a directory whose stamp has not changed is not
# listed again, so a repeated walk costs one stat per directory. A directory changed within the
# last seconds is listed every time: its mtime may not show a change made in the same tick.
_LISTINGS: dict[tuple[str, tuple[str, ...], str], dict[str, _Listing]] = {}
_KEEP_WALKS = 16
_RACY_NS = 2_000_000_000


def _listing(top: str, known: _Listing | None, denied: Callable[[list[str]], str | None]) -> _Listing | None:
    try:
        st = os.stat(top)
    except OSError:
        return None
    stamp = (st.st_dev, st.st_ino, st.st_mtime_ns)
    if known is not None and known.stamp == stamp:
        return known
    bad, links, subdirs, entries = [], [], [], 0
    try:
        with os.scandir(top) as it:
            for entry in it:
                entries += 1
                if entry.is_symlink():
                    links.append(entry.name)
                elif denied([entry.path]) is not None:
                    bad.append(entry.name)
                elif entry.is_dir(follow_symlinks=False):
                    subdirs.append(entry.name)
    except OSError:
        return None
    racy = time.time_ns() - st.st_mtime_ns < _RACY_NS
    return _Listing((0, 0, 0) if racy else stamp, tuple(bad), tuple(links), tuple(subdirs), entries)


def _env_files(ctx: ToolContext, walk: _Walk, home: str) -> None:
    """The built-in `.env*` rule matches anywhere outside the working directories; no walk can
    cover a whole filesystem, so it is masked where such files are kept: the folders above each
    working directory (a monorepo's root, the folder of projects) and the home directory. The
    rule still holds everywhere for every path a tool or a command names."""
    places = {os.path.realpath(home)}
    for d in ctx.all_dirs():
        cur = os.path.dirname(os.path.realpath(d))
        while True:
            places.add(cur)
            if os.path.dirname(cur) == cur:
                break
            cur = os.path.dirname(cur)
    for place in sorted(places):
        try:
            with os.scandir(place) as it:
                names = [e.path for e in it if e.name.startswith(".env")]
        except OSError:
            continue
        for path in names:
            if ctx.is_read_denied(path, follow_links=False) is not None:
                walk.mask(path)


def _covers_whole(pattern: str) -> bool:
    """`dir/**` with no wildcard before it: everything below one directory."""
    text = pattern.strip()
    return text.endswith("/**") and not any(c in text[:-3] for c in "*?[") and text not in ("/**", "//**", "~/**")


def _under(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")


class _Walk:
    def __init__(self, ctx: ToolContext, visible: Sequence[str] | None) -> None:
        self.ctx = ctx
        self.visible = None if visible is None else [os.path.realpath(v) for v in visible]
        self.masks: dict[str, bool] = {}
        self.seen = 0

    def starts(self, root: str) -> list[str]:
        """Where to walk for `root`: itself when the sandbox shows it, else the mounted
        directories inside it (nothing else of it is there to read)."""
        if self.visible is None or any(_under(root, v) for v in self.visible):
            return [root]
        real = os.path.realpath(root)
        if real != root and any(_under(real, v) for v in self.visible):
            return [root]
        return [v for v in self.visible if _under(v, real)]

    def mask(self, path: str) -> None:
        real = os.path.realpath(path)
        if self.visible is not None and not any(_under(real, v) for v in self.visible):
            return  # not in the sandbox at all
        if real not in self.masks:
            if len(self.masks) >= MAX_MASKS:
                raise _Over
            self.masks[real] = os.path.isdir(real)

    def walk(self, start: str, rules: tuple[str, ...]) -> None:
        if not rules or not os.path.lexists(start):
            return
        denied = rule_matcher(rules, cwd=self.ctx.cwd)
        if denied([start]) is not None:
            self.mask(start)
            return
        key = (start, rules, str(self.ctx.cwd))
        known = _LISTINGS.pop(key, {})
        fresh: dict[str, _Listing] = {}
        stack = [start]
        while stack:
            top = stack.pop()
            listing = _listing(top, known.get(top), denied)
            if listing is None:
                continue
            fresh[top] = listing
            self.seen += listing.entries
            if self.seen > MAX_WALK:
                raise _Over
            for name in listing.denied:
                self.mask(os.path.join(top, name))
            for name in listing.links:
                # `link -> .env`: judged by where it leads as well as by its name, each time
                # (where a link leads can change without its directory changing).
                path = os.path.join(top, name)
                if denied([path, os.path.realpath(path)]) is not None:
                    self.mask(path)
            prefix = top if top.endswith("/") else top + "/"
            stack += [prefix + name for name in listing.subdirs]
        _LISTINGS[key] = fresh
        while len(_LISTINGS) > _KEEP_WALKS:
            del _LISTINGS[next(iter(_LISTINGS))]

    def found(self) -> list[tuple[str, bool]]:
        # Shallow first: a mask inside a masked directory is not needed (and would find no
        # mount point in the empty directory that hides it).
        out: list[tuple[str, bool]] = []
        for path in sorted(self.masks, key=lambda p: (p.count("/"), p)):
            if not any(is_dir and _under(path, d) for d, is_dir in out):
                out.append((path, self.masks[path]))
        return out


def _tracked(files: list[str]) -> set[str]:
    """Those of `files` git tracks in the work tree they are in. When git cannot say, all of
    them (a sealed file is the safe mistake)."""
    by_top: dict[str, list[str]] = {}
    for f in files:
        top = os.path.dirname(f)
        while not os.path.lexists(os.path.join(top, ".git")) and os.path.dirname(top) != top:
            top = os.path.dirname(top)
        if os.path.lexists(os.path.join(top, ".git")):
            by_top.setdefault(top, []).append(f)
    out: set[str] = set()
    for top, inside in by_top.items():
        rel = [os.path.relpath(f, top) for f in inside]
        try:
            done = subprocess.run(
                ["git", "-C", top, "-c", "core.fsmonitor=false", "--literal-pathspecs", "ls-files", "-z", "--", *rel],
                capture_output=True,
                timeout=10,
                stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.TimeoutExpired):
            out.update(inside)
            continue
        if done.returncode != 0:
            out.update(inside)
            continue
        listed = {os.path.normpath(os.path.join(top, p)) for p in os.fsdecode(done.stdout).split("\0") if p}
        out.update(f for f in inside if f in listed)
    return out
