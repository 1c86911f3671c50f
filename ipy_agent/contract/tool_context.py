"""What a tool may know about the run its call belongs to: `ToolContext`.

One is made per call (runtime/lifecycle.py asks the agent for it), so a tool never reaches into
the agent: the working directories it may touch, the read state edit-before-read checks, the
Read deny rules every tool honours. It is frozen: nothing the runtime learns during the call is
written on it (who let the call run is the `CallDecision` given to `call`: decision.py). Path
questions (inside the working directories? denied to Read?) are answered here, by name and by
where a path really is, so every tool answers them alike.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

from ipy_agent.base.gitignore import first_matching, is_exception, rule_matcher

from .decision import PermissionMode

if TYPE_CHECKING:
    from ipy_agent.notebook.bridge import NotebookBridge

    from .checkpoints import Checkpoints
    from .read_state import ReadState

__all__ = [
    "SANDBOX_SETTINGS",
    "SandboxLimits",
    "SandboxSetting",
    "ToolContext",
    "realpath_via",
]

SandboxSetting = Literal["auto", "always", "off"]
SANDBOX_SETTINGS: tuple[SandboxSetting, ...] = get_args(SandboxSetting)

_GIB = 1024**3


@dataclass(frozen=True, kw_only=True)
class SandboxLimits:
    """What one sandboxed command may use (`Agent(sandbox_limits=...)`): memory in bytes for
    all its processes together (per process where no cgroup can be made), processes at once,
    bytes of each private temporary filesystem (/tmp, /dev/shm). Wall time is the call's
    timeout."""

    memory: int = 2 * _GIB
    processes: int = 256
    tmp: int = 1 * _GIB

    def __post_init__(self) -> None:
        for name, least in (("memory", 64 * 1024**2), ("processes", 8), ("tmp", 1024**2)):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                raise ValueError(f"sandbox limit {name} must be an integer of at least {least}, not {value!r}")


@dataclass(frozen=True, kw_only=True)
class ToolContext:
    """What a tool may know about the run it is part of. One per call (`tool_use_id` differs);
    frozen (`session` and `read_state` are the conversation's state it carries)."""

    cwd: Path
    read_state: ReadState
    working_dirs: tuple[Path, ...] = ()
    spill_dir: Path | None = None
    permission_mode: PermissionMode = "default"
    tool_use_id: str | None = None
    # Per-conversation scratch space tools may keep between calls (Bash keeps its cwd and its
    # background commands here); a value with a `close()` is closed when the conversation is reset.
    session: dict[str, Any] = field(default_factory=dict)
    # The kernel's notebook bridge (ipy_agent.notebook.bridge) when running in a kernel, None
    # otherwise; its `connected` says whether a JupyterLab front end with the extension answers.
    notebook: NotebookBridge | None = None
    # Specifiers of the `Read(...)` deny rules in force (not whole-tool `Read`): the files they
    # name stay hidden from every tool, not only from Read (Grep, Glob, Bash check them too).
    # Read as a .gitignore is (base/gitignore.py): the last matching specifier decides, and one
    # starting with `!` takes a path back out. The agent orders them (permissions/rules.py):
    # the built-in credential-store denies, `!` exceptions (`.env*` inside the working
    # directories, what explicit allow rules lift), then the person's own denies. A consumer
    # that cannot express an exception (a mount that masks a whole directory) may ignore the
    # `!` entries: it then hides more, never less.
    read_deny: tuple[str, ...] = ()
    # Files (or directories) the run itself makes executable, with why: the scripts MCP servers
    # run. Writing them asks in every mode, as for the files tools/shared/protected.py knows.
    protected_files: tuple[tuple[str, str], ...] = ()
    # How Bash contains commands (`Agent(sandbox=...)`): "auto" sandboxes what runs without
    # approval, "always" also approved ones (writes limited to the working directories), "off"
    # sandboxes nothing and so lets only a small core of commands run without asking.
    sandbox: SandboxSetting = "auto"
    sandbox_limits: SandboxLimits = field(default_factory=SandboxLimits)
    # Where what the agent changes is kept before it changes (contract/checkpoints.py), so that
    # `Agent.rewind` can put it back; None: nothing is kept (a tool called directly).
    checkpoints: Checkpoints | None = None

    def resolve(self, path: str | Path) -> Path:
        """An absolute, normalised path: relative paths resolve against cwd, `~` expands."""
        p = Path(path).expanduser()
        if not p.is_absolute():
            p = self.cwd / p
        return Path(os.path.normpath(p))

    def all_dirs(self) -> tuple[Path, ...]:
        return (self.cwd, *self.working_dirs)

    def is_inside_working_dirs(self, path: str | Path) -> bool:
        """Inside by its name and by where it really is: a symlink in the project that points
        outside (or a new file under a symlinked directory) is outside."""
        target = self.resolve(path)
        if not any(_is_relative_to(target, d) for d in self.all_dirs()):
            return False
        real = Path(os.path.realpath(target))
        return real == target or any(_is_relative_to(real, Path(os.path.realpath(d))) for d in self.all_dirs())

    def is_readable_without_prompt(self, path: str | Path) -> bool:
        """Inside the working directories, or inside this conversation's spilled results."""
        if self.is_inside_working_dirs(path):
            return True
        if self.spill_dir is None:
            return False
        target = self.resolve(path)
        real_spill = Path(os.path.realpath(self.spill_dir))
        return _is_relative_to(target, self.spill_dir) and _is_relative_to(Path(os.path.realpath(target)), real_spill)

    def is_read_denied(
        self, path: str | Path, *, follow_links: bool = True, real_dirs: dict[str, str] | None = None
    ) -> str | None:
        """The `Read(...)` deny rule that covers `path`, as `"Read(spec)"`, or None. Relative
        paths resolve against cwd. With `follow_links`, a symlink is also judged by its target
        (`cat link-to-.env`); searches that never follow links may skip that cost. A caller
        checking many paths at one moment (a long Bash command) passes one `real_dirs` dict for
        all of them: each directory is then resolved once, and each path costs one lstat."""
        if not self.read_deny:
            return None
        target = str(path)
        if target.startswith("~"):
            target = os.path.expanduser(target)
        target = os.path.normpath(os.path.join(self.cwd, target))
        candidates = [target]
        if follow_links:
            real = os.path.realpath(target) if real_dirs is None else realpath_via(target, real_dirs)
            if real != target:
                candidates.append(real)
        return self.read_denied_by(candidates)

    def read_denied_by(self, paths: list[str]) -> str | None:
        """The `Read(...)` deny rule covering one of `paths` (absolute and normalised, links
        already followed by the caller), or None: the matching half of `is_read_denied`."""
        if not self.read_deny:
            return None
        return _as_rule(first_matching(self.read_deny, paths, cwd=self.cwd))

    def read_deny_matcher(self) -> Callable[[list[str]], str | None]:
        """`read_denied_by` with the rules looked up once, for a caller checking many paths."""
        if not self.read_deny:
            return lambda paths: None
        first = rule_matcher(self.read_deny, cwd=self.cwd)

        def rule(paths: list[str]) -> str | None:
            return _as_rule(first(paths))

        return rule

    def read_deny_inside(self, dirs: list[str] | None = None, *, named: bool = True) -> bool:
        """Whether a Read deny rule may cover a file under `dirs` (absolute and normalised;
        default: the working directories). Relative specifiers may match anywhere; an absolute
        one only where its fixed part (before its first wildcard) leads. `//**/.env*` taken
        back out in every one of `dirs` (the built-in rule) covers nothing there. Without
        `named`, absolute specifiers without wildcards (`~/.ssh`) are left out: they name their
        one path."""
        roots = [os.path.normpath(d) for d in (dirs if dirs is not None else self.all_dirs())]
        exceptions = {s.strip() for s in self.read_deny if is_exception(s)}
        for spec in self.read_deny:
            spec = spec.strip()
            if is_exception(spec):
                continue
            if not spec.startswith(("//", "~/")):
                return True  # relative to cwd: anywhere under it, at any depth
            plain = not set(spec) & set("*?[]{}\\")
            if plain and not named:
                continue
            tail = spec[len("//**/") :] if spec.startswith("//**/") else None
            if tail and all(f"!/{root}/**/{tail}" in exceptions for root in roots):
                continue
            fixed = _fixed_part(spec)
            if any(_overlaps(fixed, root) for root in roots):
                return True
        return False

    def display_path(self, path: str | Path) -> str:
        """A path as the person would like to read it: relative to cwd when it is inside."""
        p = self.resolve(path)
        try:
            return str(p.relative_to(self.cwd))
        except ValueError:
            return str(p)


def _fixed_part(spec: str) -> str:
    """The absolute path an absolute specifier (`//...`, `~/...`) pins down before its first wildcard."""
    base, rest = ("/", spec[2:]) if spec.startswith("//") else (os.path.expanduser("~"), spec[2:])
    fixed: list[str] = []
    for part in rest.split("/"):
        if set(part) & set("*?[]{}\\"):
            break
        if part:
            fixed.append(part)
    return os.path.normpath(os.path.join(base, *fixed))


def _overlaps(a: str, b: str) -> bool:
    """One path is the other or inside it."""
    return a == b or a.startswith(b.rstrip("/") + "/") or b.startswith(a.rstrip("/") + "/")


def _as_rule(spec: str | None) -> str | None:
    """`Read(spec)` as the person wrote it (a literal leading `!` was escaped in `read_deny`)."""
    if spec is None:
        return None
    if spec.startswith(_ESCAPED_BANG):
        spec = spec[1:]
    return f"Read({spec})"


_ESCAPED_BANG = "\\!"


def realpath_via(path: str, real_dirs: dict[str, str]) -> str:
    """`os.path.realpath(path)` for a normalised absolute path, with its directory's real path
    taken from (and kept in) `real_dirs`: the last name is a symlink to follow or it is not."""
    head, tail = os.path.split(path)
    if not tail or tail in (".", ".."):
        return os.path.realpath(path)
    real_head = real_dirs.get(head)
    if real_head is None:
        real_head = real_dirs[head] = os.path.realpath(head)
    try:
        if stat.S_ISLNK(os.lstat(path).st_mode):
            return os.path.realpath(path)
    except OSError:  # missing or unreachable: realpath keeps such a name as it is
        pass
    return os.path.join(real_head, tail)


def _is_relative_to(path: Path, base: Path) -> bool:
    try:
        path.relative_to(Path(os.path.normpath(base)))
        return True
    except ValueError:
        return False
