"""A stand-in for the JupyterLab extension, speaking its protocol over a real kernel comm.

`LiveKernel` is the test kernel (tests/support/kernel.py) with notebook panels attached:
each `Panel` holds a notebook model (a list of cell dicts, as the front end's shared model
holds them) and answers the kernel's requests on the comm target `ipy_agent.notebook` exactly as
labextension/src/index.ts does: hello on comm_open, requests addressed by path, replies under
`result` with `reply_to`, compare-and-set on `expected_source`. Replies go to the kernel as
`comm_msg`s on the shell channel, the way a browser sends them, while the test pumps iopub.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .kernel import Kernel

TARGET = "ipy_agent.notebook"
PROTOCOL = 1


def cell(
    source: str,
    cell_type: str = "code",
    *,
    cell_id: str | None = None,
    outputs: list[Any] | None = None,
    execution_count: int | None = None,
) -> dict[str, Any]:
    c: dict[str, Any] = {
        "id": cell_id or uuid.uuid4().hex[:8],
        "cell_type": cell_type,
        "source": source,
        "metadata": {},
    }
    if cell_type == "code":
        c["outputs"] = outputs or []
        c["execution_count"] = execution_count
    return c


class Refused(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class Panel:
    path: str
    cells: list[dict[str, Any]] = field(default_factory=list)
    protocol: int = PROTOCOL
    server_root: str | None = None
    requests: list[dict[str, Any]] = field(default_factory=list)
    # Called with each request before it is answered: a test's way to act "between" two calls
    # (the person typing into a cell after the agent read it).
    before: Callable[[Panel, dict[str, Any]], None] | None = None
    silent: bool = False  # the page is gone: requests go unanswered
    # A busy page (a long notebook still rendering) handles a comm the kernel opens this many
    # seconds late: the kernel waits, nothing answers in between.
    hello_delay: float = 0.0

    def sources(self) -> list[str]:
        return [c["source"] for c in self.cells]

    def find(self, cell_id: Any) -> int:
        for i, c in enumerate(self.cells):
            if c["id"] == cell_id:
                return i
        raise Refused("not_found", f"no cell with id {json.dumps(cell_id)} in {self.path}")

    def summary(self, i: int, outputs: bool) -> dict[str, Any]:
        c = self.cells[i]
        outs = c.get("outputs") or []
        s = {
            "id": c["id"],
            "index": i,
            "cell_type": c["cell_type"],
            "source": c["source"],
            "execution_count": c.get("execution_count"),
            "output_count": len(outs),
            "outputs_size": sum(len(json.dumps(o)) for o in outs),
        }
        if outputs:
            s["outputs"] = outs
        else:
            s["output_summary"] = [{"output_type": o["output_type"], "size": len(json.dumps(o))} for o in outs]
        return s

    def handle(self, op: str, args: dict[str, Any]) -> dict[str, Any]:
        if op == "list_cells":
            return {"path": self.path, "dirty": True, "cells": [self.summary(i, False) for i in range(len(self.cells))]}
        if op == "read_cells":
            ids = args.get("cell_ids")
            idx = [self.find(i) for i in ids] if isinstance(ids, list) else range(len(self.cells))
            return {"path": self.path, "cells": [self.summary(i, True) for i in idx]}
        if op in ("replace_source", "delete_cell"):
            i = self.find(args.get("cell_id"))
            if isinstance(args.get("expected_source"), str) and self.cells[i]["source"] != args["expected_source"]:
                raise Refused("stale", "the cell changed since the agent read it")
            if op == "delete_cell":
                gone = self.summary(i, False)
                del self.cells[i]
                return {"cell": gone, "cell_count": len(self.cells)}
            old = self.cells[i]
            wanted = args.get("cell_type") or old["cell_type"]
            if wanted != old["cell_type"]:
                self.cells[i] = cell(args.get("source", ""), wanted, cell_id=old["id"])
            else:
                old["source"] = args.get("source", "")
                if old["cell_type"] == "code":
                    old["outputs"], old["execution_count"] = [], None
            return {"cell": self.summary(i, False)}
        if op == "insert_cell":
            i = self.find(args["after_id"]) + 1 if args.get("after_id") else 0
            self.cells.insert(i, cell(args.get("source", ""), args.get("cell_type", "code")))
            return {"cell": self.summary(i, False)}
        if op == "set_outputs":
            i = self.find(args.get("cell_id"))
            self.cells[i]["outputs"] = list(args.get("outputs") or [])
            if "execution_count" in args:
                self.cells[i]["execution_count"] = args["execution_count"]
            return {"cell": self.summary(i, False)}
        if op == "scroll_to":
            return {"index": self.find(args.get("cell_id"))}
        if op == "notify":
            return {"notification_id": "n1"}
        raise Refused("unknown_op", f"unknown op {op!r}")

    def hello(self) -> dict[str, Any]:
        return {
            "protocol": self.protocol,
            "event": "hello",
            "path": self.path,
            "server_root": self.server_root,
            "extension_version": "test",
        }


class LiveKernel(Kernel):
    """A test kernel whose front end has notebook panels with the extension."""

    def __init__(self, *args: Any, panels: list[Panel] | None = None, **kwargs: Any) -> None:
        self.panels: list[Panel] = list(panels or [])
        self.comms: dict[str, list[Panel]] = {}  # comm id -> the panels that know it
        super().__init__(*args, **kwargs)

    def _record(self, msg: dict[str, Any]) -> None:
        super()._record(msg)
        content = msg.get("content", {})
        if msg["msg_type"] == "comm_open" and content.get("target_name") == TARGET:
            self.comms[content["comm_id"]] = list(self.panels)
            for panel in self.panels:
                time.sleep(panel.hello_delay)
                self.send(content["comm_id"], panel.hello())
        elif msg["msg_type"] == "comm_msg" and content.get("comm_id") in self.comms:
            data = content.get("data") or {}
            for panel in self.comms[content["comm_id"]]:
                self._answer(panel, content["comm_id"], data)

    def _answer(self, panel: Panel, comm_id: str, req: dict[str, Any]) -> None:
        if (req.get("path") and req["path"] != panel.path) or not req.get("request_id") or panel.silent:
            return
        panel.requests.append(req)
        base = {"protocol": panel.protocol, "reply_to": req["request_id"]}
        if req.get("protocol") != panel.protocol:
            self.send(
                comm_id,
                {
                    **base,
                    "ok": False,
                    "code": "version_mismatch",
                    "error": f"protocol mismatch: kernel {req.get('protocol')}, front end {panel.protocol}",
                },
            )
            return
        if panel.before is not None:
            panel.before(panel, req)
        try:
            reply = {**base, "ok": True, "result": panel.handle(req["op"], req.get("args") or {})}
        except Refused as e:
            reply = {**base, "ok": False, "code": e.code, "error": str(e)}
        self.send(comm_id, reply)

    def send(self, comm_id: str, data: dict[str, Any]) -> None:
        self._send_comm(comm_id, data)

    def open_from_page(self, panel: Panel) -> str:
        """What a reloaded page does: open a comm of its own to the kernel's target, with hello."""
        comm_id = uuid.uuid4().hex
        self.comms[comm_id] = [panel]
        msg = self.kc.session.msg("comm_open", {"comm_id": comm_id, "target_name": TARGET, "data": panel.hello()})
        self.kc.shell_channel.send(msg)
        return comm_id
