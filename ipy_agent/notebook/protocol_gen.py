"""Write the protocol's types, Python and TypeScript, from the JSON Schemas in `protocol.json`.

`python -m ipy_agent.notebook.protocol_gen` (from a checkout) writes two files, both checked in:

- `ipy_agent/notebook/protocol_types.py`: a TypedDict (or a `Literal`) per shared schema, per
  message and per op's arguments and result, the enums' values as tuples, and `PageRequests`,
  the typed front of `NotebookBridge.request` (one overload per op: its keyword arguments and
  its result type);
- `labextension/src/protocol.ts`: the same types for the extension, with `OpArgs` and
  `OpResults` (op -> type), which `handler.ts` types its handlers with.

`--check` writes nothing and fails when either file is not what the schemas give
(tests/notebook/test_protocol.py runs it). The generator knows the parts of JSON Schema the file
uses, and fails on anything else rather than guessing a type.
"""

from __future__ import annotations

import json
import keyword
import re
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

__all__ = ["PYTHON_OUT", "SCHEMA", "TYPESCRIPT_OUT", "generated", "main"]

HERE = Path(__file__).resolve().parent
SCHEMA = HERE / "protocol.json"
PYTHON_OUT = HERE / "protocol_types.py"
TYPESCRIPT_OUT = HERE.parent.parent / "labextension" / "src" / "protocol.ts"
WIDTH = 120  # ruff's and prettier's line length

Schema = Mapping[str, object]
_SCALARS_PY = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}
_SCALARS_TS = {"string": "string", "integer": "number", "number": "number", "boolean": "boolean", "null": "null"}
_MESSAGE_NAMES = {"reply": "ReplyMessage"}


class SchemaError(Exception):
    """A schema the generator cannot turn into a type."""


def _camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[_-]", name))


