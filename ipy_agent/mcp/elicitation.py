"""A server's request for input (elicitation, form mode): the question, the answer, and its checks.

The server sends a message and a flat JSON Schema (strings, numbers, integers, booleans, enums,
arrays of enum strings); the agent's approver receives an `ElicitationRequest` and answers
`{"action": "accept", "content": {...}}`, `"decline"` or `"cancel"`. Fields left out take the
schema's defaults; content that still does not match the schema is declined, never sent. An
approver that cannot ask anyone (`interactive = False`) is not called: the request is declined at
once, with the reason. URL mode is declined (this client does not open links for a server).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, cast

from ipy_agent.base.secrets import is_secret_name, redact
from ipy_agent.history.blocks import JsonObject, JsonValue

__all__ = [
    "ElicitationAnswer",
    "ElicitationRequest",
    "choices",
    "field_kind",
    "normalize_elicitation",
    "problems",
    "record_text",
    "with_defaults",
]

Action = Literal["accept", "decline", "cancel"]
FieldKind = Literal["string", "number", "integer", "boolean", "enum", "multi"]


@dataclass(frozen=True, kw_only=True)
class ElicitationRequest:
    """What an approver is asked when an MCP server wants input from the person."""

    server: str
    message: str
    schema: JsonObject
    id: str = ""  # unique within the agent's session: where the form is shown

    @property
    def tool_use_id(self) -> str:
        """The prompt's key in a run view (as a call's tool_use id keys its approval prompt)."""
        return self.id

    @property
    def fields(self) -> dict[str, JsonObject]:
        props = self.schema.get("properties")
        return {str(k): v for k, v in props.items() if isinstance(v, dict)} if isinstance(props, dict) else {}

    @property
    def required(self) -> tuple[str, ...]:
        req = self.schema.get("required")
        return tuple(str(r) for r in req) if isinstance(req, list) else ()


@dataclass(frozen=True, kw_only=True)
class ElicitationAnswer:
    action: Action
    content: JsonObject = field(default_factory=dict)
    note: str = ""  # why, when no person answered (non-interactive, invalid content)


def field_kind(spec: Mapping[str, object]) -> FieldKind:
    """How a field of the form is asked: from its JSON Schema type and enum keywords."""
    if spec.get("type") == "array":
        return "multi"
    if "enum" in spec or "oneOf" in spec or "anyOf" in spec:
        return "enum"
    kind = spec.get("type")
    if kind == "number" or kind == "integer" or kind == "boolean":
        return kind
    return "string"


def choices(spec: Mapping[str, object]) -> list[tuple[str, str]]:
    """(label, value) of an enum field, single or multi-select, titled or not."""
    source = spec.get("items") if spec.get("type") == "array" else spec
    if not isinstance(source, Mapping):
        return []
    for key in ("oneOf", "anyOf"):
        options = source.get(key)
        if isinstance(options, list):
            return [
                (str(o.get("title", o.get("const"))), str(o.get("const")))
                for o in options
                if isinstance(o, dict) and "const" in o
            ]
    values = source.get("enum")
    names = source.get("enumNames")
    if not isinstance(values, list):
        return []
    labels = names if isinstance(names, list) and len(names) == len(values) else values
    return [(str(lbl), str(v)) for lbl, v in zip(labels, values, strict=True)]


def with_defaults(request: ElicitationRequest, content: Mapping[str, JsonValue]) -> JsonObject:
    """`content`, with every field the person left out set to the schema's default when it has one."""
    out: JsonObject = {k: v for k, v in content.items() if v is not None}
    for name, spec in request.fields.items():
        if name not in out and "default" in spec:
            out[name] = spec["default"]
    return out


def problems(request: ElicitationRequest, content: JsonObject) -> list[str]:
    from jsonschema.validators import validator_for

    schema = {"type": "object", **request.schema}
    try:
        validator = validator_for(schema)(schema)
        return [e.message for e in validator.iter_errors(content)][:5]
    except Exception as e:  # a schema the validator cannot use: the answer is not checked against it
        return [f"the server's schema cannot be checked ({type(e).__name__})"]


def normalize_elicitation(request: ElicitationRequest, answer: object) -> ElicitationAnswer:
    """An approver's answer as accept (defaults filled, checked), decline or cancel.

    Accepted: `{"action": ..., "content": {...}}`, `"accept"` / `"decline"` / `"cancel"`, and an
    approver's permission answers (`"allow"` / True accept the defaults; `"deny"` / False decline;
    None cancels)."""
    action: str
    content: Mapping[str, JsonValue] = {}
    if isinstance(answer, ElicitationAnswer):
        return answer
    if isinstance(answer, Mapping):
        action = str(answer.get("action", "accept"))
        raw = answer.get("content") or {}
        if not isinstance(raw, Mapping):
            return ElicitationAnswer(action="decline", note="the answer's content was not an object")
        content = cast(Mapping[str, JsonValue], raw)  # JSON from the approver; checked against the schema below
    elif answer is None:
        action = "cancel"
    elif answer is True or answer in ("allow", "always"):
        action = "accept"
    elif answer is False or answer == "deny":
        action = "decline"
    elif isinstance(answer, str):
        action = answer
    else:
        behavior = getattr(answer, "behavior", None)  # a PermissionAnswer
        action = "accept" if behavior in ("allow", "always") else "decline"
    if action not in ("accept", "decline", "cancel"):
        raise ValueError(f"an elicitation answer's action must be 'accept', 'decline' or 'cancel', not {action!r}")
    if action != "accept":
        return ElicitationAnswer(action=action)  # type: ignore[arg-type]
    filled = with_defaults(request, content)
    wrong = problems(request, filled)
    if wrong:
        return ElicitationAnswer(
            action="decline", note="the answer did not match the server's form, so it was not sent: " + "; ".join(wrong)
        )
    return ElicitationAnswer(action="accept", content=filled)


def _shown(request: ElicitationRequest, content: JsonObject) -> JsonObject:
    """The content as the record keeps it: secret-looking fields and password fields masked."""
    out: JsonObject = {}
    for name, value in content.items():
        spec = request.fields.get(name, {})
        secret = is_secret_name(name) or spec.get("format") == "password" or spec.get("writeOnly") is True
        out[name] = "***" if secret else value
    return out


def record_text(request: ElicitationRequest, answer: ElicitationAnswer) -> str:
    """One line for the run's record: the server's question and the answer, secrets redacted."""
    said = {"accept": "answered", "decline": "declined", "cancel": "cancelled"}[answer.action]
    text = f"MCP server {request.server!r} asked: {request.message.strip()[:500]!r}; {said}"
    if answer.action == "accept":
        text += " with " + json.dumps(_shown(request, answer.content), ensure_ascii=False)[:1000]
    if answer.note:
        text += f" ({answer.note})"
    return redact(text)
