"""Keep the notebook page's comms open when another page of the same kernel closes them.

Why this exists: in Notebook 7, "New > Notebook" in the file browser starts the notebook's
kernel from the file browser's tab, and that tab keeps a connection to the kernel after it has
opened the notebook in a new tab. Every comm the kernel opens reaches every connection; the
file browser's tab has no widget manager and no ipy_agent extension, so @jupyterlab/services
there answers each `comm_open` it cannot handle with a `comm_close` ("Exception opening new
comm"). The kernel then forgets the comm, and the clicks the notebook's own tab sends on it
are dropped ("No such comm"): Allow, Deny and Stop did nothing and the cell stayed `[*]`,
and the live-notebook bridge lost its comm before the notebook's page could say hello. The
same happens to any ipywidgets widget in that setup; the cause is upstream.

What the guard does: it remembers the client session (a browser page) that runs the cells,
taken from each cell's `execute_request`. A `comm_close` for a widget comm or for the
live-notebook comm sent by any other session is ignored (and counted); every other close takes
ipykernel's usual path. A page that runs no cells never uses those comms, so ignoring its
closes loses nothing; a page that runs cells is the owner while it does.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from .protocol import TARGET

__all__ = ["GUARDED_TARGETS", "CommGuard"]

# The comm targets whose closes only the page that runs the cells may ask for.
GUARDED_TARGETS = frozenset({"jupyter.widget", TARGET})

Handler = Callable[[Any, Any, dict[str, Any]], Any]


def _session_of(msg: dict[str, Any] | None) -> str | None:
    header = (msg or {}).get("header") or {}
    session = header.get("session")
    return session if isinstance(session, str) and session else None


class CommGuard:
    """Installed once per kernel (at `%load_ext`); `ignored` lists the closes it refused."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel
        self.owner: str | None = None  # the client session whose cells run here
        self.ignored: list[tuple[str, str]] = []  # (comm target, sender session)
        self._default: Handler | None = None

    def install(self, shell: Any) -> None:
        handlers = getattr(self.kernel, "shell_handlers", None)
        if not isinstance(handlers, dict) or handlers.get("comm_close") is None:
            return
        if isinstance(getattr(handlers["comm_close"], "__self__", None), CommGuard):
            return  # already guarded (the extension was loaded again)
        self._default = handlers["comm_close"]
        handlers["comm_close"] = self.comm_close
        self.note_cell()
        shell.events.register("pre_run_cell", self.note_cell)

    def uninstall(self, shell: Any) -> None:
        handlers = getattr(self.kernel, "shell_handlers", None)
        if isinstance(handlers, dict) and self._default is not None and handlers.get("comm_close") == self.comm_close:
            handlers["comm_close"] = self._default
        with contextlib.suppress(ValueError):  # it was never registered
            shell.events.unregister("pre_run_cell", self.note_cell)

    def note_cell(self, *_info: Any) -> None:
        """Before each cell: the page that sent it is the one whose comms count."""
        try:
            session = _session_of(self.kernel.get_parent("shell"))
        except Exception:
            session = None
        if session is not None:
            self.owner = session

    def comm_close(self, stream: Any, ident: Any, msg: dict[str, Any]) -> Any:
        content = msg.get("content") or {}
        comm = self.kernel.comm_manager.get_comm(content.get("comm_id"))
        sender = _session_of(msg)
        target = str(getattr(comm, "target_name", "") or "")
        if comm is not None and target in GUARDED_TARGETS and self.owner and sender and sender != self.owner:
            self.ignored.append((target, sender))
            return None
        assert self._default is not None
        return self._default(stream, ident, msg)
