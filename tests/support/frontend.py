"""A stand-in for the JupyterLab extension, speaking its protocol over a real kernel comm.

`LiveKernel` is the test kernel (tests/support/kernel.py) with notebook panels attached:
each `Panel` holds a notebook model (a list of cell dicts, as the front end's shared model
holds them) and answers the kernel's requests on the comm target `ipy_agent.notebook` exactly as
labextension/src/handler.ts does: hello on comm_open, requests addressed by path, replies under
`result` with `reply_to`, compare-and-set on `expected_source`. The target, the version and the
ops come from ipy_agent/notebook/protocol.json, as the extension's do. Replies go to the kernel as
`comm_msg`s on the shell channel, the way a browser sends them, while the test pumps iopub.
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ipy_agent.notebook.bridge import NotebookBridge
from ipy_agent.notebook.protocol import PROTOCOL, TARGET

from .kernel import Kernel

LOAD = "%load_ext ipy_agent\n"
# The kernel's AgentSession, as code sent to the kernel.
MAGICS = "__import__('ipy_agent.magics', fromlist=['x']).current_session()"


def cell(
    source: str,
    cell_type: str = "code",
    *,
    cell_id: str | None = None,
    outputs: list[Any] | None = None,
    execution_count: int | None = None,
    tags: list[str] | None = None,
) -> dict[str, Any]:
    c: dict[str, Any] = {
        "id": cell_id or uuid.uuid4().hex[:8],
        "cell_type": cell_type,
        "source": source,
        "metadata": {"tags": list(tags)} if tags else {},
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
    # The notebook's metadata, as the page's model holds it (`ipy_agent` is the agent's key).
    metadata: dict[str, Any] = field(default_factory=dict)
    # Whether the page draws widgets: False is a page whose widget manager is missing, so it
    # never shows an approval prompt (`prompt_shown` says so) and the fallback is asked for.
    shows_widgets: bool = True
    # What the person clicks in the buttons `ask_permission` draws: behavior and typed message;
    # None: they click nothing there (the page draws the buttons and never replies).
    fallback_answer: dict[str, Any] | None = field(default_factory=lambda: {"behavior": "allow", "message": ""})
    asked: list[dict[str, Any]] = field(default_factory=list)  # the `ask_permission` args, in order
    # Staged proposals (stage_proposal) by id, as the page draws them: the args, and `outcome`
    # once resolved (resolve_proposal). Nothing here touches `cells`: a proposal is not an edit.
    proposals: dict[str, dict[str, Any]] = field(default_factory=dict)
    last_comm: str | None = None  # the comm the last request came on (the page answers on it)

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
            "tags": [t for t in c.get("metadata", {}).get("tags", []) if isinstance(t, str)],
        }
        if outputs:
            s["outputs"] = outs
        else:
            s["output_summary"] = [{"output_type": o["output_type"], "size": len(json.dumps(o))} for o in outs]
        return s

    def handle(self, op: str, args: dict[str, Any]) -> dict[str, Any] | None:
        """The op's result; None when the page does not reply (yet)."""
        handler: Callable[[dict[str, Any]], dict[str, Any] | None] | None = getattr(self, f"op_{op}", None)
        if handler is None:
            raise Refused("unknown_op", f"unknown op {op!r}")
        return handler(args)

    # One method per op of protocol.json, named op_<op> (a test checks they are the same ops).
    def op_list_cells(self, args: dict[str, Any]) -> dict[str, Any]:
        return {"path": self.path, "dirty": True, "cells": [self.summary(i, False) for i in range(len(self.cells))]}

    def op_read_cells(self, args: dict[str, Any]) -> dict[str, Any]:
        ids = args.get("cell_ids")
        idx = [self.find(i) for i in ids] if isinstance(ids, list) else range(len(self.cells))
        return {"path": self.path, "cells": [self.summary(i, True) for i in idx]}

    def check_source(self, i: int, args: dict[str, Any]) -> None:
        if isinstance(args.get("expected_source"), str) and self.cells[i]["source"] != args["expected_source"]:
            raise Refused("stale", "the cell changed since the agent read it")

    def op_replace_source(self, args: dict[str, Any]) -> dict[str, Any]:
        i = self.find(args.get("cell_id"))
        self.check_source(i, args)
        old = self.cells[i]
        wanted = args.get("cell_type") or old["cell_type"]
        if wanted != old["cell_type"]:
            self.cells[i] = cell(args.get("source", ""), wanted, cell_id=old["id"])
        else:
            old["source"] = args.get("source", "")
            if old["cell_type"] == "code":
                old["outputs"], old["execution_count"] = [], None
        return {"cell": self.summary(i, False)}

    def op_delete_cell(self, args: dict[str, Any]) -> dict[str, Any]:
        i = self.find(args.get("cell_id"))
        self.check_source(i, args)
        gone = self.summary(i, False)
        del self.cells[i]
        return {"cell": gone, "cell_count": len(self.cells)}

    def op_insert_cell(self, args: dict[str, Any]) -> dict[str, Any]:
        i = self.find(args["after_id"]) + 1 if args.get("after_id") else 0
        keep = args.get("cell_id")  # a cell put back keeps its id, unless the notebook has it again
        keep = keep if isinstance(keep, str) and keep and keep not in [c["id"] for c in self.cells] else None
        self.cells.insert(i, cell(args.get("source", ""), args.get("cell_type", "code"), cell_id=keep))
        return {"cell": self.summary(i, False)}

    def op_set_outputs(self, args: dict[str, Any]) -> dict[str, Any]:
        i = self.find(args.get("cell_id"))
        self.cells[i]["outputs"] = list(args.get("outputs") or [])
        if "execution_count" in args:
            self.cells[i]["execution_count"] = args["execution_count"]
        return {"cell": self.summary(i, False)}

    def op_scroll_to(self, args: dict[str, Any]) -> dict[str, Any]:
        return {"index": self.find(args.get("cell_id"))}

    def op_notify(self, args: dict[str, Any]) -> dict[str, Any]:
        return {"notification_id": "n1"}

    def op_get_agent_metadata(self, args: dict[str, Any]) -> dict[str, Any]:
        return {"metadata": self.metadata.get("ipy_agent", {})}

    def op_set_agent_metadata(self, args: dict[str, Any]) -> dict[str, Any]:
        value = args.get("metadata")
        if not isinstance(value, dict):
            raise Refused("bad_request", f"metadata must be an object, not {json.dumps(value)}")
        if value:
            self.metadata["ipy_agent"] = value
        else:
            self.metadata.pop("ipy_agent", None)
        return {"metadata": self.metadata.get("ipy_agent", {})}

    def op_prompt_shown(self, args: dict[str, Any]) -> dict[str, Any]:
        return {"shown": self.shows_widgets}

    def op_ask_permission(self, args: dict[str, Any]) -> dict[str, Any] | None:
        self.asked.append(dict(args))
        if self.fallback_answer is None:
            return None  # no click: no reply
        answer = self.fallback_answer
        return {"behavior": answer["behavior"], "message": answer.get("message", ""), "answers": answer.get("answers")}

    def op_withdraw_prompt(self, args: dict[str, Any]) -> dict[str, Any]:
        return {"removed": any(a.get("prompt_id") == args.get("prompt_id") for a in self.asked)}

    def op_stage_proposal(self, args: dict[str, Any]) -> dict[str, Any]:
        if args.get("kind") not in ("replace", "insert", "delete") or not isinstance(args.get("proposal_id"), str):
            raise Refused("bad_request", "a proposal needs a proposal_id and a kind: replace, insert or delete")
        if args["kind"] == "insert":
            index = self.find(args["cell_id"]) + 1 if args.get("cell_id") else 0
        else:
            index = self.find(args.get("cell_id"))
        self.proposals[args["proposal_id"]] = {**args, "index": index, "outcome": None, "reason": ""}
        return {"proposal_id": args["proposal_id"], "index": index}

    def op_resolve_proposal(self, args: dict[str, Any]) -> dict[str, Any]:
        proposal = self.proposals.get(args.get("proposal_id"))  # type: ignore[arg-type]
        if proposal is None:
            raise Refused("not_found", f"no proposal {json.dumps(args.get('proposal_id'))}")
        proposal["outcome"], proposal["reason"] = args.get("outcome"), args.get("reason") or ""
        return {"proposal_id": args["proposal_id"], "outcome": proposal["outcome"]}

    def open_proposals(self) -> list[dict[str, Any]]:
        return [p for p in self.proposals.values() if p["outcome"] is None]

    def decision(self, outcome: str, reason: str = "", proposal_id: str | None = None) -> dict[str, Any]:
        """The message the page sends when the person answers a proposal (the first open one)."""
        pid = proposal_id or self.open_proposals()[0]["proposal_id"]
        return {
            "protocol": self.protocol,
            "event": "decision",
            "path": self.path,
            "proposal_id": pid,
            "outcome": outcome,
            "reason": reason,
        }

    def answer(self, req: dict[str, Any]) -> dict[str, Any] | None:
        """The reply to one message from the kernel; None for another panel's, or when silent."""
        if (req.get("path") and req["path"] != self.path) or not req.get("request_id") or self.silent:
            return None
        self.requests.append(req)
        base = {"protocol": self.protocol, "reply_to": req["request_id"]}
        if req.get("protocol") != self.protocol:
            return {
                **base,
                "ok": False,
                "code": "version_mismatch",
                "error": f"protocol mismatch: kernel {req.get('protocol')}, front end {self.protocol}",
            }
        if self.before is not None:
            self.before(self, req)
        try:
            result = self.handle(req["op"], req.get("args") or {})
            return None if result is None else {**base, "ok": True, "result": result}
        except Refused as e:
            return {**base, "ok": False, "code": e.code, "error": str(e)}

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
        panel.last_comm = comm_id
        reply = panel.answer(req)
        if reply is not None:
            self.send(comm_id, reply)

    def send(self, comm_id: str, data: dict[str, Any]) -> None:
        self._send_comm(comm_id, data)

    def proposal(self, panel: Panel) -> dict[str, Any]:
        """Wait until the page shows a proposal nobody answered yet; return it."""
        return self.wait_for("a staged proposal in the page", lambda: (panel.open_proposals() or [None])[0])  # type: ignore[no-any-return]

    def decide(self, panel: Panel, outcome: str, reason: str = "") -> str:
        """The person answers the open proposal in its cell (Accept, Reject with a reason, ...)."""
        assert panel.last_comm is not None, "the page has had no request yet"
        return self._send_comm(panel.last_comm, panel.decision(outcome, reason))

    def type_into(self, panel: Panel, cell_id: str, source: str) -> None:
        """The person types in a cell: the model's source changes, and a proposal open on that
        cell goes stale (the page tells the kernel, as the extension does)."""
        panel.cells[panel.find(cell_id)]["source"] = source
        for p in panel.open_proposals():
            if p["cell_id"] == cell_id and p["kind"] != "insert" and panel.last_comm is not None:
                self._send_comm(panel.last_comm, panel.decision("stale", proposal_id=p["proposal_id"]))

    def run_cell(self, panel: Panel, cell_id: str) -> None:
        """What the person's Shift+Enter does: an execute_request carrying the cell's id in its
        metadata (JupyterLab's `cellId`), then the count and outputs written into the cell."""
        c = panel.cells[panel.find(cell_id)]
        content = {"code": c["source"], "silent": False, "store_history": True, "user_expressions": {}}
        msg = self.kc.session.msg("execute_request", content, metadata={"cellId": cell_id})
        self.kc.shell_channel.send(msg)
        self.cells += 1
        ex = self.wait(msg["header"]["msg_id"])
        assert ex.status == "ok", f"cell {cell_id} failed: {ex.reply.get('ename')}: {ex.reply.get('evalue')}"
        c["execution_count"] = ex.reply.get("execution_count")
        c["outputs"] = [{"output_type": m["msg_type"], **m["content"]} for m in ex.outputs]

    def open_from_page(self, panel: Panel) -> str:
        """What a reloaded page does: open a comm of its own to the kernel's target, with hello."""
        comm_id = uuid.uuid4().hex
        self.comms[comm_id] = [panel]
        msg = self.kc.session.msg("comm_open", {"comm_id": comm_id, "target_name": TARGET, "data": panel.hello()})
        self.kc.shell_channel.send(msg)
        return comm_id


