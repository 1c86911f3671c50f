"""The kernel's half of the live-notebook bridge: requests to the JupyterLab extension over a comm.

The agent lives in the kernel; the notebook the person sees lives in the browser. The extension
in `labextension/` registers the comm target `ipy_agent.notebook` on each notebook panel's
kernel. This module opens that comm (at `%load_ext`), learns from the panels' hellos which
notebook this kernel serves, and sends requests `{protocol, request_id, op, path, args}`; the
panel whose path matches answers `{protocol, reply_to, ok, result | error, code}`. The comm
target, the protocol's version, its messages and ops are defined once, in `protocol.json`
(read by `protocol`), which the extension is built from too.

Decisions:
- Connection is learnt, not polled: a front end with the extension says hello as soon as the
  comm opens (or, after a page reload, opens a comm of its own and says hello). Without a hello
  there is no front end, and every request fails at once with `NotConnected`; only the first
  run after loading waits, briefly and once, for a hello that may be on its way.
- A kernel can be shared (two notebooks, or a notebook and a console), and a kernel-opened comm
  reaches all of them. The kernel's own session name (`JPY_SESSION_NAME`, set by jupyter_server)
  says which notebook it was started for; that panel's hello wins, and requests carry its path
  so the other panels stay silent.
- Replies may be handled on a thread other than the loop's (a kernel subshell), so futures are
  resolved with `call_soon_threadsafe`. A request that times out marks the front end lost (the
  page was closed): later requests fail fast until a new hello arrives.
- Both sides carry a protocol number; a mismatch is reported with what to do (install the same
  version in the kernel and the server), never guessed around.
- Each reply is checked against its op's schema (`protocol.reply_problem`) before a caller sees
  it: a page that answers out of protocol fails the request with code `bad_reply`, saying what
  is wrong and which extension answered, instead of a `KeyError` somewhere in a tool. What
  `request` returns is then typed by the op (`protocol_types.PageRequests`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import EllipsisType
from typing import TYPE_CHECKING, Any

from .cell_guard import KEY, breaches
from .comm_guard import CommGuard
from .protocol import PROTOCOL, TARGET, extension_version, reply_problem
from .protocol_types import AgentMetadata, ConnectMessage, ListedCell, NotifyType, Output, PageRequests, ReadCell
from .review import Reviews
from .runlog import RunLog

if TYPE_CHECKING:
    from .execute import RunOutcome

__all__ = ["BridgeError", "FrontEnd", "NotConnected", "NotebookBridge"]

REQUEST_TIMEOUT = 15.0
HELLO_WAIT = 2.0  # how long the first run waits for a hello after the comm was opened
# How long a run waits for a known page to answer its probe. A live page answers as soon as its
# main thread is free, which in JupyterLab with a 500-cell notebook still rendering took up to
# 3.9 s (measured); only a closed page uses the whole wait, once, and is then taken for gone.
PROBE_WAIT = 10.0
METADATA_TIMEOUT = 5.0  # the notebook's metadata, read before each prompt from a page that just answered a probe
TICK = 0.05


class BridgeError(Exception):
    """A request the front end refused or could not answer; `code` says which kind."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class NotConnected(BridgeError):
    def __init__(self, message: str) -> None:
        super().__init__("not_connected", message)


@dataclass(frozen=True, kw_only=True)
class FrontEnd:
    """One notebook panel that said hello."""

    path: str  # as JupyterLab names it: relative to the server's root
    abs_path: str  # the file on this machine
    extension_version: str
    comm: Any
    at: float


def _abs_path(path: str, server_root: str | None, session_name: str | None, cwd: Path) -> str:
    if server_root:
        root = Path(server_root).expanduser()
        if root.is_absolute():
            return os.path.normpath(root / path)
    if session_name and os.path.isabs(session_name) and (session_name == path or session_name.endswith("/" + path)):
        return os.path.normpath(session_name)
    return os.path.normpath(cwd / Path(path).name)


