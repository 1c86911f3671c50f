"""A tool call's input as the model wrote it, checked against the tool's pydantic model.

Parsed once per call, when the executor receives the tool_use block (it needs the safety flags
of the parsed input to schedule the call); the lifecycle then passes the parsed input along.
A failed parse becomes a message the model can act on: which parameter, what was expected, what
was given, and that unexpected parameters are reported rather than silently dropped.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from .tool import InputT, Tool

__all__ = ["dump_input", "format_validation_error", "parse_input"]


def _json_type(value: Any) -> str:
    match value:
        case bool():
            return "boolean"
        case int():
            return "integer"
        case float():
            return "number"
        case str():
            return "string"
        case list():
            return "array"
        case dict():
            return "object"
        case None:
            return "null"
    return type(value).__name__


def _expected_type(tool: Tool, field_name: str) -> str:
    props = tool.input_schema().get("properties", {})
    prop = props.get(field_name, {})
    if "type" in prop:
        return str(prop["type"])
    options = [o.get("type") for o in prop.get("anyOf", []) if o.get("type") and o.get("type") != "null"]
    return " or ".join(options) if options else "a valid value"


def format_validation_error(tool: Tool, err: ValidationError, raw: dict[str, Any]) -> str:
    lines: list[str] = []
    for e in err.errors():
        loc = ".".join(str(p) for p in e.get("loc", ())) or "(input)"
        top = str(e["loc"][0]) if e.get("loc") else ""
        kind = e.get("type", "")
        if kind == "missing":
            lines.append(f"The required parameter `{loc}` is missing.")
        elif kind == "extra_forbidden":
            lines.append(f"An unexpected parameter `{loc}` was provided.")
        elif kind.endswith("_type") or kind.endswith("_parsing"):
            got = _json_type(e.get("input"))
            expected = _expected_type(tool, top) if len(e.get("loc", ())) == 1 else kind.split("_")[0]
            lines.append(f"The parameter `{loc}` is expected as `{expected}` but was provided as `{got}`.")
        else:
            lines.append(f"The parameter `{loc}`: {e.get('msg', 'is invalid')}.")
    return (
        f"{tool.name} was called with invalid input:\n- "
        + "\n- ".join(lines)
        + "\nFix the input to match the tool's schema and call it again."
    )


def _allowed_keys(model: type[BaseModel]) -> set[str] | None:
    if model.model_config.get("extra") == "allow":
        return None
    keys: set[str] = set()
    for name, f in model.model_fields.items():
        keys.add(name)
        if f.alias:
            keys.add(f.alias)
        if isinstance(f.validation_alias, str):
            keys.add(f.validation_alias)
    return keys


def parse_input(tool: Tool[InputT, Any], raw: Any) -> InputT | str:
    """The parsed input, or the message for the model (unexpected keys are reported too)."""
    if not isinstance(raw, dict):
        return f"{tool.name} input must be a JSON object with the tool's parameters, not {_json_type(raw)}."
    allowed = _allowed_keys(tool.input_model)
    extra = sorted(set(raw) - allowed) if allowed is not None else []
    try:
        parsed = tool.input_model.model_validate(raw)
    except ValidationError as e:
        msg = format_validation_error(tool, e, raw)
        if extra and "unexpected parameter" not in msg:
            msg = msg.replace(
                "\n- ", "\n- " + "".join(f"An unexpected parameter `{k}` was provided.\n- " for k in extra), 1
            )
        return msg
    if extra:
        lines = "".join(f"\n- An unexpected parameter `{k}` was provided." for k in extra)
        return f"{tool.name} was called with invalid input:{lines}\nFix the input to match the tool's schema and call it again."
    return parsed


def dump_input(inp: BaseModel) -> dict[str, Any]:
    """The parsed input as JSON, the way hooks, prompts and the trace show it."""
    return inp.model_dump(mode="json", by_alias=True, exclude_unset=False)