def tool_results(k: Kernel) -> dict[str, Any]:
    """tool_use id -> the tool_result the model received, from the kernel's agent."""
    text = k.check(
        "import json as _j\n"
        f"_m = {MAGICS}.agent.messages\n"
        "print(_j.dumps({b['tool_use_id']: b for m in _m if m['role'] == 'user' and isinstance(m['content'], list)"
        " for b in m['content'] if b.get('type') == 'tool_result'}))\n"
    )
    found: dict[str, Any] = json.loads(text)
    return found


def connected_bridge(panel: Panel, cwd: Any, *, shell: Any = None) -> NotebookBridge:
    """A kernel-side bridge whose page is `panel` (its file is `cwd / panel.path`)."""
    bridge = NotebookBridge(shell=shell, session_name=str(cwd / panel.path), cwd=cwd)
    panel.server_root = str(cwd)
    bridge.connect_local(panel)
    return bridge


@contextlib.contextmanager
def connected_kernel(cwd: Any, panel: Panel) -> Iterator[LiveKernel]:
    """A real kernel with ipy_agent loaded and `panel`'s page connected (its hello answered)."""
    k = LiveKernel(cwd, panels=[panel])
    try:
        k.check(LOAD)
        k.wait_for("the panel's hello", lambda: k.check(f"print({MAGICS}.bridge.connected)").strip() == "True")
        yield k
    finally:
        k.shutdown()
