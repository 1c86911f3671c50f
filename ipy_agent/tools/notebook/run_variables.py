"""What a NotebookRun keeps of the kernel's variables for a rewind (contract/checkpoints.py):
before the run, the values of the names the cell's code can bind (pickled); after it, a
fingerprint of what it left in them, so that a rewind keeps a variable the person changed since.
"""

from __future__ import annotations

from typing import Any

from ipy_agent.contract.checkpoints import assigned_names
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.notebook.naming import cell_label
from ipy_agent.notebook.protocol_types import LiveCell

__all__ = ["fingerprint_variables", "keep_variables"]


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
