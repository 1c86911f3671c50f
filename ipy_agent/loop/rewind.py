"""Rewind: back to the state just before prompt N, from the checkpoints (contract/checkpoints.py).

What is put back, for every checkpoint from prompt N on, newest change undone first:
- files Edit, Write and NotebookEdit wrote: their bytes before the first write of the earliest
  of those prompts; files they created are removed;
- cells of the open notebook NotebookEdit changed: through the page (compare-and-set on the
  source the agent left), or in the `.ipynb` on disk when no page answers;
- kernel variables a NotebookRun cell could rebind: their pickled values (a name the run
  created is removed); what could not be kept is listed with the cell to re-run; a name the
  run was observed to change though its code did not show it (notebook/observed.py) is
  removed when the run added it, and named as not restored otherwise (no snapshot was taken);
- the conversation and the read state, as they were before the prompt.

A file, cell or variable someone else changed after the agent's last change is kept and named,
unless `force` (a variable: its value is not what the agent's last cell run left there, by the
fingerprint `Checkpoints.after_run` took; an in-place change of the same object is not seen).
Files approved Bash commands changed are listed, never restored. The report says what
happened, to the person (text, widget) and to the model (a note before the next prompt).
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ipy_agent.base.threads import run_to_end
from ipy_agent.contract.checkpoints import CellChange, Checkpoint, Checkpoints, FileSave, VariableSave
from ipy_agent.contract.read_state import file_digest
from ipy_agent.history.blocks import ContentBlock, Message
from ipy_agent.notebook.fingerprint import fingerprint, unchanged
from ipy_agent.notebook.naming import cell_label
from ipy_agent.tools.shared.fileio import atomic_write, real_path, remove_file

from .rewind_report import RewindReport, short

if TYPE_CHECKING:
    from ipy_agent.contract.read_state import ReadState
    from ipy_agent.notebook.bridge import NotebookBridge
    from ipy_agent.runtime.trace import AgentEvent

__all__ = ["Rewindable", "Rewinding", "prompt_text", "rewind_conversation", "rewind_to"]


# --- the rewind ---------------------------------------------------------------------------


class Rewinding:
    """What `Agent` gets from this module: its checkpoints, opened at each prompt, and `rewind`."""

    _checkpoints: Checkpoints | None = None
    rewind_note: str | None = None  # what the model is told before the next prompt
    rewind_notice: str | None = None  # what the next prompt's cell (and its record) says was rewound

    @property
    def checkpoints(self) -> Checkpoints:
        """What each prompt's run changed (a per-kernel temporary directory, made when needed)."""
        if self._checkpoints is None:
            self._checkpoints = Checkpoints()
        return self._checkpoints

    def checkpoint(
        self: Rewindable, prompt: str | list[ContentBlock], blocks: list[ContentBlock]
    ) -> list[ContentBlock]:
        """A prompt starts: open its checkpoint (the history and read state as they are), and put
        the note of a rewind before the prompt's blocks."""
        from ipy_agent.runtime.trace import NoticeEvent

        cp = self.checkpoints.begin(prompt_text(prompt), self.messages, self.read_state)
        cp.note, self.rewind_note = self.rewind_note, None
        if self.rewind_notice and cp.note is not None:  # the run's record keeps it, with the cell's own report
            self.emit(NoticeEvent(text=f"↶ {self.rewind_notice} The model is told so with this prompt.", level="info"))
        self.rewind_notice = None
        return blocks if cp.note is None else [{"type": "text", "text": cp.note}, *blocks]

    def forget_checkpoint(self: Rewindable) -> None:
        """The prompt never reached the model: its checkpoint goes, and a rewind's note waits for the next."""
        cp = self.checkpoints.current
        if cp is not None and self.checkpoints.forget_last():
            self.rewind_note = cp.note

    def rewind(self: Rewindable, prompt: int | None = None, force: bool = False) -> RewindReport:
        """Back to just before prompt `prompt` (1-based, as `%agent_history` numbers them; None:
        the last): files, cells, variables, the conversation and the read state. Cells of the open
        notebook go back in its file: `await agent.arewind()` reaches its page instead."""
        return run_to_end(lambda: rewind_conversation(self, prompt, force, live=False), interrupt=lambda: None)

    async def arewind(self: Rewindable, prompt: int | None = None, force: bool = False) -> RewindReport:
        """`rewind`, awaited: the open notebook's page is asked to put its cells back."""
        return await rewind_conversation(self, prompt, force, live=True)


