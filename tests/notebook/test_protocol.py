"""The live-notebook protocol is defined once, in ipy_agent/notebook/protocol.json: the kernel side,
the fake front end of the kernel tests and the docs all speak what it says.

The extension's half is checked where it lives: labextension/src/handler.ts does not compile
unless its handlers are exactly the file's ops, and labextension/test/handler.test.ts checks its
replies against the file (`npm test` in labextension/, run by .ci/run).
"""

from __future__ import annotations

import ast
import asyncio
import re
from pathlib import Path
from typing import Any

import pytest

import ipy_agent
from ipy_agent.notebook import bridge
from ipy_agent.notebook.protocol import OPS, PROTOCOL, SPEC, TARGET
from tests.support.frontend import Panel, cell

PACKAGE = Path(ipy_agent.__file__).parent
ROOT = PACKAGE.parent

# Arguments each op is tried with below, against a notebook of the cells "a" (code) and "b".
SAMPLE_ARGS: dict[str, dict[str, Any]] = {
    "list_cells": {},
    "read_cells": {"cell_ids": ["b"]},
    "replace_source": {"cell_id": "a", "source": "x = 2", "cell_type": "code", "expected_source": "x = 1"},
    "insert_cell": {"after_id": "a", "cell_type": "markdown", "source": "# Notes"},
    "delete_cell": {"cell_id": "b", "expected_source": "# Title"},
    "set_outputs": {"cell_id": "a", "outputs": [], "execution_count": 3},
    "scroll_to": {"cell_id": "a"},
    "notify": {"message": "done", "type": "success", "auto_close": 1000},
    "get_agent_metadata": {},
    "set_agent_metadata": {"metadata": {"instructions": "Use polars."}},
    "prompt_shown": {"prompt_id": "p1", "wait_ms": 100},
    "ask_permission": {"prompt_id": "p1", "cell_id": "a", "title": "Edit notes.txt", "detail": "", "rule": "Edit"},
    "withdraw_prompt": {"prompt_id": "p1", "outcome": "Allowed once"},
    "stage_proposal": {
        "proposal_id": "p1",
        "kind": "replace",
        "cell_id": "a",
        "index": 0,
        "source": "x = 2",
        "old_source": "x = 1",
        "cell_type": "code",
        "label": "cell 1 · x = 1",
        "scroll": True,
    },
    "resolve_proposal": {"proposal_id": "p0", "outcome": "rejected", "reason": "keep it"},
}


def panel() -> Panel:
    p = Panel("work/demo.ipynb", [cell("x = 1", cell_id="a"), cell("# Title", "markdown", cell_id="b")])
    p.proposals["p0"] = {"proposal_id": "p0", "kind": "delete", "cell_id": "b", "outcome": None}  # to resolve
    return p


class Loopback:
    """A comm whose other end is a fake panel, answering at once: the bridge without a kernel."""

    def __init__(self, bridge_: bridge.NotebookBridge, panel_: Panel) -> None:
        self.bridge, self.panel, self.sent = bridge_, panel_, []

    def send(self, data: dict[str, Any]) -> None:
        self.sent.append(data)
        answer = self.panel.answer(data)
        if answer is not None:
            asyncio.get_running_loop().call_soon(self.bridge._on_data, self, answer)


def connected(panel_: Panel) -> tuple[bridge.NotebookBridge, Loopback]:
    nb = bridge.NotebookBridge(session_name=panel_.path, cwd="/tmp")
    comm = Loopback(nb, panel_)
    nb._on_data(comm, panel_.hello())
    assert nb.connected
    return nb, comm


def test_the_protocol_file_is_complete():
    assert isinstance(SPEC["version"], int) and SPEC["target"] == "ipy_agent.notebook"
    assert set(SPEC["messages"]) == {"connect", "request", "reply", "hello", "decision"}
    assert {"accept", "reject", "stale"} <= set(SPEC["decisions"])
    assert {"accepted", "rejected", "stale"} <= set(SPEC["outcomes"])
    for op, spec in SPEC["ops"].items():
        assert re.fullmatch(r"[a-z_]+", op), op
        assert set(spec) == {"args", "result"}, op
    assert {"not_found", "stale", "bad_request", "unknown_op", "not_ready", "version_mismatch"} <= set(SPEC["errors"])


