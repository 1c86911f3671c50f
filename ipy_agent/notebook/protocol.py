"""The live-notebook protocol, as `protocol.json` next to this module defines it.

That file is the protocol's one definition: its version, the comm target, a JSON Schema for each
message and for each op's arguments and result, and the error codes. The JupyterLab extension
(`labextension/src/handler.ts`) imports the same file when it is built, and this module reads it
at import time, so both sides speak one version without either copying the other. The types
both sides use are generated from it (`protocol_gen.py` writes `protocol_types.py` and
`labextension/src/protocol.ts`).

`problem(value, schema)` checks a value against one of the file's schemas: the bridge checks
each reply with it, so a page that answers out of protocol is reported as such, not found out
later by a `KeyError` in a tool. It knows the parts of JSON Schema the file uses (`type`,
`const`, `enum`, `properties`, `required`, `additionalProperties`, `unevaluatedProperties` over
`allOf`, `oneOf`, `items`, `minItems`, `minLength`, `pattern`, local `$ref`), and stops at the
first problem; the tests check the file against a full validator.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TypedDict

__all__ = [
    "DECISIONS",
    "EXTENSION_PACKAGE",
    "OPS",
    "OUTCOMES",
    "PROTOCOL",
    "SPEC",
    "TARGET",
    "Schema",
    "extension_version",
    "problem",
    "reply_problem",
]

# A JSON Schema, as the file has them: JSON values all the way down.
Schema = Mapping[str, object]


class OpSpec(TypedDict):
    args: dict[str, object]  # the JSON Schema of the op's `args`
    result: dict[str, object]  # ... and of its `result`


class Spec(TypedDict):
    version: int
    target: str
    messages: dict[str, dict[str, object]]  # message name -> its JSON Schema
    ops: dict[str, OpSpec]
    errors: dict[str, str]  # error code -> what it means
    # The shared schemas the others refer to (`{"$ref": "#/$defs/ListedCell"}`).
    defs: dict[str, dict[str, object]]


def _load() -> Spec:
    raw = json.loads(Path(__file__).with_name("protocol.json").read_text(encoding="utf-8"))
    return {
        "version": raw["version"],
        "target": raw["target"],
        "messages": raw["messages"],
        "ops": raw["ops"],
        "errors": raw["errors"],
        "defs": raw["$defs"],
    }


def _strs(value: object) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


SPEC: Spec = _load()
PROTOCOL: int = SPEC["version"]
TARGET: str = SPEC["target"]
OPS: frozenset[str] = frozenset(SPEC["ops"])
DECISIONS: tuple[str, ...] = tuple(_strs(SPEC["defs"]["Decision"]["enum"]))  # what the page may answer to a proposal
OUTCOMES: tuple[str, ...] = tuple(_strs(SPEC["defs"]["Outcome"]["enum"]))  # how a proposal ended

# Where the built extension ships in the package (`jlpm build` writes it; git ignores it): its
# `package.json` says the extension's version, the one `labextension/package.json` gives.
EXTENSION_PACKAGE = Path(__file__).resolve().parent.parent / "labextension" / "package.json"


def extension_version() -> str | None:
    """The version of the JupyterLab extension installed with this package, from its built
    `package.json`; None when the extension was not built (no Node.js at install)."""
    try:
        version = json.loads(EXTENSION_PACKAGE.read_text(encoding="utf-8")).get("version")
    except (OSError, ValueError):
        return None
    return version if isinstance(version, str) else None


# --- checking values against the schemas ------------------------------------------------------
_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}


def _is(value: object, name: str) -> bool:
    if isinstance(value, bool) and name in ("integer", "number"):
        return False  # JSON's true is not a number, though Python's is an int
    return isinstance(value, _TYPES[name])


def _resolve(schema: Schema) -> Schema:
    ref = schema.get("$ref")
    if isinstance(ref, str):
        return SPEC["defs"][ref.removeprefix("#/$defs/")]
    return schema


def _known_keys(schema: Schema) -> set[str]:
    """The property names a schema and the schemas of its `allOf` define."""
    schema = _resolve(schema)
    keys = set(_dict(schema.get("properties")))
    for part in _list(schema.get("allOf")):
        keys |= _known_keys(part)
    return keys


def _dict(value: object) -> Mapping[str, object]:
    return value if isinstance(value, Mapping) else {}


def _list(value: object) -> list[Schema]:
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def problem(value: object, schema: Schema, where: str = "") -> str | None:
    """What in `value` the JSON Schema `schema` does not allow (the first thing found, with where
    it is), or None when it conforms."""
    schema = _resolve(schema)
    here = where or "the value"
    if "const" in schema and (value != schema["const"] or type(value) is not type(schema["const"])):
        return f"{here} is {json.dumps(value)}, not {json.dumps(schema['const'])}"
    enum = schema.get("enum")
    if isinstance(enum, list) and value not in enum:
        return f"{here} is {json.dumps(value)}, not one of {', '.join(map(json.dumps, enum))}"
    kinds = schema.get("type")
    names = [kinds] if isinstance(kinds, str) else kinds if isinstance(kinds, list) else []
    if names and not any(_is(value, str(n)) for n in names):
        return f"{here} is {type(value).__name__} {_short(value)}, not {' or '.join(map(str, names))}"
    for part in _list(schema.get("allOf")):
        found = problem(value, part, where)
        if found:
            return found
    choices = _list(schema.get("oneOf"))
    if choices and all(problem(value, c, where) for c in choices):
        return next(p for c in choices if (p := problem(value, c, where)))
    if isinstance(value, str):
        return _string_problem(value, schema, here)
    if isinstance(value, list):
        return _array_problem(value, schema, where, here)
    if isinstance(value, dict):
        return _object_problem(value, schema, where, here)
    return None


def _short(value: object) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def _string_problem(value: str, schema: Schema, here: str) -> str | None:
    least = schema.get("minLength")
    if isinstance(least, int) and len(value) < least:
        return f"{here} is empty" if least == 1 else f"{here} is shorter than {least}"
    pattern = schema.get("pattern")
    if isinstance(pattern, str) and not re.search(pattern, value):
        return f"{here} {json.dumps(value)} does not match {pattern}"
    return None


def _array_problem(value: list[object], schema: Schema, where: str, here: str) -> str | None:
    least = schema.get("minItems")
    if isinstance(least, int) and len(value) < least:
        return f"{here} has {len(value)} items, fewer than {least}"
    items = schema.get("items")
    if isinstance(items, Mapping):
        for i, item in enumerate(value):
            found = problem(item, items, f"{where}[{i}]")
            if found:
                return found
    return None


def _object_problem(value: dict[str, object], schema: Schema, where: str, here: str) -> str | None:
    for key in _strs(schema.get("required")):
        if key not in value:
            return f"{here} has no {key!r}"
    properties = _dict(schema.get("properties"))
    extra = schema.get("additionalProperties")
    closed = extra is False or schema.get("unevaluatedProperties") is False
    allowed = _known_keys(schema) if closed else set()
    for key, item in value.items():
        sub = f"{where}.{key}" if where else key
        if key in properties:
            found = problem(item, _dict(properties[key]), sub)
        elif isinstance(extra, Mapping):
            found = problem(item, extra, sub)
        elif closed and key not in allowed:
            found = f"{here} has {key!r}, which the protocol does not define there"
        else:
            found = None
        if found:
            return found
    return None


def reply_problem(op: str, reply: object) -> str | None:
    """What is wrong with a page's reply to a request for `op` (its envelope, then its result
    against the op's schema), or None when it is as the protocol says."""
    if not isinstance(reply, dict):
        return f"the reply is {type(reply).__name__}, not an object"
    ok = reply.get("ok") is True  # the envelope the reply is checked against: a result, or an error
    found = problem(reply, SPEC["defs"]["ReplyOk" if ok else "ReplyError"], "reply")
    if found or not ok or op not in SPEC["ops"]:
        return found
    return problem(reply["result"], SPEC["ops"][op]["result"], "result")