class Rewindable(Protocol):
    """What a rewind needs of a conversation (`Agent` is one)."""

    cwd: Path
    messages: list[Message]
    read_state: ReadState
    notebook: NotebookBridge | None
    rewind_note: str | None  # what the model is told before the next prompt
    rewind_notice: str | None  # what the next prompt's cell says was rewound

    @property
    def running(self) -> bool: ...

    @property
    def checkpoints(self) -> Checkpoints: ...

    def emit(self, event: AgentEvent) -> None: ...


async def rewind_conversation(conv: Rewindable, prompt: int | None, force: bool, *, live: bool) -> RewindReport:
    """Put back what the prompts from `prompt` on changed, and cut the conversation and the read
    state back to how they were before it; `live`: the open notebook's page can be asked."""
    from ipy_agent.runtime.trace import NoticeEvent

    if conv.running:
        raise RuntimeError("cannot rewind while the agent is running; wait for it or interrupt it")
    report, target = await rewind_to(
        conv.checkpoints, prompt, force=force, cwd=conv.cwd, bridge=conv.notebook, live=live
    )
    report.messages_removed = max(0, len(conv.messages) - len(target.messages))
    conv.messages[:] = target.messages
    conv.read_state = target.read_state.copy()
    conv.checkpoints.cut(report.prompt)
    conv.rewind_note = report.note_for_model()
    conv.rewind_notice = report.headline()
    conv.emit(NoticeEvent(text=report.headline(), level="info"))
    return report


def prompt_text(prompt: str | list[ContentBlock]) -> str:
    """A prompt's text, as the checkpoint names it."""
    if isinstance(prompt, str):
        return prompt
    return " ".join(str(b.get("text", "")) for b in prompt if isinstance(b, dict) and b.get("type") == "text")


async def rewind_to(
    store: Checkpoints,
    prompt: int | None,
    *,
    force: bool,
    cwd: Path,
    bridge: NotebookBridge | None,
    live: bool,
) -> tuple[RewindReport, Checkpoint]:
    """Put back what the checkpoints from `prompt` on (None: the last) changed; the caller cuts
    the conversation and read state back to the returned checkpoint's."""
    if not store.list:
        raise ValueError("there is nothing to rewind: no prompt has run since the conversation began")
    last = store.list[-1].prompt
    n = last if prompt is None else prompt
    if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= last:
        raise ValueError(f"prompt must be a number from 1 to {last} (see %agent_history), not {prompt!r}")
    spent = store.since(n)
    target = spent[0]
    report = RewindReport(prompt=n, text=target.text, forced=force)
    _files(store, spent, report, force=force, cwd=cwd)
    await _cells(spent, report, force=force, bridge=bridge if live else None, cwd=cwd)
    _variables(store, spent, report, force=force)
    for cp in spent:
        report.bash.extend(_display(p, cwd) + f" (by `{short(c, 50)}`)" for p, c in cp.bash.items() if p != "…")
        if "…" in cp.bash:
            report.bash.append(cp.bash["…"])
    return report, target


def _display(path: str, cwd: Path) -> str:
    try:
        return str(Path(path).relative_to(cwd))
    except ValueError:
        return path


def _earliest(spent: list[Checkpoint], pick: Any) -> dict[str, tuple[Any, Checkpoint]]:
    """Each key's earliest save among the spent checkpoints: that is the state to return to."""
    out: dict[str, tuple[Any, Checkpoint]] = {}
    for cp in spent:
        for key, save in pick(cp).items():
            out.setdefault(key, (save, cp))
    return out