def test_the_bridge_uses_the_protocol_file():
    assert (bridge.PROTOCOL, bridge.TARGET) == (PROTOCOL, TARGET) == (SPEC["version"], SPEC["target"])


def sent_requests() -> list[tuple[str, str, set[str]]]:
    """Every `<x>.request("<op>", key=...)` in the package: (where, op, its keyword arguments)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "request"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                keys = {k.arg for k in node.keywords if k.arg is not None}
                found.append((f"{path.relative_to(ROOT)}:{node.lineno}", node.args[0].value, keys))
    return found


def test_every_op_the_kernel_sends_is_in_the_protocol_file_with_its_arguments():
    found = sent_requests()
    assert {op for _, op, _ in found} >= {"list_cells", "replace_source", "set_outputs"}, "the scan finds nothing"
    for where, op, keys in found:
        assert op in OPS, f"{where} sends op {op!r}, which protocol.json does not define"
        unknown = keys - {"timeout"} - set(SPEC["ops"][op]["args"])  # timeout is request()'s own
        assert not unknown, f"{where} sends {op!r} with {sorted(unknown)}, not among its args in protocol.json"


def test_the_fake_front_end_handles_exactly_the_protocol_ops():
    handled = {name.removeprefix("op_") for name in vars(Panel) if name.startswith("op_")}
    assert handled == OPS
    assert set(SAMPLE_ARGS) == OPS


@pytest.mark.parametrize("op", sorted(OPS))
async def test_each_op_goes_through_the_bridge_with_the_protocol_keys(op):
    nb, comm = connected(panel())
    args = SAMPLE_ARGS[op]
    assert set(args) <= set(SPEC["ops"][op]["args"])
    result = await nb.request(op, timeout=5, **args)
    assert set(comm.sent[-1]) == set(SPEC["messages"]["request"])
    assert comm.sent[-1]["op"] == op and comm.sent[-1]["args"] == args
    assert set(result) == set(SPEC["ops"][op]["result"])
    cells = result.get("cells") or ([result["cell"]] if "cell" in result else [])
    extra = SPEC["cell"]["read"] if op == "read_cells" else SPEC["cell"]["listed"]
    for c in cells:
        assert set(c) == {*SPEC["cell"]["keys"], *extra}


async def test_replies_and_refusals_carry_only_protocol_keys():
    p = panel()
    nb, _ = connected(p)
    with pytest.raises(bridge.BridgeError) as refused:
        await nb.request("delete_cell", timeout=5, cell_id="zz")
    assert refused.value.code == "not_found" and refused.value.code in SPEC["errors"]
    ok = p.answer({"protocol": PROTOCOL, "request_id": "r1", "op": "list_cells", "path": p.path, "args": {}})
    bad = p.answer({"protocol": PROTOCOL, "request_id": "r2", "op": "nope", "path": p.path, "args": {}})
    assert ok is not None and bad is not None
    assert set(ok) | set(bad) <= set(SPEC["messages"]["reply"])
    assert bad["code"] == "unknown_op" and bad["code"] in SPEC["errors"]
    assert set(p.hello()) == set(SPEC["messages"]["hello"])
    p.proposals["p1"] = {"proposal_id": "p1", "outcome": None}
    assert set(p.decision("reject", "no")) == set(SPEC["messages"]["decision"])


def test_the_connect_message_has_the_protocol_keys(monkeypatch):
    opened: list[dict[str, Any]] = []

    class Comm:
        def on_msg(self, _callback: Any) -> None:
            pass

    def create_comm(*, target_name: str, data: dict[str, Any]) -> Comm:
        assert target_name == TARGET
        opened.append(data)
        return Comm()

    monkeypatch.setattr("comm.create_comm", create_comm)
    bridge.NotebookBridge(session_name="demo.ipynb").probe()
    assert [set(d) for d in opened] == [set(SPEC["messages"]["connect"])]


def test_the_docs_list_the_protocol_ops():
    text = (ROOT / "docs" / "live-notebook.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^\| `([a-z_]+)` \|", text, flags=re.MULTILINE))
    assert documented == OPS
