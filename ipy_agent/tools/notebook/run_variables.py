"""What a NotebookRun keeps of the kernel's variables for a rewind (contract/checkpoints.py):
before the run, the values of the names the cell's code can bind (pickled); after it, a
fingerprint of what it left in them, so that a rewind keeps a variable the person changed since.
And what the run really changed (notebook/observed.py): every name fingerprinted before and
compared after, beside what the preview predicted; a change it did not predict is kept for a
rewind too.
"""

from __future__ import annotations

from typing import Any

from ipy_agent.contract.checkpoints import assigned_names
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.notebook.effects import cell_effects
from ipy_agent.notebook.fingerprint import Fingerprint
from ipy_agent.notebook.naming import cell_label
from ipy_agent.notebook.observed import namespace_prints, observed_changes, observed_lines
from ipy_agent.notebook.protocol_types import LiveCell

__all__ = ["fingerprint_variables", "keep_variables", "observe_after", "observe_before"]


def _names_code(nb: Any, code: str) -> str:
    """The cell's code as the names it binds are found in: as the person wrote it (its magics
    read as `notebook/effects.py` reads them: `%%capture out` binds `out`), or, when that does
    not parse (`x?`), as IPython turns it into Python."""
    if assigned_names(code) is not None:
        return code
    try:
        return str(nb.shell.transform_cell(code))
    except Exception:
        return code


def keep_variables(ctx: ToolContext, nb: Any, cell: LiveCell, code: str) -> None:
    """Keep the variables the cell can rebind, for a rewind (contract/checkpoints.py)."""
    namespace = getattr(getattr(nb, "shell", None), "user_ns", None)
    if ctx.checkpoints is None or not isinstance(namespace, dict):
        return
    ctx.checkpoints.save_variables(_names_code(nb, code), namespace, cell=cell_label(cell))


def fingerprint_variables(ctx: ToolContext, nb: Any, code: str) -> None:
    """The run ended: what it left in the names it could rebind, for a rewind to compare with."""
    namespace = getattr(getattr(nb, "shell", None), "user_ns", None)
    if ctx.checkpoints is None or not isinstance(namespace, dict):
        return
    ctx.checkpoints.after_run(_names_code(nb, code), namespace)


def _namespace(nb: Any) -> tuple[dict[str, object] | None, dict[str, object]]:
    shell = getattr(nb, "shell", None)
    namespace = getattr(shell, "user_ns", None)
    hidden = getattr(shell, "user_ns_hidden", None)
    return (namespace if isinstance(namespace, dict) else None), (hidden if isinstance(hidden, dict) else {})


def observe_before(nb: Any) -> dict[str, Fingerprint] | None:
    """Every name's fingerprint before the run (None: the namespace is not reachable)."""
    namespace, hidden = _namespace(nb)
    return None if namespace is None else namespace_prints(namespace, hidden)


def observe_after(
    ctx: ToolContext, nb: Any, cell: LiveCell, code: str, before: dict[str, Fingerprint] | None, *, preview_blind: bool
) -> tuple[str, ...]:
    """What the run was seen to change, as lines; the changes the preview did not predict are
    handed to the checkpoints (a name it added is removed by a rewind, another is named)."""
    namespace, hidden = _namespace(nb)
    if before is None or namespace is None:
        return ()
    changes = observed_changes(before, namespace, cell_effects(_names_code(nb, code)), hidden)
    if ctx.checkpoints is not None and changes.unpredicted:
        ctx.checkpoints.observed(changes.unpredicted, changes.added, namespace, cell=cell_label(cell))
    return tuple(observed_lines(changes, preview_blind=preview_blind))