def _files(store: Checkpoints, spent: list[Checkpoint], report: RewindReport, *, force: bool, cwd: Path) -> None:
    for path, (save, cp) in _earliest(spent, lambda c: c.files).items():
        assert isinstance(save, FileSave)
        shown = _display(path, cwd)
        now = file_digest(path) if os.path.lexists(path) else None
        if not force and now != store.agent_hash.get(path):
            gone = " (deleted since)" if now is None else ""
            report.kept.append(f"{shown}{gone}")
            continue
        if cp.dropped:
            report.dropped.append(f"{shown}: its copy from before prompt {cp.prompt} was dropped")
            continue
        try:
            # `path` is where the agent's write landed (symlinks resolved then): the writer
            # follows no link on the way, so a directory swapped for one since is refused.
            if save.blob is None:
                remove_file(path)
                report.files_removed.append(shown)
            else:
                atomic_write(path, Path(save.blob).read_bytes(), make_parents=True)
                report.files_restored.append(shown)
        except OSError as e:
            report.not_restored.append(f"{shown}: {e.strerror or e}")
            continue
        # What is there now is where an earlier checkpoint's rewind starts from.
        store.agent_hash[path] = file_digest(path) if save.blob is not None else None


async def _cells(
    spent: list[Checkpoint], report: RewindReport, *, force: bool, bridge: NotebookBridge | None, cwd: Path
) -> None:
    changes = [c for cp in spent for c in cp.cells]
    if not changes:
        return
    renamed: dict[str, str] = {}  # a deleted cell put back under a new id (its own was taken); older changes follow it
    for change in reversed(changes):  # newest first: each undo finds the notebook as that edit left it
        change = replace(
            change,
            cell_id=renamed.get(change.cell_id, change.cell_id),
            after_id=renamed.get(change.after_id or "", change.after_id),
        )
        page = bridge if bridge is not None and bridge.is_open_notebook(change.notebook) else None
        label = cell_label(change.index, change.before_source or change.after_source)
        where = "" if page is not None else f" in {_display(change.notebook, cwd)} on disk"
        try:
            done, new_id = await _undo_live(page, change, force) if page is not None else _undo_on_disk(change, force)
        except Exception as e:
            report.not_restored.append(f"{label}{where}: {e}")
            continue
        if new_id is not None:
            renamed[change.cell_id] = new_id
        if done:
            report.cells_restored.append(f"{label}{where} ({_undone(change)})")
        else:
            report.kept.append(f"{label}{where} (the cell changed since the agent's edit)")


def _undone(change: CellChange) -> str:
    return {"replace": "source put back", "insert": "inserted cell removed", "delete": "deleted cell put back"}[
        change.action
    ]


async def _undo_live(page: Any, change: CellChange, force: bool) -> tuple[bool, str | None]:
    """Whether the page undid the change, and the id of a deleted cell it put back."""
    from ipy_agent.notebook.bridge import BridgeError

    expected = None if force else change.after_source
    reply: dict[str, Any] = {}
    try:
        if change.action == "replace":
            await page.request(
                "replace_source",
                cell_id=change.cell_id,
                source=change.before_source,
                cell_type=change.before_type,
                expected_source=expected,
            )
        elif change.action == "insert":
            await page.request("delete_cell", cell_id=change.cell_id, expected_source=expected)
        else:
            # The cell comes back under its own id, so what the conversation kept still names it.
            back = {"cell_type": change.before_type, "source": change.before_source, "cell_id": change.cell_id}
            try:
                reply = await page.request("insert_cell", after_id=change.after_id, **back)
            except BridgeError as e:
                if e.code != "not_found":
                    raise
                reply = await page.request("insert_cell", after_id=None, **back)
    except BridgeError as e:
        if e.code in ("stale", "not_found"):
            return False, None
        raise
    new_id = (reply.get("cell") or {}).get("id")
    return True, str(new_id) if new_id and new_id != change.cell_id else None


