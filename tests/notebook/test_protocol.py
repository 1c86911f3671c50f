"""The live-notebook protocol is defined once, in ipy_agent/notebook/protocol.json (JSON Schemas):
the kernel side, the fake front end of the kernel tests, the generated types and the docs all
speak what it says. Values are checked here with a full JSON Schema validator (`jsonschema`,
which nbformat brings), and the bridge's own light check is checked against it.

The extension's half is checked where it lives: labextension/src/handler.ts does not compile
unless its handlers are exactly the file's ops, typed by the generated labextension/src/protocol.ts,
and labextension/test/handler.test.ts checks its replies against the file (`jlpm test` in
labextension/, run by .ci/run).
"""

from __future__ import annotations

import ast
import asyncio
import copy
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import ipy_agent
from ipy_agent.notebook import bridge, protocol_gen
from ipy_agent.notebook.protocol import (
    EXTENSION_PACKAGE,
    OPS,
    PROTOCOL,
    SPEC,
    TARGET,
    extension_version,
    problem,
    reply_problem,
)
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


RAW = json.loads((PACKAGE / "notebook" / "protocol.json").read_text(encoding="utf-8"))


def schema(part: dict[str, Any]) -> dict[str, Any]:
    """One of the file's schemas, with the shared ones it refers to."""
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **part, "$defs": RAW["$defs"]}


def conforms(value: Any, part: dict[str, Any]) -> bool:
    return jsonschema.Draft202012Validator(schema(part)).is_valid(value)


def args_schema(op: str) -> dict[str, Any]:
    return RAW["ops"][op]["args"]  # type: ignore[no-any-return]


def result_keys(op: str) -> set[str]:
    result = RAW["ops"][op]["result"]
    result = RAW["$defs"][result["$ref"].removeprefix("#/$defs/")] if "$ref" in result else result
    return set(result["properties"])


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
    assert {"accept", "reject", "stale"} <= set(RAW["$defs"]["Decision"]["enum"])
    assert {"accepted", "rejected", "stale"} <= set(RAW["$defs"]["Outcome"]["enum"])
    for op, spec in SPEC["ops"].items():
        assert re.fullmatch(r"[a-z_]+", op), op
        assert set(spec) == {"args", "result"}, op
    assert {"not_found", "stale", "bad_request", "unknown_op", "not_ready", "version_mismatch"} <= set(SPEC["errors"])
    # The lists the request and reply messages name are the ops and the error codes.
    assert RAW["$defs"]["Op"]["enum"] == list(SPEC["ops"])
    assert RAW["$defs"]["ErrorCode"]["enum"] == list(SPEC["errors"])


def every_schema() -> list[tuple[str, dict[str, Any]]]:
    found = [(f"messages.{name}", s) for name, s in RAW["messages"].items()]
    found += [(f"ops.{op}.{part}", spec[part]) for op, spec in RAW["ops"].items() for part in ("args", "result")]
    return found + [(f"$defs.{name}", s) for name, s in RAW["$defs"].items()]


@pytest.mark.parametrize(("where", "part"), every_schema(), ids=[w for w, _ in every_schema()])
def test_every_schema_is_a_json_schema(where, part):
    jsonschema.Draft202012Validator.check_schema(schema(part))
    refs = re.findall(r'"\$ref": "#/\$defs/(\w+)"', json.dumps(part))
    assert set(refs) <= set(RAW["$defs"]), f"{where} refers to a schema the file does not define"
    if where.endswith((".args", ".result")) or where.startswith("messages."):
        # A request or result says what it holds: every key is named, or it refers to a schema that does.
        assert "$ref" in part or "oneOf" in part or part.get("additionalProperties") is False, where


def test_the_generated_types_are_what_the_schemas_give():
    """protocol_types.py and labextension/src/protocol.ts are written by protocol_gen; a change
    of protocol.json without running it fails here."""
    assert protocol_gen.main(["--check"]) == 0, "run `python -m ipy_agent.notebook.protocol_gen`"
    # The control: a schema changed without regenerating is caught.
    changed = copy.deepcopy(RAW)
    changed["ops"]["scroll_to"]["args"]["properties"]["smooth"] = {"type": "boolean"}
    assert protocol_gen.python_source(changed) != protocol_gen.PYTHON_OUT.read_text(encoding="utf-8")
    assert protocol_gen.typescript_source(changed) != protocol_gen.TYPESCRIPT_OUT.read_text(encoding="utf-8")
    assert "smooth: bool = ...," in protocol_gen.python_source(changed)
    assert "smooth?: boolean;" in protocol_gen.typescript_source(changed)


def test_the_bridge_uses_the_protocol_file():
    assert (bridge.PROTOCOL, bridge.TARGET) == (PROTOCOL, TARGET) == (SPEC["version"], SPEC["target"])


