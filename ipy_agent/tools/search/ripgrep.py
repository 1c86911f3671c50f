"""What Glob and Grep share: finding and running ripgrep, and being a read-only path tool.

Both tools are thin, honest wrappers around ripgrep (the `rg` binary from the `ripgrep` wheel),
never a Python re-implementation: ripgrep is what makes a search over a big tree fast. This
module owns the parts that would otherwise be written twice and drift apart:

- locating `rg` (the venv that runs us first, then PATH), with an error that says how to fix it;
- running it as an asyncio subprocess that is killed when the call is cancelled, with a cap on
  how much output we keep in memory (a search for `.` over a huge tree must not exhaust it);
- the permission face of a search: both answer to `Read(...)` rules, on the absolute search path,
  and ask before looking outside the working directories;
- the files themselves: a `Read(...)` deny rule also hides the files it names from a search
  over a folder that contains them (a `Read(**/.env)` rule that Grep could read around would
  protect nothing). `DenyFilter` is the authoritative check on every path ripgrep prints;
  `deny_globs` are the same rules in ripgrep's own terms, so denied files are not even opened.
"""

from __future__ import annotations

import asyncio
import functools
import os
import shutil
import stat
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ipy_agent.base.secrets import tool_environ
from ipy_agent.contract.tool import InputT, PermissionCheck, ResultT, RuleSubject, Tool, ToolError
from ipy_agent.contract.tool_context import ToolContext

__all__ = [
    "MAX_OUTPUT_BYTES",
    "VCS_DIRS",
    "DenyFilter",
    "RgRun",
    "SearchTool",
    "deny_globs",
    "display_prefix",
    "exclusion_args",
    "find_rg",
    "list_denied",
    "newest_first",
    "plural",
    "run_rg",
    "vcs_globs",
]

# Version-control metadata is never what the model is looking for and can be enormous.
VCS_DIRS = (".git", ".hg", ".svn", ".bzr", ".jj", "_darcs")

# Output kept from one ripgrep run. Far above any result budget (the model never sees this
# much), but bounded so `pattern="."` over a whole disk cannot take the kernel's memory with it.
MAX_OUTPUT_BYTES = 32 * 1024 * 1024
# Seconds one ripgrep run may take: a search stuck on a slow mount or a special file must end.
RG_TIMEOUT_S = 60.0

_RG_NAME = "rg.exe" if os.name == "nt" else "rg"


@functools.cache
def find_rg() -> str:
    """The ripgrep executable: the one installed beside this Python (the `ripgrep` wheel puts it
    in the environment's scripts folder, which is not always on PATH in a kernel), else PATH."""
    candidates = [Path(sys.executable).parent / _RG_NAME]
    for scheme_path in (sysconfig.get_path("scripts"), _user_scripts()):
        if scheme_path:
            candidates.append(Path(scheme_path) / _RG_NAME)
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which(_RG_NAME)
    if found:
        return found
    raise ToolError(
        f"ripgrep ({_RG_NAME!r}) was not found next to {sys.executable!r} nor on PATH. "
        "Install it into this environment with `pip install ripgrep==14.1.0`, then retry."
    )


def _user_scripts() -> str | None:
    try:
        return sysconfig.get_path("scripts", f"{os.name}_user")
    except KeyError:
        return None


def vcs_globs() -> list[str]:
    """`--glob !.git ...`: last on the command line, so no user glob can re-include them."""
    args: list[str] = []
    for name in VCS_DIRS:
        args += ["--glob", f"!{name}"]
    return args


@dataclass(frozen=True, kw_only=True)
class RgRun:
    code: int | None
    stdout: bytes
    stderr: str
    # True when the output passed MAX_OUTPUT_BYTES and ripgrep was stopped early.
    cut: bool


