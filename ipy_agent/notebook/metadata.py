"""The notebook's own `ipy_agent` metadata: its standing instructions, live or on disk.

A notebook keeps instructions for the agent in `metadata.ipy_agent.instructions`, so they travel
with the file (`%agent_instructions --notebook` sets them). When the JupyterLab extension is
connected, they are read from and written to the page's model (ops `get_agent_metadata` and
`set_agent_metadata`): that is what the person sees, unsaved edits included, and a write there is
saved with the notebook like any edit. Without a page they are read from the `.ipynb` on disk, and
written there (the person is told to reload the notebook if it is open elsewhere).

A notebook that cannot be read is a problem to report, never an error that stops a run.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .bridge import BridgeError, NotebookBridge
from .protocol_types import AgentMetadata

__all__ = [
    "KEY",
    "NotebookInstructions",
    "instructions_on_disk",
    "notebook_file",
    "read_instructions",
    "write_instructions",
]

KEY = "ipy_agent"  # the notebook metadata's namespace for this package
_FIELD = "instructions"
_MAX_NOTEBOOK_BYTES = 200 * 2**20  # a notebook larger than this is not parsed for its metadata


@dataclass(frozen=True, kw_only=True)
class NotebookInstructions:
    """What a notebook says to the agent, and where that was read."""

    notebook: str  # the notebook, as the person names it
    text: str = ""  # "" when it has none
    live: bool = False  # read from the open page (True) or from the file on disk
    problem: str = ""  # why it could not be read ("" when it was)


def notebook_file(bridge: NotebookBridge | None, notebook_path: str | None, cwd: Path) -> Path | None:
    """The `.ipynb` of the conversation's notebook: the page's, the kernel's session's, or the
    path the agent was given; None when there is no notebook."""
    if bridge is not None:
        if bridge.path:
            return Path(bridge.path)
        name = bridge.session_name
        if name and name.endswith(".ipynb"):
            path = Path(name) if os.path.isabs(name) else cwd / Path(name).name
            if path.is_file():
                return path
    if notebook_path and notebook_path.endswith(".ipynb"):
        path = Path(notebook_path).expanduser()
        path = path if path.is_absolute() else cwd / path
        return path if path.is_file() else None
    return None


def _live(bridge: NotebookBridge | None) -> bool:
    return bridge is not None and bridge.connected


async def read_instructions(bridge: NotebookBridge | None, file: Path | None) -> NotebookInstructions | None:
    """The open notebook's instructions: from the page when one is connected (falling back to the
    file when the page cannot say), else from the file; None when there is no notebook."""
    if bridge is not None and _live(bridge):
        name = bridge.display_path or str(file or "")
        try:
            meta = await bridge.agent_metadata()
        except BridgeError as e:
            if file is None:
                why = (
                    "the JupyterLab extension is older than this ipy_agent (install the same version in the server)"
                    if e.code == "unknown_op"
                    else f"the page did not answer ({e})"
                )
                return NotebookInstructions(notebook=name, problem=why)
        else:
            return _from_metadata(name, meta, live=True)
    if file is None:
        return None
    return instructions_on_disk(file)


def _from_metadata(name: str, meta: Any, *, live: bool) -> NotebookInstructions:
    if not isinstance(meta, dict):
        return NotebookInstructions(notebook=name, live=live, problem=f"metadata.{KEY} is not an object")
    text = meta.get(_FIELD, "")
    if isinstance(text, list):  # nbformat's multiline strings
        text = "".join(str(t) for t in text)
    if not isinstance(text, str):
        return NotebookInstructions(
            notebook=name, live=live, problem=f"metadata.{KEY}.{_FIELD} is a {type(text).__name__}, not text"
        )
    return NotebookInstructions(notebook=name, text=text, live=live)


def instructions_on_disk(file: Path) -> NotebookInstructions:
    """The instructions in the `.ipynb` file itself (what was last saved). A notebook with its
    outputs can be large: it is parsed again only when its size or modification time changed."""
    name = str(file)
    try:
        st = file.stat()
    except FileNotFoundError:
        return NotebookInstructions(notebook=name)
    except OSError as e:
        return NotebookInstructions(notebook=name, problem=f"could not be read ({type(e).__name__}: {e})")
    stamp = (st.st_size, st.st_mtime_ns, st.st_ino)
    cached = _PARSED.get(name)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    found = _parse(file, name, st.st_size)
    _PARSED.clear()  # one notebook per kernel, in practice: keep the last one only
    _PARSED[name] = (stamp, found)
    return found


_PARSED: dict[str, tuple[tuple[int, int, int], NotebookInstructions]] = {}


def _parse(file: Path, name: str, size: int) -> NotebookInstructions:
    if size > _MAX_NOTEBOOK_BYTES:
        return NotebookInstructions(notebook=name, problem="the notebook is too large to read its metadata")
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return NotebookInstructions(notebook=name)
    except (OSError, UnicodeDecodeError, ValueError) as e:
        return NotebookInstructions(notebook=name, problem=f"could not be read ({type(e).__name__}: {e})")
    metadata = data.get("metadata") if isinstance(data, dict) else None
    meta = metadata.get(KEY, {}) if isinstance(metadata, dict) else {}
    return _from_metadata(name, meta, live=False)


async def write_instructions(bridge: NotebookBridge | None, file: Path | None, text: str) -> str:
    """Set (or with "" remove) the notebook's instructions; returns what was done, for the person.

    Raises ValueError with a message for the person when there is no notebook or it cannot be
    written."""
    if bridge is not None and _live(bridge):
        try:
            meta = await bridge.agent_metadata()
            await bridge.set_agent_metadata(_updated(meta, text))
        except BridgeError as e:
            if e.code != "unknown_op" or file is None:
                raise ValueError(f"the notebook page refused the change: {e}") from None
        else:
            what = "Set" if text else "Removed"
            return (
                f"{what} the instructions of {bridge.display_path} in the open notebook "
                "(they are saved with it; the next %agent request reads them)."
            )
    if file is None:
        raise ValueError(
            "there is no notebook here: run this in a notebook's kernel (or give Agent(notebook_path=...))."
        )
    _write_file(file, text)
    what = "Set" if text else "Removed"
    note = (
        " If the notebook is open in JupyterLab without the ipy_agent extension, reload it from disk "
        "before saving, or the save will drop them."
    )
    return f"{what} the instructions in {file} (on disk).{note}"


def _updated(meta: Any, text: str) -> AgentMetadata:
    out = dict(meta) if isinstance(meta, dict) else {}
    if text:
        out[_FIELD] = text
    else:
        out.pop(_FIELD, None)
    return out


def _write_file(file: Path, text: str) -> None:
    import nbformat

    try:
        nb = nbformat.read(str(file), as_version=nbformat.NO_CONVERT)
    except (OSError, ValueError) as e:
        raise ValueError(f"could not read {file}: {e}") from None
    nb.metadata[KEY] = _updated(nb.metadata.get(KEY), text)
    if not nb.metadata[KEY]:
        del nb.metadata[KEY]
    try:
        fd, tmp = _temporary(file)
    except OSError as e:
        raise ValueError(f"could not write {file}: {e}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            nbformat.write(nb, f)
        os.replace(tmp, file)
    except OSError as e:
        Path(tmp).unlink(missing_ok=True)
        raise ValueError(f"could not write {file}: {e}") from None


def _temporary(file: Path) -> tuple[int, str]:
    """A new file beside `file`, made here and now (`O_EXCL`: a name that already exists, a
    symbolic link a command planted to send the write elsewhere, is never opened), with the
    notebook's permissions."""
    fd, tmp = tempfile.mkstemp(dir=file.parent, prefix=f".{file.name}.", suffix=".ipy_agent-tmp")
    try:
        os.fchmod(fd, stat.S_IMODE(os.stat(file).st_mode))
    except OSError:
        os.close(fd)
        os.unlink(tmp)
        raise
    return fd, tmp
