"""The live-notebook protocol, as `protocol.json` next to this module defines it.

That file is the protocol's one definition: its version, the comm target, the keys of each
message, the ops with their arguments and results, and the error codes. The JupyterLab extension
(`labextension/src/handler.ts`) imports the same file when it is built, and this module reads it
at import time, so both sides speak one version without either copying the other.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TypedDict

__all__ = ["DECISIONS", "OPS", "OUTCOMES", "PROTOCOL", "SPEC", "TARGET"]


class OpSpec(TypedDict):
    args: list[str]  # the keys an op's `args` may have
    result: list[str]  # the keys of its `result`


class CellSpec(TypedDict):
    keys: list[str]  # every cell in a result has these
    listed: list[str]  # ... and these when listed (a summary of its outputs)
    read: list[str]  # ... or these when read (its outputs)


class Spec(TypedDict):
    version: int
    target: str
    messages: dict[str, list[str]]
    cell: CellSpec
    ops: dict[str, OpSpec]
    errors: dict[str, str]
    decisions: list[str]  # what the page may answer to a staged proposal (a `decision` message)
    outcomes: list[str]  # how a proposal ended, as `resolve_proposal` tells the page


SPEC: Spec = json.loads(Path(__file__).with_name("protocol.json").read_text(encoding="utf-8"))
PROTOCOL: int = SPEC["version"]
TARGET: str = SPEC["target"]
OPS: frozenset[str] = frozenset(SPEC["ops"])
DECISIONS: tuple[str, ...] = tuple(SPEC["decisions"])
OUTCOMES: tuple[str, ...] = tuple(SPEC["outcomes"])