async def run_rg(
    args: list[str], cwd: Path, max_bytes: int = MAX_OUTPUT_BYTES, timeout_s: float | None = None
) -> RgRun:
    """Run ripgrep with `args` in `cwd`; kill it if the call is cancelled (an interrupt, or a
    sibling's failure) so no orphan keeps scanning the disk after the agent moved on, and when
    it passes `timeout_s` (default RG_TIMEOUT_S), which ends the call with a ToolError."""
    limit = RG_TIMEOUT_S if timeout_s is None else timeout_s
    proc = await asyncio.create_subprocess_exec(
        find_rg(),
        "--no-config",  # a user's RIPGREP_CONFIG_PATH must not change what the model gets
        *args,
        cwd=str(cwd),
        env=tool_environ(),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        (out, cut), (err, _) = await asyncio.wait_for(
            asyncio.gather(
                _read_capped(proc.stdout, max_bytes, proc),
                _read_capped(proc.stderr, 64 * 1024, None),
            ),
            limit,
        )
        code = await proc.wait()
    except TimeoutError:
        proc.kill()
        await asyncio.shield(proc.wait())
        raise ToolError(
            f"The search did not finish within {limit:g} s and was stopped. Narrow it: a `path` deeper in the "
            "tree, a `glob` or `type` filter, or a more specific pattern."
        ) from None
    except BaseException:
        if proc.returncode is None:
            proc.kill()
            await asyncio.shield(proc.wait())
        raise
    if cut:
        # Keep whole records only: drop whatever follows the last newline or NUL.
        last = max(out.rfind(b"\n"), out.rfind(b"\0"))
        out = out[: last + 1]
    return RgRun(code=code, stdout=out, stderr=err.decode("utf-8", "replace").strip(), cut=cut)


async def _read_capped(stream: Any, cap: int, proc: Any) -> tuple[bytes, bool]:
    """Read a stream to its end keeping at most `cap` bytes. Past the cap, `proc` (given for
    stdout) is killed; without it (stderr) the rest is drained and dropped so ripgrep never
    blocks on a full pipe."""
    chunks: list[bytes] = []
    total = 0
    cut = False
    while chunk := await stream.read(1 << 16):
        keep = chunk[: cap - total]
        chunks.append(keep)
        total += len(keep)
        if len(keep) < len(chunk):
            cut = True
            if proc is not None:
                proc.kill()
                break
    return b"".join(chunks), cut


def display_prefix(directory: Path, ctx: ToolContext) -> str:
    """What to put before a path ripgrep printed relative to `directory` so it reads relative
    to the working directory (or absolute when `directory` is outside it)."""
    shown = ctx.display_path(directory)
    if shown == ".":
        return ""
    return shown.rstrip(os.sep) + os.sep


def newest_first(paths: list[str], base: Path) -> list[str]:
    """Sort by modification time, newest first; ties by path so the order is reproducible.
    Blocking (one stat per path): call it through `asyncio.to_thread`. Stats go through a
    descriptor of `base` where the OS allows it: three times faster than joining paths."""
    use_fd = os.stat in os.supports_dir_fd
    fd = os.open(base, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)) if use_fd else None
    keyed: list[tuple[int, str]] = []
    try:
        for p in paths:
            try:
                mtime = os.stat(p, dir_fd=fd).st_mtime_ns if use_fd else os.stat(base / p).st_mtime_ns
            except OSError:  # deleted between the search and now: last
                mtime = -1
            keyed.append((-mtime, p))
    finally:
        if fd is not None:
            os.close(fd)
    keyed.sort()
    return [p for _, p in keyed]


def plural(n: int, word: str, words: str | None = None) -> str:
    return f"{n:,} {word if n == 1 else (words or word + 's')}"


class SearchTool(Tool[InputT, ResultT]):
    """Glob and Grep: read-only, parallel-safe, governed by Read(...) rules on the search path."""

    kind = "read"
    rule_names = ("Read",)

    def search_root(self, inp: InputT, ctx: ToolContext) -> Path:
        """Where the search starts: the directory its rules and its prompt are about."""
        raise NotImplementedError

    def _read_only(self, inp: InputT) -> bool:
        return True

    def _concurrency_safe(self, inp: InputT) -> bool:
        return True

    def rule_subject(self, inp: InputT, ctx: ToolContext) -> RuleSubject | None:
        return RuleSubject(kind="path", value=str(self.search_root(inp, ctx)))

    def suggest_rule(self, inp: InputT, ctx: ToolContext) -> str:
        root = self.search_root(inp, ctx)
        # Rules take `//` for an absolute path; the rule covers the tree that was searched.
        return f"Read(/{root.as_posix()}/**)"

    async def check_permissions(self, inp: InputT, ctx: ToolContext) -> PermissionCheck:
        root = self.search_root(inp, ctx)
        if ctx.is_readable_without_prompt(root):
            return PermissionCheck()
        return PermissionCheck(
            behavior="ask",
            message=f"{self.name} wants to search {str(root)!r}, outside the working directories.",
        )

    def missing_path_message(self, root: Path, ctx: ToolContext) -> str | None:
        try:
            mode = root.stat().st_mode
        except OSError:
            mode = None
        if mode is not None and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            # Reading a FIFO waits for a writer forever; a device may never end.
            return (
                f"Path {str(root)!r} is not a regular file or directory (a pipe, socket or device), "
                f"so {self.name} will not read it. Give a file or a directory."
            )
        if root.exists():
            return None
        return (
            f"Path {str(root)!r} does not exist (the working directory is {str(ctx.cwd)!r}). "
            "Check the spelling, or omit `path` to search the working directory."
        )

    @staticmethod
    def rg_failure(run: RgRun, what: str, hint: str = "") -> ToolError:
        detail = run.stderr or f"ripgrep exited with status {run.code} and no message"
        return ToolError(f"{what} failed:\n{detail}" + (f"\n\n{hint}" if hint else ""))


