"""A real IPython kernel driven the way a notebook front end drives it, for the kernel tests.

It starts ipykernel through jupyter_client with a private kernelspec whose argv names the test
process's own interpreter (jupyter_client 8 dropped `kernel_cmd`; a kernelspec is the supported
way to choose the Python). It records every iopub message, keeps the state of every widget
model the kernel opened (comm_open plus the later "update" messages, which is how a front end
knows what a widget shows), and sends exactly what @jupyter-widgets sends for a button click
(`comm_msg` with `{"method": "custom", "content": {"event": "click"}}`) or for typing into a
Text field (`{"method": "update", "state": {"value": ...}}`).

Every wait is bounded by a generous deadline (the machine may be loaded), shorter than the kernel
suite's pytest-timeout, and fails with a sentence naming what did not happen and what was seen
("the kernel did not finish cell 3 (execute_request 1a2b) within 60 s"). Starting a kernel in a
test not marked `kernel` fails at once: the fast default run must not start kernels.
"""

from __future__ import annotations

import json
import os
import queue
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jupyter_client import KernelManager
from jupyter_client.kernelspec import KernelSpecManager

from .waits import Deadline, require_marker, timed_out, waiting_for

TIMEOUT = 60.0  # seconds for one wait; the kernel suite's pytest-timeout (tests/conftest.py) is longer
# The checkout under test: the kernel imports ipy_agent from here, like pytest does (an editable
# install made before a package had its __init__.py maps it as a namespace package elsewhere).
PROJECT_ROOT = Path(__file__).resolve().parents[2]
KERNEL_NAME = "ipy_agent_test"


@dataclass
class Execution:
    msg_id: str
    reply: dict[str, Any] = field(default_factory=dict)
    outputs: list[dict[str, Any]] = field(default_factory=list)

    @property
    def status(self) -> str:
        return str(self.reply.get("status", ""))

    @property
    def text(self) -> str:
        """Streams, results and errors as one text, the way a person reads the cell output."""
        parts = []
        for m in self.outputs:
            c = m["content"]
            if m["msg_type"] == "stream":
                parts.append(c["text"])
            elif m["msg_type"] in ("execute_result", "display_data", "update_display_data"):
                parts.append(str(c["data"].get("text/plain", "")))
            elif m["msg_type"] == "error":
                parts.append(f"{c['ename']}: {c['evalue']}\n")
        return "".join(parts)


