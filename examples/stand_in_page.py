"""A stand-in for JupyterLab's page, for a teaching notebook that edits its own cells when it runs headless.

In JupyterLab the ipy_agent extension answers the live-notebook protocol
(ipy_agent/notebook/protocol.json) for the open notebook: the agent reads its cells, proposes an
edit in the cell, and the learner accepts or rejects it there. The course build and the tests run
the notebook with nbclient, where there is no page: `open_here` then connects this stand-in, which
holds the notebook's cells as the file has them and answers the same ops, so the same `%agent`
cell runs, and the real notebook file is never written. In JupyterLab `open_here` does nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ipy_agent.notebook.protocol import PROTOCOL

__all__ = ["StandInPage", "delete_here", "open_here"]

_open: list[StandInPage] = []  # the stand-in open_here connected in this kernel, if any


class StandInPage:
    """The notebook `path` as a page would hold it: cells with ids, sources, outputs."""

    def __init__(self, path: Path) -> None:
        self.path = path
        nb = json.loads(path.read_text(encoding="utf-8"))
        self.cells: list[dict[str, Any]] = [
            {"id": c["id"], "cell_type": c["cell_type"], "source": "".join(c["source"]), "outputs": []}
            for c in nb["cells"]
        ]
        self.metadata: dict[str, Any] = {}

    def hello(self) -> dict[str, Any]:
        return {
            "protocol": PROTOCOL,
            "event": "hello",
            "path": self.path.name,
            "server_root": str(self.path.parent),
            "extension_version": "stand-in",
        }

    def source(self, cell_id: str) -> str:
        return str(self.cell(cell_id)["source"])

    def cell(self, cell_id: str) -> dict[str, Any]:
        return {c["id"]: c for c in self.cells}[cell_id]

    def summary(self, c: dict[str, Any], outputs: bool) -> dict[str, Any]:
        s = {
            "id": c["id"],
            "index": self.cells.index(c),
            "cell_type": c["cell_type"],
            "source": c["source"],
            "execution_count": c.get("execution_count"),
            "output_count": len(c["outputs"]),
            "outputs_size": len(json.dumps(c["outputs"])),
            "tags": [],
        }
        s.update({"outputs": c["outputs"]} if outputs else {"output_summary": []})
        return s

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        base = {"protocol": PROTOCOL, "reply_to": request["request_id"]}
        op = getattr(self, "op_" + request["op"], None)
        if op is None:
            return {**base, "ok": False, "code": "unknown_op", "error": f"the stand-in has no op {request['op']!r}"}
        try:
            result = op(request.get("args") or {})
        except KeyError as e:
            return {**base, "ok": False, "code": "not_found", "error": f"no cell with id {e}"}
        except ValueError as e:
            return {**base, "ok": False, "code": "stale", "error": str(e)}
        return {**base, "ok": True, "result": result}

    def op_list_cells(self, args: dict[str, Any]) -> dict[str, Any]:
        return {"path": self.path.name, "dirty": False, "cells": [self.summary(c, False) for c in self.cells]}

    def op_read_cells(self, args: dict[str, Any]) -> dict[str, Any]:
        ids = args.get("cell_ids") or [c["id"] for c in self.cells]
        return {"path": self.path.name, "cells": [self.summary(self.cell(i), True) for i in ids]}

    def op_replace_source(self, args: dict[str, Any]) -> dict[str, Any]:
        c = self.cell(args["cell_id"])
        expected = args.get("expected_source")
        if expected is not None and expected != c["source"]:
            raise ValueError("the cell's source is not the expected source")
        c["source"] = args["source"]
        return {"cell": self.summary(c, False)}

    def op_set_outputs(self, args: dict[str, Any]) -> dict[str, Any]:
        c = self.cell(args["cell_id"])
        c["outputs"], c["execution_count"] = args["outputs"], args.get("execution_count")
        return {"cell": self.summary(c, False)}

    def op_scroll_to(self, args: dict[str, Any]) -> dict[str, Any]:
        return {"index": self.cells.index(self.cell(args["cell_id"]))}

    def op_get_agent_metadata(self, args: dict[str, Any]) -> dict[str, Any]:
        return {"metadata": self.metadata}

    def op_notify(self, args: dict[str, Any]) -> dict[str, Any]:
        return {"notification_id": "stand-in"}

    def op_prompt_shown(self, args: dict[str, Any]) -> dict[str, Any]:
        return {"shown": True}  # the prompt is answered in the cell (automatically, and said so)

    def op_withdraw_prompt(self, args: dict[str, Any]) -> dict[str, Any]:
        return {"removed": False}


async def open_here(session: Any, notebook: str | Path) -> StandInPage | None:
    """Connect a stand-in for `notebook` (relative: to the kernel's working directory) when no page with the
    ipy_agent extension answered: the course build and the tests. None in JupyterLab."""
    bridge = session.bridge
    if bridge is None or await bridge.ensure():
        return None
    page = StandInPage(Path.cwd() / notebook)
    bridge.connect_local(page)
    _open[:] = [page]
    return page


def delete_here(cell_id: str) -> None:
    """The person deletes the cell `cell_id`, run headless: the stand-in drops it. In JupyterLab this
    does nothing: there the person deletes it (select it, then D, D)."""
    for page in _open:
        page.cells = [c for c in page.cells if c["id"] != cell_id]