# --- files hidden by Read(...) deny rules ------------------------------------------------------

# Characters whose meaning differs between our rule matcher and ripgrep's globs ({a,b} is an
# alternative to ripgrep, a literal to us): such rules are left to the post-filter alone.
_UNPORTABLE = set("{}\\!")


def deny_globs(ctx: ToolContext, workdir: Path) -> list[str]:
    """The Read deny specifiers that mean exactly the same as a ripgrep glob run in `workdir`.

    Rules are relative to cwd. An unanchored one (`*.pem`, `.env`, `**/.env`) matches at any
    depth, so it holds for any folder inside cwd; an anchored one (`secrets/**`, `/x`, `./x`)
    only when ripgrep runs in cwd itself (then a leading `/` anchors it there). `//abs` and `~/`
    forms, and anything else, are left to `DenyFilter`, which is authoritative anyway."""
    if not ctx.read_deny:
        return []
    cwd = os.path.normpath(str(ctx.cwd))
    wd = os.path.normpath(str(workdir))
    inside = wd == cwd or wd.startswith(cwd.rstrip(os.sep) + os.sep)
    out: list[str] = []
    for spec in ctx.read_deny:
        spec = spec.strip()
        if not spec or _UNPORTABLE & set(spec) or spec.startswith(("//", "~")):
            continue
        if spec.startswith("./"):
            anchored, pat = True, spec[2:]
        elif spec.startswith("/"):
            anchored, pat = True, spec[1:]
        else:
            anchored = "/" in spec.rstrip("/") and not spec.startswith("**/")
            pat = spec
        if not pat.strip("/"):
            continue
        if not anchored and inside:
            out.append(pat)
        elif anchored and wd == cwd:
            out.append("/" + pat.lstrip("/"))
    return out


def exclusion_args(patterns: list[str]) -> list[str]:
    """`--glob !pattern` for each; put them last so no user glob can re-include a denied file."""
    args: list[str] = []
    for pattern in patterns:
        args += ["--glob", f"!{pattern}"]
    return args


class DenyFilter:
    """Drops the paths (relative to `workdir`, as ripgrep prints them) that a Read deny rule
    covers, and remembers them for the note the model gets. ripgrep never follows symlinks in
    a search, so links are judged by their own path here."""

    def __init__(self, ctx: ToolContext, workdir: Path) -> None:
        self.ctx = ctx
        self.workdir = str(workdir)
        self.hidden: dict[str, str] = {}  # path -> the rule that hides it

    def keep(self, path: str) -> bool:
        if not self.ctx.read_deny:
            return True
        rule = self.ctx.is_read_denied(os.path.join(self.workdir, path), follow_links=False)
        if rule is None:
            return True
        self.hidden[os.path.normpath(path)] = rule
        return False

    def add(self, found: dict[str, str]) -> None:
        for path, rule in found.items():
            self.hidden.setdefault(os.path.normpath(path), rule)

    def note(self) -> str:
        """One line for the model when something was left out; "" otherwise. It names the rules,
        never the files or what is in them."""
        if not self.hidden:
            return ""
        rules = ", ".join(dict.fromkeys(sorted(self.hidden.values())))
        return f"({plural(len(self.hidden), 'file')} hidden by deny rules: {rules})"


async def list_denied(ctx: ToolContext, workdir: Path, patterns: list[str], flags: list[str]) -> dict[str, str]:
    """The files under `workdir` that the deny `patterns` keep out of a search, each with its
    rule: a file listing (no file is opened), so the count tells the model how many files it
    cannot see without telling it whether they match. `flags` are the search's own walking
    flags (hidden files, ignore files), so the listing covers what the search would have."""
    if not patterns:
        return {}
    args = ["--files", *flags, "--null"]
    for pattern in patterns:
        args += ["--glob", pattern]
    run = await run_rg([*args, *vcs_globs(), "--", "."], cwd=workdir)
    paths = [p for p in run.stdout.decode("utf-8", "replace").split("\0") if p]

    def judge() -> dict[str, str]:
        found = {}
        for p in paths:
            rule = ctx.is_read_denied(os.path.join(workdir, p), follow_links=False)
            if rule is not None:
                found[p] = rule
        return found

    return await asyncio.to_thread(judge)