def _plural(name: str) -> str:
    """`CellType` -> `CELL_TYPES`: the constant that holds an enum's values."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper() + "S"


def _message_name(name: str) -> str:
    return _MESSAGE_NAMES.get(name, _camel(name) + "Message")


def _dict(value: object) -> Mapping[str, object]:
    if not isinstance(value, Mapping):
        raise SchemaError(f"expected a schema object, not {value!r}")
    return value


def _strs(value: object) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def _ref_name(schema: Schema) -> str | None:
    ref = schema.get("$ref")
    return str(ref).removeprefix("#/$defs/") if isinstance(ref, str) else None


def _types(schema: Schema) -> list[str]:
    kinds = schema.get("type")
    return [kinds] if isinstance(kinds, str) else _strs(kinds)


def _description(schema: Schema) -> str:
    text = schema.get("description")
    return str(text) if isinstance(text, str) else ""


def _is_object(schema: Schema) -> bool:
    return "properties" in schema or "allOf" in schema


# --- Python ---------------------------------------------------------------------------------
def _py_literal(value: object) -> str:
    return repr(value) if isinstance(value, bool) else json.dumps(value)


def _py_type(schema: Schema) -> str:
    ref = _ref_name(schema)
    if ref:
        return ref
    if "const" in schema:
        return f"Literal[{_py_literal(schema['const'])}]"
    if "enum" in schema:
        return f"Literal[{', '.join(_py_literal(v) for v in _list(schema['enum']))}]"
    if "oneOf" in schema:
        return " | ".join(_py_type(_dict(c)) for c in _list(schema["oneOf"]))
    kinds = _types(schema)
    if not kinds:
        raise SchemaError(f"no type in {schema!r}")
    return " | ".join(_py_kind(k, schema) for k in kinds)


def _py_kind(kind: str, schema: Schema) -> str:
    if kind in _SCALARS_PY:
        return _SCALARS_PY[kind]
    if kind == "array":
        items = schema.get("items")
        return f"list[{_py_type(_dict(items))}]" if items is not None else "list[object]"
    if kind == "object":
        if "properties" in schema:
            raise SchemaError("an object with properties needs a name: put it under $defs")
        extra = schema.get("additionalProperties")
        return f"dict[str, {_py_type(_dict(extra))}]" if isinstance(extra, Mapping) else "dict[str, object]"
    raise SchemaError(f"unknown type {kind!r}")


def _list(value: object) -> list[object]:
    if not isinstance(value, list):
        raise SchemaError(f"expected a list, not {value!r}")
    return value


def _one_line_or_exploded(head: str, items: Sequence[str], tail: str, indent: str = "") -> list[str]:
    """`head a, b tail` on one line when it fits, else one item a line with a trailing comma
    (the layout ruff's formatter keeps)."""
    line = f"{indent}{head}{', '.join(items)}{tail}"
    if len(line) <= WIDTH:
        return [line]
    return [f"{indent}{head}", *(f"{indent}    {item}," for item in items), f"{indent}{tail}"]


def _py_typeddict(name: str, schema: Schema, base: str = "TypedDict") -> list[str]:
    bases = [b for part in _list(schema.get("allOf", [])) if (b := _ref_name(_dict(part)))]
    lines = [f"class {name}({', '.join(bases) or base}):"]
    doc = _description(schema)
    if doc:
        lines += [f'    """{doc}"""', ""]
    required = set(_strs(schema.get("required")))
    properties = _dict(schema.get("properties", {}))
    for key, value in properties.items():
        if not key.isidentifier() or keyword.iskeyword(key):
            raise SchemaError(f"{name}: {key!r} is not a Python name")
        sub = _dict(value)
        kind = _py_type(sub) if key in required else f"NotRequired[{_py_type(sub)}]"
        note = _description(sub)
        line = f"    {key}: {kind}"
        if note and len(line) + len(note) + 4 > WIDTH:
            lines.append(f"    # {note}")  # a trailing comment that long would make ruff wrap the line
        elif note:
            line += f"  # {note}"
        lines.append(line)
    if not properties and not doc:
        lines.append("    pass")
    return lines


def _py_def(name: str, schema: Schema) -> list[str]:
    doc = _description(schema)
    comment = [f"# {doc}"] if doc else []
    if "enum" in schema:
        values = [_py_literal(v) for v in _list(schema["enum"])]
        return [
            *comment,
            *_one_line_or_exploded(f"{name} = Literal[", values, "]"),
            *_one_line_or_exploded(f"{_plural(name)}: tuple[{name}, ...] = (", values, ")"),
        ]
    if _is_object(schema):
        return _py_typeddict(name, schema)
    return [*comment, f"{name} = {_py_type(schema)}"]


def _defs_in_order(defs: Mapping[str, object]) -> Iterator[tuple[str, Schema]]:
    """The shared schemas, each after those it names at run time (its base, an alias's target)."""
    done: set[str] = set()

    def needs(schema: Schema) -> set[str]:
        if _is_object(schema):
            return {b for part in _list(schema.get("allOf", [])) if (b := _ref_name(_dict(part)))}
        return set(re.findall(r'"#/\$defs/(\w+)"', json.dumps(schema)))

    def visit(name: str) -> Iterator[tuple[str, Schema]]:
        if name in done:
            return
        done.add(name)
        schema = _dict(defs[name])
        for other in sorted(needs(schema)):
            yield from visit(other)
        yield name, schema

    for name in defs:
        yield from visit(name)


def _py_request_overload(op: str, args: Schema) -> list[str]:
    required = set(_strs(args.get("required")))
    params = ["self", f'op: Literal["{op}"]', "timeout: float | None = ..."]
    keywords = [
        f"{key}: {_py_type(_dict(value))}" + ("" if key in required else " = ...")
        for key, value in _dict(args.get("properties", {})).items()
    ]
    if keywords:
        params += ["*", *keywords]
    return [
        "    @overload",
        "    async def request(",
        *(f"        {p}," for p in params),
        f"    ) -> {_camel(op)}Result: ...",
        "",
    ]


def python_source(spec: Mapping[str, object]) -> str:
    defs = _dict(spec["$defs"])
    ops = _dict(spec["ops"])
    out = [
        '"""The live-notebook protocol\'s types, generated from `protocol.json` by',
        "`python -m ipy_agent.notebook.protocol_gen`: do not edit; change the schemas and run it.",
        "",
        "A TypedDict (or a `Literal`) for each shared schema, message, and op's arguments and result;",
        "`PageRequests` types `NotebookBridge.request`: each op's keyword arguments and its result.",
        "TypedDicts are closed where the schema is; `Output` may carry other keys nbformat allows.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from abc import ABC, abstractmethod",
        "from collections.abc import Mapping",
        "from types import EllipsisType",
        "from typing import Literal, NotRequired, TypedDict, overload",
        "",
        f"PROTOCOL_VERSION = {json.dumps(spec['version'])}",
        f"TARGET = {json.dumps(spec['target'])}",
        "",
    ]
    blocks: list[list[str]] = []
    for name, schema in _defs_in_order(defs):
        blocks.append(_py_def(name, schema))
    for name, message in _dict(spec["messages"]).items():
        blocks.append(_py_def(_message_name(name), _dict(message)))
    for op, value in ops.items():
        entry = _dict(value)
        for part in ("args", "result"):
            schema = _dict(entry[part])
            type_name = f"{_camel(op)}{part.capitalize()}"
            ref = _ref_name(schema)
            blocks.append([f"{type_name} = {ref}"] if ref else _py_typeddict(type_name, schema))
    blocks.append(
        [
            "class PageRequests(ABC):",
            '    """Requests to the page, typed by the protocol: `request(op, timeout, **args)` takes the',
            "    op's arguments as keywords and returns its result. A subclass sends them (`send_request`),",
            "    and checks each reply against its schema before it returns it (the types rest on that).",
            "    A timeout of `...` is the subclass's default; None waits as long as the page takes.",
            '    """',
            "",
            *(line for op, value in ops.items() for line in _py_request_overload(op, _dict(_dict(value)["args"]))),
            "    async def request(",
            "        self,",
            "        op: str,",
            "        timeout: float | EllipsisType | None = ...,",
            "        **args: object,",
            "    ) -> Mapping[str, object]:",
            "        return await self.send_request(op, args, timeout)",
            "",
            "    @abstractmethod",
            "    async def send_request(",
            "        self,",
            "        op: str,",
            "        args: dict[str, object],",
            "        timeout: float | EllipsisType | None,",
            "    ) -> Mapping[str, object]:",
            '        """Send one op to the page; its result, checked against the op\'s schema."""',
        ]
    )
    body = _join_blocks(blocks, lambda block: block[0].startswith(("class ", "@")))
    return "\n".join(out) + "\n" + body


def _join_blocks(blocks: list[list[str]], spaced: Callable[[list[str]], bool]) -> str:
    """Blocks one after another: two blank lines around a class (ruff's layout), none between
    aliases."""
    text: list[str] = []
    previous_spaced = True
    for block in blocks:
        if text:
            text += ["", ""] if spaced(block) or previous_spaced else []
        text += block
        previous_spaced = spaced(block)
    return "\n".join(text) + "\n"


# --- TypeScript -----------------------------------------------------------------------------
def _ts_literal(value: object) -> str:
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return json.dumps(value)


def _ts_type(schema: Schema) -> str:
    ref = _ref_name(schema)
    if ref:
        return ref
    if "const" in schema:
        return _ts_literal(schema["const"])
    if "enum" in schema:
        return " | ".join(_ts_literal(v) for v in _list(schema["enum"]))
    if "oneOf" in schema:
        return " | ".join(_ts_type(_dict(c)) for c in _list(schema["oneOf"]))
    kinds = _types(schema)
    if not kinds:
        raise SchemaError(f"no type in {schema!r}")
    return " | ".join(_ts_kind(k, schema) for k in kinds)


def _ts_kind(kind: str, schema: Schema) -> str:
    if kind in _SCALARS_TS:
        return _SCALARS_TS[kind]
    if kind == "array":
        items = schema.get("items")
        item = _ts_type(_dict(items)) if items is not None else "unknown"
        return f"{item}[]" if re.fullmatch(r"\w+", item) else f"({item})[]"
    if kind == "object":
        if "properties" in schema:
            raise SchemaError("an object with properties needs a name: put it under $defs")
        extra = schema.get("additionalProperties")
        return f"{{ [key: string]: {_ts_type(_dict(extra)) if isinstance(extra, Mapping) else 'unknown'} }}"
    raise SchemaError(f"unknown type {kind!r}")


def _ts_doc(text: str, indent: str = "") -> list[str]:
    return [f"{indent}/** {text} */"] if text else []


def _ts_object(name: str, schema: Schema, *, bases_allowed: bool = True) -> list[str]:
    bases = [b for part in _list(schema.get("allOf", [])) if (b := _ref_name(_dict(part)))]
    properties = _dict(schema.get("properties", {}))
    required = set(_strs(schema.get("required")))
    head = f"export type {name} = {' & '.join(bases)}{' & ' if bases else ''}"
    if not properties:
        return [*_ts_doc(_description(schema)), f"{head}Record<string, never>;"]
    lines = [*_ts_doc(_description(schema)), head + "{"]
    for key, value in properties.items():
        sub = _dict(value)
        lines += _ts_doc(_description(sub), "  ")
        lines.append(f"  {key}{'' if key in required else '?'}: {_ts_type(sub)};")
    if "additionalProperties" not in schema and "unevaluatedProperties" not in schema and not bases_allowed:
        lines.append("  [key: string]: unknown;")
    lines.append("};")
    return lines


def _ts_union_alias(head: str, members: Sequence[str]) -> list[str]:
    """The layouts prettier picks: one line, the union on the next line, or one member a line."""
    line = f"{head}{' | '.join(members)};"
    if len(line) <= WIDTH:
        return [line]
    if len(f"  {' | '.join(members)};") <= WIDTH:
        return [head.rstrip(), f"  {' | '.join(members)};"]
    return [head.rstrip(), *(f"  | {m}" for m in members[:-1]), f"  | {members[-1]};"]


def _ts_array_const(head: str, members: Sequence[str]) -> list[str]:
    line = f"{head}[{', '.join(members)}];"
    if len(line) <= WIDTH:
        return [line]
    return [f"{head}[", *(f"  {m}," for m in members[:-1]), f"  {members[-1]}", "];"]


def _ts_def(name: str, schema: Schema, bases: set[str]) -> list[str]:
    doc = _ts_doc(_description(schema))
    if "enum" in schema:
        values = [_ts_literal(v) for v in _list(schema["enum"])]
        return [
            *doc,
            *_ts_union_alias(f"export type {name} = ", values),
            *_ts_array_const(f"export const {_plural(name)}: readonly {name}[] = ", values),
        ]
    if _is_object(schema):
        return _ts_object(name, schema, bases_allowed=name in bases)
    if "oneOf" in schema:
        return [*doc, *_ts_union_alias(f"export type {name} = ", [_ts_type(_dict(c)) for c in _list(schema["oneOf"])])]
    return [*doc, f"export type {name} = {_ts_type(schema)};"]


def typescript_source(spec: Mapping[str, object]) -> str:
    defs = _dict(spec["$defs"])
    ops = _dict(spec["ops"])
    bases = {b for s in defs.values() for part in _list(_dict(s).get("allOf", [])) if (b := _ref_name(_dict(part)))}
    blocks: list[list[str]] = [
        [
            "/**",
            " * The live-notebook protocol's types, generated from ipy_agent/notebook/protocol.json by",
            " * `python -m ipy_agent.notebook.protocol_gen`: do not edit; change the schemas and run it.",
            " *",
            " * A type for each shared schema, message, and op's arguments and result; `OpArgs` and",
            " * `OpResults` map each op to its own.",
            " */",
        ],
        [
            f"export const PROTOCOL = {json.dumps(spec['version'])};",
            f"export const TARGET = {_ts_literal(spec['target'])};",
        ],
    ]
    for name, schema in _defs_in_order(defs):
        blocks.append(_ts_def(name, schema, bases))
    for name, message in _dict(spec["messages"]).items():
        blocks.append(_ts_def(_message_name(name), _dict(message), bases))
    for op, value in ops.items():
        entry = _dict(value)
        for part in ("args", "result"):
            schema = _dict(entry[part])
            type_name = f"{_camel(op)}{part.capitalize()}"
            ref = _ref_name(schema)
            blocks.append([f"export type {type_name} = {ref};"] if ref else _ts_object(type_name, schema))
    for kind, doc in (("Args", "Each op's arguments, as the kernel sends them."), ("Result", "Each op's result.")):
        blocks.append(
            [
                f"/** {doc} */",
                f"export type Op{kind}{'s' if kind == 'Result' else ''} = {{",
                *(f"  {op}: {_camel(op)}{kind};" for op in ops),
                "};",
            ]
        )
    return "\n\n".join("\n".join(block) for block in blocks) + "\n"


# --- files ----------------------------------------------------------------------------------
def generated() -> dict[Path, str]:
    """Each generated file and what it should hold."""
    spec = json.loads(SCHEMA.read_text(encoding="utf-8"))
    return {PYTHON_OUT: python_source(spec), TYPESCRIPT_OUT: typescript_source(spec)}


def main(argv: Sequence[str] = ()) -> int:
    check = "--check" in argv
    stale = []
    for path, text in generated().items():
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == text:
            continue
        stale.append(path)
        if not check:
            path.write_text(text, encoding="utf-8")
    for path in stale:
        verb = "is out of date" if check else "written"
        print(f"{path}: {verb}", file=sys.stderr)
    if check and stale:
        print("Run `python -m ipy_agent.notebook.protocol_gen` and commit what it writes.", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