class Kernel:
    """One kernel process in `cwd`, with a clean IPython profile dir."""

    def __init__(
        self,
        cwd: Path,
        *,
        python: str = sys.executable,
        env: dict[str, str] | None = None,
        ip: str | None = None,
        connection_file: str | None = None,
        launcher: tuple[str, ...] = (),
    ) -> None:
        """`ip`: where the IPC sockets go (default: a private temp dir); `launcher`: argv put
        before the interpreter in the kernelspec (to run the kernel as another user)."""
        require_marker("kernel", "starts a real kernel")
        self.cells = 0  # cells sent so far: messages name a cell by its number
        self._cell_numbers: dict[str, int] = {}
        self._tmp = tempfile.TemporaryDirectory(prefix="ipy_agent_kernel_")
        spec_dir = Path(self._tmp.name) / "kernels" / KERNEL_NAME
        spec_dir.mkdir(parents=True)
        argv = [*launcher, python, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
        (spec_dir / "kernel.json").write_text(
            json.dumps({"argv": argv, "display_name": "ipy_agent test", "language": "python"})
        )
        kernel_env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "IPY_AGENT_"))}
        python_path = os.pathsep.join(p for p in (str(PROJECT_ROOT), os.environ.get("PYTHONPATH", "")) if p)
        kernel_env.update(
            IPYTHONDIR=str(Path(self._tmp.name) / "ipython"), PYTHONPATH=python_path, PYTHONUNBUFFERED="1"
        )
        # The person's own ipy_agent directory (AGENTS.md, skills, MCP settings): an empty one.
        kernel_env["IPY_AGENT_CONFIG_DIR"] = str(Path(self._tmp.name) / "personal")
        kernel_env.update(env or {})
        # IPC sockets in our temp dir: no TCP ports to collide with on a shared machine.
        self.km = KernelManager(
            kernel_name=KERNEL_NAME,
            transport="ipc",
            ip=ip or str(Path(self._tmp.name) / "kernel-ipc"),
            **({"connection_file": connection_file} if connection_file else {}),
            kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(spec_dir.parent)], ensure_native_kernel=False),
        )
        self.km.start_kernel(cwd=str(cwd), env=kernel_env)
        self.kc = self.km.blocking_client()
        self.kc.start_channels()
        with waiting_for("the kernel to start and answer kernel_info_request"):
            try:
                self.kc.wait_for_ready(timeout=TIMEOUT)
            except RuntimeError as e:
                self.shutdown()
                raise timed_out("the kernel did not start and answer kernel_info_request", TIMEOUT, str(e)) from None
        self.messages: list[dict[str, Any]] = []
        self.models: dict[str, dict[str, Any]] = {}  # comm_id -> widget state as a front end knows it

    # --- lifecycle -------------------------------------------------------------------------
    def shutdown(self) -> None:
        try:
            self.kc.stop_channels()
        finally:
            try:
                self.km.shutdown_kernel(now=True)
            finally:
                self._tmp.cleanup()

    def __enter__(self) -> Kernel:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.shutdown()

    # --- iopub ---------------------------------------------------------------------------
    def pump(self, seconds: float = 0.2) -> None:
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            try:
                msg = self.kc.get_iopub_msg(timeout=min(left, 0.2))
            except queue.Empty:
                continue
            self._record(msg)

    def _record(self, msg: dict[str, Any]) -> None:
        self.messages.append(msg)
        content = msg.get("content", {})
        if msg["msg_type"] == "comm_open":
            self.models[content["comm_id"]] = dict(content.get("data", {}).get("state", {}))
        elif msg["msg_type"] == "comm_msg":
            data = content.get("data", {})
            if data.get("method") in ("update", "echo_update") and content["comm_id"] in self.models:
                self.models[content["comm_id"]].update(data.get("state", {}))

    def wait_for(self, what: str, predicate: Callable[[], Any], timeout: float = TIMEOUT) -> Any:
        """Pump iopub until `predicate()` is true (returns it); `what` names it ("the Allow button")."""
        deadline = Deadline(timeout)
        with waiting_for(f"{what} (from the kernel)"):
            while True:
                found = predicate()
                if found:
                    return found
                if deadline.passed():
                    raise timed_out(f"the kernel did not show {what}", timeout, self.describe())
                self.pump(0.1)

    def describe(self) -> str:
        lines = [
            f"{m['msg_type']}: {json.dumps(m['content'])[:300]}"
            for m in self.messages[-40:]
            if m["msg_type"] not in ("status",)
        ]
        return "\n".join(lines)

    # --- cells ---------------------------------------------------------------------------
    def execute(self, code: str) -> str:
        """Send a cell and return at once (the cell may wait for a click)."""
        msg_id = self.kc.execute(code, store_history=True)
        self.cells += 1
        self._cell_numbers[msg_id] = self.cells
        return msg_id

    def cell_name(self, msg_id: str) -> str:
        """How messages name a cell: its number in this kernel and its first line."""
        return f"cell {self._cell_numbers.get(msg_id, '?')} (execute_request {msg_id[:8]})"

    def wait(self, msg_id: str, timeout: float = TIMEOUT) -> Execution:
        """Wait until the cell is finished (kernel idle for it) and collect its reply and outputs."""
        reply: dict[str, Any] = {}
        deadline = Deadline(timeout)
        cell = self.cell_name(msg_id)
        with waiting_for(f"the kernel to finish {cell}"):
            while not reply:
                try:
                    msg = self.kc.get_shell_msg(timeout=0.1)
                    if msg["parent_header"].get("msg_id") == msg_id:
                        reply = msg["content"]
                except queue.Empty:
                    pass
                self.pump(0.05)
                if deadline.passed():
                    raise timed_out(f"the kernel did not finish {cell}", timeout, self.describe())
        self.wait_for(f"idle after {cell}", lambda: self.idle_after(msg_id), timeout)
        outputs = [
            m
            for m in self.messages
            if m["parent_header"].get("msg_id") == msg_id
            and m["msg_type"] in ("stream", "execute_result", "display_data", "update_display_data", "error")
        ]
        return Execution(msg_id=msg_id, reply=reply, outputs=outputs)

    def idle_after(self, msg_id: str) -> bool:
        """Whether the kernel said it is idle after the request `msg_id` (a cell or a comm message)."""
        return any(
            m["msg_type"] == "status"
            and m["parent_header"].get("msg_id") == msg_id
            and m["content"]["execution_state"] == "idle"
            for m in self.messages
        )

    def run(self, code: str, timeout: float = TIMEOUT) -> Execution:
        return self.wait(self.execute(code), timeout)

    def check(self, code: str, timeout: float = TIMEOUT) -> str:
        """Run `code`, fail with the traceback if it raised, return its text output."""
        ex = self.run(code, timeout)
        assert ex.status == "ok", f"{code!r} failed: {ex.reply.get('ename')}: {ex.reply.get('evalue')}\n{ex.text}"
        return ex.text

    def interrupt(self) -> None:
        self.km.interrupt_kernel()

    # --- widgets, as a front end sees them ----------------------------------------------
    def widgets(self, model_name: str) -> dict[str, dict[str, Any]]:
        return {cid: s for cid, s in self.models.items() if s.get("_model_name") == model_name}

    def find_button(self, prefix: str, *, enabled: bool = True) -> str | None:
        """A button a person can see: on screen (inside a displayed widget), not just opened.

        The kernel opens a widget's children before the box that holds them, and attaches a
        new box (an approval prompt) to the view after that; so once a button is reachable from
        a displayed widget, everything shown beside it (the prompt's diff) has arrived too."""
        on_screen = self.displayed()
        for cid, state in self.widgets("ButtonModel").items():
            if (
                cid in on_screen
                and str(state.get("description", "")).startswith(prefix)
                and not (enabled and state.get("disabled"))
            ):
                return cid
        return None

    def displayed(self) -> set[str]:
        """The comm ids of every widget inside a widget that a cell displayed."""
        view = "application/vnd.jupyter.widget-view+json"
        todo = [
            m["content"]["data"][view]["model_id"]
            for m in self.messages
            if m["msg_type"] in ("display_data", "update_display_data", "execute_result")
            and view in m["content"].get("data", {})
        ]
        seen: set[str] = set()
        while todo:
            cid = todo.pop()
            if cid in seen or cid not in self.models:
                continue
            seen.add(cid)
            state = self.models[cid]
            todo += [str(c).removeprefix("IPY_MODEL_") for c in state.get("children") or []]
            for output in state.get("outputs") or []:  # an Output widget showing widgets
                if isinstance(output, dict) and view in output.get("data", {}):
                    todo.append(output["data"][view]["model_id"])
        return seen

    def siblings(self, comm_id: str, timeout: float = TIMEOUT) -> list[str]:
        """The comm ids of the widgets in the same box as `comm_id` (a prompt's buttons and text).

        A box's comm opens after its children's, so a front end may know a button before the
        box that holds it: wait for the box (and for every sibling's state) to arrive."""
        ref = f"IPY_MODEL_{comm_id}"

        def box() -> list[str] | None:
            for state in list(self.models.values()):
                children = state.get("children") or []
                if ref in children:
                    ids = [c.removeprefix("IPY_MODEL_") for c in children]
                    return ids if all(i in self.models for i in ids) else None
            return None

        return self.wait_for(f"a box that contains widget {comm_id}", box, timeout)

    def html_values(self) -> list[str]:
        return [str(s.get("value", "")) for s in self.widgets("HTMLModel").values()]

    def shows(self, needle: str) -> bool:
        return any(needle in v for v in self.html_values())

    def markdown(self) -> str:
        """The assistant's streamed text, as the HTML widgets show it (rendered in the kernel)."""
        return "".join(v for v in self.html_values() if "ipy-agent-text" in v)

    def _send_comm(self, comm_id: str, data: dict[str, Any]) -> str:
        msg = self.kc.session.msg("comm_msg", {"comm_id": comm_id, "data": data})
        self.kc.shell_channel.send(msg)
        return str(msg["header"]["msg_id"])

    def close_from_another_page(self, comm_id: str) -> None:
        """What a second page of this kernel without a handler for the comm sends (Notebook 7's
        file browser tab after "New > Notebook"): a `comm_close` from its own client session."""
        other = self.km.blocking_client()
        other.start_channels()
        try:
            msg = other.session.msg("comm_close", {"comm_id": comm_id, "data": {}})
            other.shell_channel.send(msg)
            self.pump(0.5)  # the kernel handles it before this page's next message
        finally:
            other.stop_channels()

    def click(self, comm_id: str) -> str:
        """A button click, as @jupyter-widgets sends it; returns the comm message's id."""
        return self._send_comm(comm_id, {"method": "custom", "content": {"event": "click"}})

    def set_value(self, comm_id: str, value: Any) -> str:
        """Typing into a Text field, as @jupyter-widgets sends it; returns the comm message's id."""
        return self._send_comm(comm_id, {"method": "update", "state": {"value": value}, "buffer_paths": []})

    def type_text(self, comm_id: str, text: str) -> None:
        """Type `text` into a Text field key by key, one update per keystroke as a front end sends
        them, until the kernel has it whole."""
        for end in range(1, len(text) + 1):
            self.set_value(comm_id, text[:end])
        self.wait_for(f"{text!r} typed to reach the kernel", lambda: self.models[comm_id].get("value") == text)

    def set_state(self, comm_id: str, state: dict[str, Any]) -> str:
        """Any widget state change a front end sends (a ToggleButtons' `index`, a Checkbox's `value`)."""
        return self._send_comm(comm_id, {"method": "update", "state": state, "buffer_paths": []})

    def parent(self, comm_id: str) -> str | None:
        """The box that holds widget `comm_id`, once the front end knows it."""
        ref = f"IPY_MODEL_{comm_id}"
        return next((cid for cid, s in list(self.models.items()) if ref in (s.get("children") or [])), None)
