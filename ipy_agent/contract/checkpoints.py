"""Checkpoints: what each prompt's run changed, kept so that a rewind can put it back.

A checkpoint opens when a prompt starts (`Checkpoints.begin`) and holds what the agent is about
to change, saved just before the change and only the first time in that prompt:

- files that Edit, Write or NotebookEdit (on disk) write: their bytes before, or that they did
  not exist (the tools call `before_write` and `after_write`, in tools/shared/edit_plan.py);
- cells of the open notebook that NotebookEdit replaced, inserted or deleted (`cell_changed`);
- kernel variables a cell run by NotebookRun can assign, found with `ast` in the cell's code,
  pickled just before the run (`save_variables`); what cannot be pickled, or is over the size
  cap, is listed with the cell to re-run; when the run ends, what it left in each of those
  names is fingerprinted (`after_run`, notebook/fingerprint.py), so that a rewind can tell a
  variable the person rebound since and keep it;
- files approved Bash commands changed, found by a stat scan of the working directories before
  and after the command, bounded in file count (`scan`, `bash_changed`): listed, never restored.

The conversation and the read state as they were before the prompt are kept with it (in memory:
a copy of the list of messages, which are never edited in place, and of the read state's
entries). File copies and pickles live in a per-kernel temporary directory, removed at exit; the
total is capped, and the oldest checkpoints lose their saved bytes first (their `dropped` says
so, and a rewind across one names what it could not restore). Putting things back is the loop's
work (loop/rewind.py); this module only keeps.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import pickle
import shutil
import stat
import tempfile
import time
from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ipy_agent.history.blocks import Message
from ipy_agent.notebook.effects import cell_effects
from ipy_agent.notebook.fingerprint import Fingerprint, fingerprint

from .read_state import ReadState, file_digest

__all__ = [
    "DEFAULT_CAP",
    "SCAN_LIMIT",
    "CellChange",
    "Checkpoint",
    "Checkpoints",
    "FileSave",
    "TreeScan",
    "VariableSave",
    "assigned_names",
    "watching",
]

DEFAULT_CAP = 256 * 1024**2  # bytes of saved files and pickles, all checkpoints together
SCAN_LIMIT = 20_000  # files a stat scan around a Bash command looks at, at most
_SKIP_DIRS = frozenset({".git", "node_modules", "__pycache__", ".venv", ".ipynb_checkpoints"})


@dataclass(kw_only=True)
class FileSave:
    """A file as it was before the agent first wrote it in this prompt."""

    path: str
    blob: str | None  # the copy of its bytes; None: the file did not exist (the agent created it)
    size: int = 0
    tool: str = ""


@dataclass(kw_only=True)
class CellChange:
    """One change the agent made to a cell of the open notebook."""

    notebook: str  # the notebook's absolute path
    action: Literal["replace", "insert", "delete"]
    cell_id: str  # the cell changed, inserted or deleted
    index: int  # its 0-based position when changed
    before_source: str = ""  # replace and delete: the source before
    before_type: str = "code"
    after_source: str = ""  # replace and insert: the source the agent left
    after_id: str | None = None  # delete: the cell it followed (None: it was first)


@dataclass(kw_only=True)
class VariableSave:
    """A kernel variable as it was before a cell run could rebind it."""

    name: str
    cell: str  # the cell that ran, as a person names it
    blob: str | None = None  # its pickle; None with `absent` or `problem`
    absent: bool = False  # the name was not bound before the run
    problem: str = ""  # why no snapshot was possible (cannot be pickled, too big)
    unseen: bool = False  # the cell changed it in a way its code did not show: no snapshot was taken
    size: int = 0


@dataclass(kw_only=True)
class Checkpoint:
    """The state just before prompt `prompt` (1-based) and what its run changed since."""

    prompt: int
    text: str
    at: float
    messages: list[Message]
    read_state: ReadState
    files: dict[str, FileSave] = field(default_factory=dict)
    cells: list[CellChange] = field(default_factory=list)
    variables: dict[str, VariableSave] = field(default_factory=dict)
    bash: dict[str, str] = field(default_factory=dict)  # path -> the approved command that changed it
    size: int = 0
    dropped: bool = False  # its saved bytes were removed to stay under the size cap
    note: str | None = None  # a rewind's note the prompt carried to the model

    @property
    def changes(self) -> int:
        return len(self.files) + len(self.cells) + len(self.variables)


@dataclass(frozen=True, kw_only=True)
class TreeScan:
    """(mtime, size, inode) of each file under some directories, at most `SCAN_LIMIT` of them."""

    stamps: dict[str, tuple[int, int, int]]
    complete: bool


class Checkpoints:
    """Every checkpoint of one conversation, oldest first. Thread-safe enough for the tools:
    each call saves under its own path or cell, and saves happen in the order calls run."""

    def __init__(self, *, cap: int = DEFAULT_CAP, root: str | Path | None = None) -> None:
        self.cap = cap
        self._root = Path(root) if root is not None else None
        self._dir: Path | None = None
        self.list: list[Checkpoint] = []
        # File path -> the hash of what the agent last wrote there: a file whose content differs
        # at a rewind was changed by someone else, and is kept.
        self.agent_hash: dict[str, str | None] = {}
        self.namespace: dict[str, Any] | None = None  # the kernel's variables, once a cell ran
        # Variable name -> what the agent's last cell run that could assign it left there (None:
        # unbound): a name whose value differs at a rewind was changed by someone else, and is kept.
        self.left: dict[str, Fingerprint | None] = {}
        self._serial = 0
        self.dropped = 0  # checkpoints whose saved bytes were dropped for the cap

    # --- the temporary directory ----------------------------------------------------------
    @property
    def dir(self) -> Path:
        if self._dir is None:
            base = str(self._root) if self._root is not None else None
            if self._root is not None:
                self._root.mkdir(parents=True, exist_ok=True)
            self._dir = Path(tempfile.mkdtemp(prefix="ipy_agent-checkpoints-", dir=base))
            atexit.register(shutil.rmtree, self._dir, True)
        return self._dir

    def _blob(self, data: bytes, suffix: str) -> str:
        self._serial += 1
        path = self.dir / f"{self._serial:06d}{suffix}"
        path.write_bytes(data)
        return str(path)

    def close(self) -> None:
        """Remove every checkpoint and the directory."""
        self.list.clear()
        self.agent_hash.clear()
        self.left.clear()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    # --- opening and closing checkpoints --------------------------------------------------
    def begin(self, text: str, messages: list[Message], read_state: ReadState) -> Checkpoint:
        """A new prompt starts: keep the conversation and read state as they are now."""
        cp = Checkpoint(
            prompt=len(self.list) + 1,
            text=text,
            at=time.time(),
            messages=list(messages),
            read_state=read_state.copy(),
        )
        self.list.append(cp)
        return cp

    @property
    def current(self) -> Checkpoint | None:
        return self.list[-1] if self.list else None

    def forget_last(self) -> bool:
        """The prompt just begun never reached the model: its checkpoint goes (it changed nothing)."""
        if self.list and not self.list[-1].changes:
            self.list.pop()
            return True
        return False

    def since(self, prompt: int) -> list[Checkpoint]:
        return [cp for cp in self.list if cp.prompt >= prompt]

    def cut(self, prompt: int) -> None:
        """After a rewind to before `prompt`: its checkpoint and the later ones are spent."""
        for cp in self.since(prompt):
            self._remove_blobs(cp)
        self.list = [cp for cp in self.list if cp.prompt < prompt]

    # --- files ----------------------------------------------------------------------------
    def before_write(self, path: str | Path, *, tool: str) -> None:
        """`path` is about to be written: keep its bytes (the first time this prompt)."""
        cp = self.current
        key = os.path.realpath(path)
        if cp is None or key in cp.files:
            return
        try:
            data: bytes | None = Path(key).read_bytes()
        except FileNotFoundError:
            data = None
        except OSError:
            return  # cannot be read: nothing to keep, and the write will say why
        blob = self._blob(data, ".file") if data is not None else None
        size = len(data) if data is not None else 0
        cp.files[key] = FileSave(path=key, blob=blob, size=size, tool=tool)
        self._grow(cp, size)

    def after_write(self, path: str | Path) -> None:
        """The agent wrote `path`: what is there now is the agent's."""
        key = os.path.realpath(path)
        self.agent_hash[key] = file_digest(key)

    # --- cells ----------------------------------------------------------------------------
    def cell_changed(self, change: CellChange) -> None:
        if self.current is not None:
            self.current.cells.append(change)

    # --- variables --------------------------------------------------------------------------
    def save_variables(self, code: str, namespace: dict[str, Any], *, cell: str) -> list[str]:
        """Before `code` runs in `namespace`: keep each name it can assign (pickled). Returns
        the names that could not be kept, each with why."""
        cp = self.current
        self.namespace = namespace
        if cp is None:
            return []
        names = assigned_names(code)
        if names is None:
            cp.variables.setdefault(
                f"<{cell}>", VariableSave(name="?", cell=cell, problem="its code could not be parsed to find its names")
            )
            return [f"{cell}: its code could not be parsed"]
        problems: list[str] = []
        for name in sorted(names):
            if name in cp.variables:
                continue
            save = self._variable(name, namespace, cell)
            cp.variables[name] = save
            if save.problem:
                problems.append(f"{name}: {save.problem}")
        return problems

    def after_run(self, code: str, namespace: Mapping[str, Any]) -> None:
        """`code` ran in `namespace`: fingerprint what it left in each name it can assign, and in
        each name an earlier run assigned that it reads (it may have changed it in place): an id,
        a type, a builtin immutable's value, a container's size; no code of the value's class
        runs. A rewind compares the name's value then with this."""
        effects = cell_effects(code)
        touched = [n for n in effects.uses if n in self.left]
        for name in [*(assigned_names(code) or ()), *touched]:
            self.left[name] = fingerprint(namespace[name]) if name in namespace else None

    def observed(
        self, changed: Iterable[str], added: Iterable[str], namespace: Mapping[str, Any], *, cell: str
    ) -> None:
        """A run was seen to change names its code did not show it could (notebook/observed.py):
        a name it added is removed by a rewind; one it rebound, deleted or changed in place had
        no snapshot taken, so a rewind names it with the cell to re-run. Either way what the run
        left there is fingerprinted, so a later change by the person is still kept."""
        cp = self.current
        fresh = set(added)
        for name in changed:
            if cp is not None and name not in cp.variables:
                cp.variables[name] = (
                    VariableSave(name=name, cell=cell, absent=True)
                    if name in fresh
                    else VariableSave(name=name, cell=cell, unseen=True)
                )
            self.left[name] = fingerprint(namespace[name]) if name in namespace else None

    def _variable(self, name: str, namespace: Mapping[str, Any], cell: str) -> VariableSave:
        if name not in namespace:
            return VariableSave(name=name, cell=cell, absent=True)
        value = namespace[name]
        try:
            data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as e:
            return VariableSave(name=name, cell=cell, problem=f"cannot be pickled ({type(e).__name__})")
        if len(data) > self.cap // 4:
            return VariableSave(name=name, cell=cell, problem=f"too big to keep ({len(data):,} bytes pickled)")
        blob = self._blob(data, ".pickle")
        save = VariableSave(name=name, cell=cell, blob=blob, size=len(data))
        assert self.current is not None
        self._grow(self.current, len(data))
        return save

    # --- approved Bash commands -----------------------------------------------------------
    @staticmethod
    def scan(dirs: Iterable[str | Path], limit: int = SCAN_LIMIT) -> TreeScan:
        """A stat of every file under `dirs` (not following links; skipping .git, caches and
        environments), at most `limit` files."""
        stamps: dict[str, tuple[int, int, int]] = {}
        for top in dirs:
            for here, subdirs, files in os.walk(top):
                subdirs[:] = [d for d in subdirs if d not in _SKIP_DIRS]
                for name in files:
                    if len(stamps) >= limit:
                        return TreeScan(stamps=stamps, complete=False)
                    path = os.path.join(here, name)
                    with contextlib.suppress(OSError):
                        st = os.lstat(path)
                        if stat.S_ISREG(st.st_mode):
                            stamps[path] = (st.st_mtime_ns, st.st_size, st.st_ino)
        return TreeScan(stamps=stamps, complete=True)

    def bash_changed(self, before: TreeScan, after: TreeScan, command: str) -> list[str]:
        """The files an approved command created, changed or removed (noted on the checkpoint)."""
        a, b = before.stamps, after.stamps
        changed = sorted(p for p in a.keys() | b.keys() if a.get(p) != b.get(p))
        cp = self.current
        if cp is not None:
            for p in changed:
                cp.bash.setdefault(p, command)
            if not (before.complete and after.complete):
                cp.bash.setdefault("…", f"more than {SCAN_LIMIT:,} files: only the first were compared")
        return changed

    # --- the size cap -----------------------------------------------------------------------
    @property
    def size(self) -> int:
        return sum(cp.size for cp in self.list if not cp.dropped)

    def _grow(self, cp: Checkpoint, size: int) -> None:
        cp.size += size
        for old in self.list:
            if self.size <= self.cap:
                break
            if old is cp or old.dropped:
                continue
            self._remove_blobs(old)
            old.dropped = True
            self.dropped += 1

    def _remove_blobs(self, cp: Checkpoint) -> None:
        blobs = [f.blob for f in cp.files.values()] + [v.blob for v in cp.variables.values()]
        for blob in blobs:
            if blob:
                with contextlib.suppress(OSError):
                    os.unlink(blob)


@contextlib.asynccontextmanager
async def watching(store: Checkpoints | None, dirs: Iterable[str | Path], command: str) -> AsyncIterator[None]:
    """Around an approved shell command: the files it changed are noted on the checkpoint (a
    rewind lists them as not restored). `store` None: nothing is watched."""
    if store is None:
        yield
        return
    dirs = list(dirs)
    before = await asyncio.to_thread(store.scan, dirs)
    try:
        yield
    finally:
        store.bash_changed(before, await asyncio.to_thread(store.scan, dirs), command)


def assigned_names(code: str) -> set[str] | None:
    """The names `code` can bind or unbind in the namespace it runs in, as a cell: every binding
    form `notebook/effects.py` counts (assignments, `for`/`with`/`except` targets, the walrus,
    `match` captures, imports, definitions, `del`, `global` names a function binds, the name
    `%%capture` is given); not the names local to a function, class or comprehension. None
    when it does not parse."""
    effects = cell_effects(code)
    if effects.syntax_error is not None:
        return None
    return {*effects.binds, *effects.deletes}