def _undo_on_disk(change: CellChange, force: bool) -> tuple[bool, str | None]:
    """The same undo in the `.ipynb` file (no page answers for it)."""
    import warnings

    import nbformat
    from nbformat.v4 import new_code_cell, new_markdown_cell

    path = str(real_path(change.notebook))  # resolved once: read and written there, nothing followed after
    with warnings.catch_warnings():  # nbformat warns on stderr, which lands in the person's cell
        warnings.simplefilter("ignore")
        nb = nbformat.read(path, as_version=4)
    ids = [c.get("id") for c in nb.cells]
    new_id = None
    if change.action == "delete":
        at = ids.index(change.after_id) + 1 if change.after_id in ids else min(change.index, len(nb.cells))
        code = change.before_type == "code"
        cell = new_code_cell(change.before_source) if code else new_markdown_cell(change.before_source)
        if change.cell_id not in ids:
            cell["id"] = change.cell_id  # back under its own id
        nb.cells.insert(at, cell)
        new_id = str(cell.get("id")) if cell.get("id") != change.cell_id else None
    else:
        if change.cell_id not in ids:
            return False, None
        i = ids.index(change.cell_id)
        if not force and nb.cells[i].get("source", "") != change.after_source:
            return False, None
        if change.action == "insert":
            del nb.cells[i]
        else:
            nb.cells[i]["source"] = change.before_source
    atomic_write(path, (nbformat.writes(nb) + "\n").encode("utf-8"))
    return True, new_id


def _variables(store: Checkpoints, spent: list[Checkpoint], report: RewindReport, *, force: bool) -> None:
    """Put each variable back as it was before the earliest spent prompt, unless its value now is
    not what the agent's last run left there (`Checkpoints.left`): then the person rebound or
    removed it since, and it is kept and named unless `force`."""
    ns = store.namespace
    saves = _earliest(spent, lambda c: c.variables)
    if not saves:
        return
    for name, (save, cp) in sorted(saves.items()):
        assert isinstance(save, VariableSave)
        if save.problem:
            report.not_restored.append(f"variable {save.name} ({save.problem}): re-run {save.cell}")
            continue
        if save.unseen:
            report.not_restored.append(
                f"variable {name} ({save.cell} changed it through code the preview could not see, so its value "
                "before was not kept): set it again, or re-run the cells that define it"
            )
            continue
        if ns is None:
            report.not_restored.append(f"variable {name}: the kernel's namespace is not reachable")
            continue
        changed = None if force else _changed_since_run(store, ns, name)
        if changed is not None:
            report.kept.append(f"variable {name} ({changed})")
            continue
        if save.absent:
            if ns.pop(name, _MISSING) is not _MISSING:
                report.variables_removed.append(name)
            store.left[name] = None
        elif cp.dropped or save.blob is None:
            report.dropped.append(f"variable {name}: its snapshot from before prompt {cp.prompt} was dropped")
        else:
            try:
                ns[name] = pickle.loads(Path(save.blob).read_bytes())
            except Exception as e:
                report.not_restored.append(f"variable {name} ({type(e).__name__}: {e}): re-run {save.cell}")
                continue
            report.variables_restored.append(name)
            # What is there now is where an earlier checkpoint's rewind starts from.
            store.left[name] = fingerprint(ns[name])


def _changed_since_run(store: Checkpoints, ns: Mapping[str, object], name: str) -> str | None:
    """How `name` differs from what the agent's last run left in it, or None when it does not.
    Compared by identity, type and (builtin values) value: no code of the value's class runs."""
    if name not in store.left:
        return "the agent's run did not record what it left there, so a change since cannot be ruled out"
    left = store.left[name]
    if name not in ns:
        return "deleted since the agent's run" if left is not None else None
    if left is None:
        return "set since the agent's run removed it"
    return None if unchanged(left, ns[name]) else "changed since the agent's run"


_MISSING = object()