def sent_requests() -> list[tuple[str, str, set[str], bool]]:
    """Every `<x>.request("<op>", key=...)` and `<x>.post("<op>", ...)` in the package: (where, op,
    its keyword arguments, whether more come from a `**mapping`)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("request", "post")
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                keys = {k.arg for k in node.keywords if k.arg is not None}
                spread = any(k.arg is None for k in node.keywords)
                found.append((f"{path.relative_to(ROOT)}:{node.lineno}", node.args[0].value, keys, spread))
    return found


def test_every_op_the_kernel_sends_is_in_the_protocol_file_with_its_arguments():
    found = sent_requests()
    assert {op for _, op, _, _ in found} >= {"list_cells", "replace_source", "set_outputs"}, "the scan finds nothing"
    for where, op, keys, spread in found:
        assert op in OPS, f"{where} sends op {op!r}, which protocol.json does not define"
        unknown = keys - {"timeout"} - set(args_schema(op)["properties"])  # timeout is request()'s own
        assert not unknown, f"{where} sends {op!r} with {sorted(unknown)}, not among its args in protocol.json"
        missing = set(args_schema(op).get("required", [])) - keys
        assert spread or not missing, f"{where} sends {op!r} without {sorted(missing)}, which protocol.json requires"


def test_the_fake_front_end_handles_exactly_the_protocol_ops():
    handled = {name.removeprefix("op_") for name in vars(Panel) if name.startswith("op_")}
    assert handled == OPS
    assert set(SAMPLE_ARGS) == OPS


@pytest.mark.parametrize("op", sorted(OPS))
async def test_each_op_goes_through_the_bridge_with_the_protocol_keys(op):
    nb, comm = connected(panel())
    args = SAMPLE_ARGS[op]
    assert conforms(args, args_schema(op))
    result = await nb.request(op, timeout=5, **args)
    assert conforms(comm.sent[-1], RAW["messages"]["request"])
    assert comm.sent[-1]["op"] == op and comm.sent[-1]["args"] == args
    assert conforms(result, RAW["ops"][op]["result"])
    assert set(result) == result_keys(op)


async def test_replies_and_refusals_carry_only_protocol_keys():
    p = panel()
    nb, _ = connected(p)
    with pytest.raises(bridge.BridgeError) as refused:
        await nb.request("delete_cell", timeout=5, cell_id="zz")
    assert refused.value.code == "not_found" and refused.value.code in SPEC["errors"]
    ok = p.answer({"protocol": PROTOCOL, "request_id": "r1", "op": "list_cells", "path": p.path, "args": {}})
    bad = p.answer({"protocol": PROTOCOL, "request_id": "r2", "op": "nope", "path": p.path, "args": {}})
    assert ok is not None and bad is not None
    assert conforms(ok, RAW["messages"]["reply"]) and conforms(bad, RAW["messages"]["reply"])
    assert bad["code"] == "unknown_op" and bad["code"] in SPEC["errors"]
    assert conforms(p.hello(), RAW["messages"]["hello"])
    p.proposals["p1"] = {"proposal_id": "p1", "outcome": None}
    assert conforms(p.decision("reject", "no"), RAW["messages"]["decision"])
    assert not conforms(p.decision("maybe", "no"), RAW["messages"]["decision"])  # the control


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
    assert len(opened) == 1 and conforms(opened[0], RAW["messages"]["connect"])


def test_the_docs_list_the_protocol_ops():
    text = (ROOT / "docs" / "live-notebook.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^\| `([a-z_]+)` \|", text, flags=re.MULTILINE))
    assert documented == OPS


# --- a reply out of protocol ------------------------------------------------------------------
class Garbling(Panel):
    """A page whose `list_cells` reply is damaged by `garble` (a page of another version, say)."""

    garble: Any = None

    def op_list_cells(self, args: dict[str, Any]) -> dict[str, Any]:
        result = super().op_list_cells(args)
        return self.garble(result) if self.garble else result


def garbled(change: Any) -> Garbling:
    p = Garbling("work/demo.ipynb", [cell("x = 1", cell_id="a"), cell("# Title", "markdown", cell_id="b")])
    p.garble = change
    return p


async def test_a_well_formed_reply_is_taken_as_it_is():
    nb, _ = connected(garbled(None))
    cells = await nb.list_cells()
    assert [c["id"] for c in cells] == ["a", "b"]


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (lambda r: {k: v for k, v in r.items() if k != "cells"}, "result has no 'cells'"),
        (
            lambda r: {**r, "cells": [{k: v for k, v in r["cells"][0].items() if k != "tags"}]},
            "result.cells[0] has no 'tags'",
        ),
        (lambda r: {**r, "dirty": "yes"}, "result.dirty is str"),
        (lambda r: {**r, "cells": [{**r["cells"][0], "cell_type": "sql"}]}, 'result.cells[0].cell_type is "sql"'),
        (lambda r: {**r, "extra": 1}, "has 'extra', which the protocol does not define"),
    ],
    ids=["no cells", "a cell without tags", "a string for a boolean", "an unknown cell type", "an unknown key"],
)
async def test_a_malformed_reply_is_a_clear_error_not_a_key_error(change, said):
    nb, _ = connected(garbled(change))
    with pytest.raises(bridge.BridgeError) as caught:
        await nb.list_cells()
    assert caught.value.code == "bad_reply"
    message = str(caught.value)
    assert said in message
    assert "'list_cells' out of protocol 1" in message and "ipy-agent-notebook test" in message


async def test_an_error_reply_keeps_its_code():
    nb, _ = connected(panel())
    with pytest.raises(bridge.BridgeError) as caught:
        await nb.request("scroll_to", timeout=5, cell_id="zz")
    assert caught.value.code == "not_found" and "no cell with id" in str(caught.value)


def samples() -> list[tuple[str, Any, dict[str, Any]]]:
    """Values, good and bad, for the bridge's own check to judge as the full validator does."""
    listed = panel().summary(0, False)
    read = {**panel().summary(0, True), "outputs": [{"output_type": "stream", "name": "stdout", "text": ["a", "b"]}]}
    found: list[tuple[str, Any, dict[str, Any]]] = [
        ("listed cell", listed, RAW["$defs"]["ListedCell"]),
        ("read cell as listed", read, RAW["$defs"]["ListedCell"]),
        ("read cell", read, RAW["$defs"]["ReadCell"]),
        ("cell with a bool for an int", {**listed, "index": True}, RAW["$defs"]["ListedCell"]),
        ("output without a type", {"text": "x"}, RAW["$defs"]["Output"]),
        ("output with other keys", {"output_type": "stream", "transient": {}}, RAW["$defs"]["Output"]),
        ("prompt id with a space", {"prompt_id": "a b"}, args_schema("prompt_shown")),
        (
            "no questions",
            {"prompt_id": "p", "title": "", "detail": "", "rule": "", "questions": []},
            args_schema("ask_permission"),
        ),
        ("ok without a result", {"protocol": 1, "reply_to": "r", "ok": True}, RAW["messages"]["reply"]),
        ("ok with 1", {"protocol": 1, "reply_to": "r", "ok": 1, "result": {}}, RAW["messages"]["reply"]),
        (
            "error reply",
            {"protocol": 1, "reply_to": "r", "ok": False, "code": "stale", "error": "x"},
            RAW["messages"]["reply"],
        ),
        (
            "unknown error code",
            {"protocol": 1, "reply_to": "r", "ok": False, "code": "x", "error": "x"},
            RAW["messages"]["reply"],
        ),
        (
            "answers",
            {"behavior": "allow", "message": "", "answers": {"q": "a"}},
            RAW["ops"]["ask_permission"]["result"],
        ),
        (
            "answers not text",
            {"behavior": "allow", "message": "", "answers": {"q": 1}},
            RAW["ops"]["ask_permission"]["result"],
        ),
    ]
    found += [(f"{op} sample", args, args_schema(op)) for op, args in SAMPLE_ARGS.items()]
    return found