class NotebookBridge(PageRequests):
    """One per kernel. Give it to the Agent as `notebook`; tools reach it as `ctx.notebook`."""

    def __init__(self, shell: Any = None, *, session_name: str | None = None, cwd: str | Path | None = None) -> None:
        self.shell = shell
        self.session_name = session_name if session_name is not None else os.environ.get("JPY_SESSION_NAME") or None
        self.cwd = Path(cwd or os.getcwd())
        self.front_end: FrontEnd | None = None
        self.problem: str | None = None  # why the front end cannot be used (a version mismatch)
        self.others: list[str] = []  # other panels on this kernel that said hello
        self._pending: dict[str, tuple[asyncio.AbstractEventLoop, asyncio.Future[dict[str, object]]]] = {}
        self._comm: Any = None
        self._probe_at: float | None = None
        self._waited = False
        self._kernel: Any = None
        self.told_missing = False  # the UI said once that there is no front end
        self.guard: CommGuard | None = None  # keeps widget and bridge comms open (comm_guard.py)
        self.runs = RunLog()  # which cells ran in this kernel (staleness, the prompt's "last run")
        self.reviews = Reviews()  # staged cell edits the page shows in the cell (review.py)

    # --- state ------------------------------------------------------------------------------
    @property
    def connected(self) -> bool:
        return self.front_end is not None

    @property
    def path(self) -> str | None:
        """The open notebook's file, when a front end is connected."""
        return self.front_end.abs_path if self.front_end else None

    @property
    def display_path(self) -> str | None:
        return self.front_end.path if self.front_end else None

    def is_open_notebook(self, path: str | Path) -> bool:
        return self.front_end is not None and os.path.realpath(path) == os.path.realpath(self.front_end.abs_path)

    def status(self) -> str:
        if self.front_end is not None:
            return f"connected to {self.front_end.path!r} (ipy-agent-notebook {self.front_end.extension_version})"
        if self.problem:
            return self.problem
        return (
            "no JupyterLab front end with the ipy_agent extension answered, so the live-notebook tools "
            "(NotebookRead, NotebookRun) are off and .ipynb files are read and edited on disk"
        )

    # --- connecting -------------------------------------------------------------------------
    def attach(self, kernel: Any) -> None:
        """Accept comms the front end opens (page reloads), and open one so panels say hello."""
        kernel.comm_manager.register_target(TARGET, self._on_comm_open)
        self._kernel = kernel
        if self.shell is not None and self.guard is None:
            self.guard = CommGuard(kernel)
            self.guard.install(self.shell)
        self.probe()

    def probe(self) -> Any:
        from comm import create_comm

        data: ConnectMessage = {"protocol": PROTOCOL, "event": "connect", "path": self.session_name}
        comm: Any = create_comm(target_name=TARGET, data=data)
        comm.on_msg(functools.partial(self._on_msg, comm))
        self._comm = comm
        self._probe_at = time.monotonic()
        return comm

    def _on_comm_open(self, comm: Any, msg: Mapping[str, object]) -> None:
        comm.on_msg(functools.partial(self._on_msg, comm))
        comm.on_close(lambda _msg: self._on_close(comm))
        self._on_data(comm, _comm_data(msg))

    def _on_close(self, comm: Any) -> None:
        if self.front_end is not None and self.front_end.comm is comm:
            self.front_end = None

    def _on_msg(self, comm: Any, msg: Mapping[str, object]) -> None:
        self._on_data(comm, _comm_data(msg))

    def _on_data(self, comm: Any, data: object) -> None:
        """A message from a page: a hello, a decision, or a reply (checked when its request takes it)."""
        if not isinstance(data, dict):
            return
        if data.get("event") == "hello":
            self._hello(comm, data)
        elif data.get("event") == "decision":
            # The person answered a staged proposal in the page (review.py); only the open page's count.
            front = self.front_end
            if front is not None and data.get("path") == front.path and data.get("protocol") == PROTOCOL:
                self.reviews.decided(data)
        elif isinstance(reply_to := data.get("reply_to"), str):
            self._resolve(reply_to, data)

    def _matches(self, path: str) -> bool:
        return self.session_name is None or self.session_name == path or self.session_name.endswith("/" + path)

    def _hello(self, comm: Any, data: dict[str, object]) -> None:
        path = data.get("path")
        if not isinstance(path, str) or not path:
            return
        if data.get("protocol") != PROTOCOL:
            self.problem = (
                f"the JupyterLab extension (ipy-agent-notebook {data.get('extension_version', '?')}) speaks protocol "
                f"{data.get('protocol')!r} and this kernel's ipy_agent speaks {PROTOCOL}; install the same ipy_agent "
                "version in the kernel's and the server's environment, then reload the page"
            )
            return
        current = self.front_end
        if current is not None and current.path != path and (self._matches(current.path) or not self._matches(path)):
            if path not in self.others:
                self.others.append(path)
            return
        self.problem = None
        root = data.get("server_root")
        self.front_end = FrontEnd(
            path=path,
            abs_path=_abs_path(path, root if isinstance(root, str) else None, self.session_name, self.cwd),
            extension_version=str(data.get("extension_version", "?")),
            comm=comm,
            at=time.monotonic(),
        )

    def connect_local(self, page: Any) -> None:
        """Connect a page that answers in this process instead of a browser: `page.hello()` is
        its hello message and `page.answer(request)` its reply (None: no reply), both in the
        protocol's format. A stand-in for JupyterLab where there is none (a teaching notebook run
        headless, a test); the tools cannot tell the difference."""
        self._on_data(_LocalComm(self, page), page.hello())

    async def ensure(self, timeout: float = HELLO_WAIT, probe_wait: float = PROBE_WAIT) -> bool:
        """Before a run: is a page connected, and is it still the page that is open?

        With a page known, the kernel opens a fresh comm and waits for its hello: a reloaded
        page cannot announce itself while the `%agent` cell holds the kernel (its comm-info
        request would queue behind the cell), but it answers a comm the kernel opens at once.
        No hello within `probe_wait` means the page is gone. Without any page, only the first
        run after loading waits, up to `timeout` after loading (for a hello on its way); later
        runs do not wait at all."""
        if self._kernel is None:
            return self.front_end is not None
        if self.front_end is None:
            if self._waited or self._probe_at is None:
                return False
            end = self._probe_at + timeout
            while self.front_end is None and time.monotonic() < end:
                await asyncio.sleep(TICK)
            self._waited = True
            return self.front_end is not None
        if isinstance(self.front_end.comm, _LocalComm):
            return True  # a page in this process (connect_local) is not reloaded or closed by a browser
        old = self._comm
        probe = self.probe()
        end = time.monotonic() + probe_wait
        while not (self.front_end is not None and self.front_end.comm is probe) and time.monotonic() < end:
            await asyncio.sleep(TICK)
        if self.front_end is None or self.front_end.comm is not probe:
            self.front_end = None  # the page did not answer: it was closed
        if old is not None and old is not probe:
            with contextlib.suppress(Exception):  # closing a comm nobody listens to may fail; it is gone either way
                old.close()
        self._waited = True
        return self.front_end is not None

    # --- requests ---------------------------------------------------------------------------
    def _resolve(self, request_id: str, data: dict[str, object]) -> None:
        entry = self._pending.pop(request_id, None)
        if entry is None:
            return
        loop, future = entry

        def settle() -> None:
            if not future.done():
                future.set_result(data)

        loop.call_soon_threadsafe(settle)

    async def send_request(
        self, op: str, args: dict[str, object], timeout: float | EllipsisType | None
    ) -> Mapping[str, object]:
        """Send one op to the connected panel and return its `result`; raise BridgeError otherwise.
        Called as `request(op, timeout, **args)`, typed per op. `timeout` None waits as long as
        the page takes (a person's answer, `ask_permission`); `...` is REQUEST_TIMEOUT."""
        if isinstance(timeout, EllipsisType):
            timeout = REQUEST_TIMEOUT
        front = self.front_end
        if front is None:
            raise NotConnected(f"The live notebook is not available: {self.status()}.")
        request_id = uuid.uuid4().hex
        loop = asyncio.get_running_loop()
        future: asyncio.Future[dict[str, object]] = loop.create_future()
        self._pending[request_id] = (loop, future)
        front.comm.send(_request_message(request_id, op, front.path, args))
        try:
            reply = await asyncio.wait_for(future, timeout)
        except TimeoutError:
            if self.front_end is front:
                self.front_end = None  # the page is gone; a new hello brings it back
            raise BridgeError(
                "timeout",
                f"The notebook page did not answer {op!r} within {timeout:g} s (was it "
                "closed?). The live notebook is off until the page is open again.",
            ) from None
        finally:
            self._pending.pop(request_id, None)  # answered, timed out, or the caller gave up (cancelled)
        if reply.get("protocol") != PROTOCOL or reply.get("code") == "version_mismatch":
            self.problem = str(
                reply.get("error")
                or f"protocol mismatch: the front end speaks {reply.get('protocol')!r}, the kernel {PROTOCOL}"
            )
            self.front_end = None
            raise BridgeError("version_mismatch", self.problem)
        problem = reply_problem(op, reply)
        if problem:
            raise BridgeError(
                "bad_reply",
                f"The notebook page answered {op!r} out of protocol {PROTOCOL}: {problem}. The page runs "
                f"ipy-agent-notebook {front.extension_version}, this kernel's ipy_agent comes with "
                f"{extension_version() or 'no built extension'}; install the same ipy_agent version in the "
                "kernel's and the server's environment, then reload the page.",
            )
        result = reply["result"] if reply["ok"] else None
        if not isinstance(result, dict):  # an error reply, as checked
            raise BridgeError(str(reply["code"]), str(reply["error"]))
        return result

    def post(self, op: str, **args: object) -> bool:
        """Send one op without waiting for its reply (which is dropped when it comes); safe from
        any thread, so a cell that blocks the event loop can still show its outputs as they come.
        False when no page is connected or the send failed."""
        front = self.front_end
        if front is None:
            return False
        try:
            front.comm.send(_request_message(uuid.uuid4().hex, op, front.path, args))
        except Exception:  # best effort: the final outputs are sent with `request` after the run
            return False
        return True

    # --- conveniences the tools use ----------------------------------------------------------
    async def list_cells(self) -> list[ListedCell]:
        return list((await self.request("list_cells"))["cells"])

    async def read_cells(self, cell_ids: list[str] | None = None) -> list[ReadCell]:
        if cell_ids is None:
            return list((await self.request("read_cells"))["cells"])
        return list((await self.request("read_cells", cell_ids=cell_ids))["cells"])

    async def agent_metadata(self) -> AgentMetadata:
        """The open notebook's `ipy_agent` metadata, as the page has it (unsaved edits included)."""
        return (await self.request("get_agent_metadata", timeout=METADATA_TIMEOUT))["metadata"]

    async def set_agent_metadata(self, metadata: AgentMetadata) -> None:
        """Replace the open notebook's `ipy_agent` metadata (an empty dict removes it). A change
        that would remove or weaken a cell policy held there is refused (code `policy`): only
        the person lifts one, in the page (cell_guard.py)."""
        verdict = breaches({"metadata": {KEY: await self.agent_metadata()}}, {"metadata": {KEY: metadata}})
        if verdict:
            raise BridgeError("policy", f"Not changed: {verdict.question(self.display_path or 'the open notebook')}.")
        await self.request("set_agent_metadata", metadata=metadata)

    async def notify(self, message: str, type: NotifyType = "info") -> None:
        await self.request("notify", message=message, type=type)

    async def scroll_to(self, cell_id: str) -> None:
        """Best effort: the person's view follows the agent; failing to scroll fails nothing.
        Sent without waiting: JupyterLab answers once its scroll has ended, which in a 500-cell
        notebook took seconds (an edit waited for it, and a scroll past 5 s took the page for
        gone, so the edit, already made, was reported as failed)."""
        self.post("scroll_to", cell_id=cell_id)

    async def run_code(
        self, code: str, *, timeout: float, on_progress: Callable[[list[Output]], object] | None = None
    ) -> RunOutcome:
        from .execute import run_code  # IPython's shell is needed only here

        if self.shell is None:
            raise NotConnected("There is no IPython kernel to run code in.")
        with self.runs.nested():  # inside the running `%agent` cell: its own count (runlog.py)
            outcome = await run_code(self.shell, code, timeout=timeout, on_progress=on_progress)
        self.runs.took(outcome.execution_count)
        return outcome

    def variables(self, **kwargs: Any) -> Any:
        from .variables import describe_namespace

        if self.shell is None:
            raise NotConnected("There is no IPython kernel whose variables could be listed.")
        return describe_namespace(self.shell, **kwargs)


def _comm_data(msg: Mapping[str, object]) -> object:
    """The data of a comm message (a Jupyter message: its content's `data`)."""
    content = msg.get("content")
    return (content.get("data") if isinstance(content, Mapping) else None) or {}


def _request_message(request_id: str, op: str, path: str, args: dict[str, object]) -> dict[str, object]:
    """A request as protocol.json's `request` message has it."""
    return {"protocol": PROTOCOL, "request_id": request_id, "op": op, "path": path, "args": args}


class _LocalComm:
    """The comm to a page in this process: a request is answered on the loop's next turn, as a
    reply over a real comm arrives after the request was sent."""

    def __init__(self, bridge: NotebookBridge, page: Any) -> None:
        self.bridge, self.page = bridge, page

    def send(self, data: Mapping[str, object]) -> None:
        answer = self.page.answer(data)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # sent from a thread (`post`): nobody waits for the reply
            return
        if answer is not None:
            loop.call_soon(self.bridge._on_data, self, answer)