@pytest.mark.parametrize(("what", "value", "part"), samples(), ids=[w for w, _, _ in samples()])
def test_the_bridges_check_agrees_with_a_full_validator(what, value, part):
    assert (problem(value, part) is None) == conforms(value, part), what


def test_reply_problem_names_the_op_result():
    good = {"protocol": 1, "reply_to": "r", "ok": True, "result": {"index": 2}}
    assert reply_problem("scroll_to", good) is None
    assert reply_problem("scroll_to", {**good, "result": {"index": "2"}}) == 'result.index is str "2", not integer'
    assert reply_problem("scroll_to", "no") == "the reply is str, not an object"


# --- the extension's version ------------------------------------------------------------------
def test_the_extension_version_comes_from_its_package_json():
    source = json.loads((ROOT / "labextension" / "package.json").read_text(encoding="utf-8"))["version"]
    assert source == ipy_agent.__version__, "labextension/package.json and ipy_agent/__init__.py name one release"
    handler = (ROOT / "labextension" / "src" / "handler.ts").read_text(encoding="utf-8")
    assert not re.search(r"VERSION\s*=\s*['\"]\d", handler), "handler.ts reads the version from package.json"
    if EXTENSION_PACKAGE.exists():  # built (`jlpm build`, or pip install with Node.js)
        assert extension_version() == source
    else:
        assert extension_version() is None
