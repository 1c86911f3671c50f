"""An MCP server's tool as a `Tool`: the same contract, rules and lifecycle as a built-in one.

Named `mcp__<server>__<tool>`; whole-tool rules on `mcp__<server>` cover every tool of the
server (`rule_groups`). The input schema goes to the model as the server gave it, and input
is checked against it before anything is sent (a clear message, no round trip). Annotations
are the server's claims, taken as such once the server is trusted: `readOnlyHint` makes a tool
read-only and concurrency-safe (it runs without a prompt, beside others), `destructiveHint`
puts the destructive warning in the approval prompt; without annotations the fail-closed
defaults hold (it asks, and runs alone).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import BaseModel, ConfigDict

from ipy_agent.contract.decision import UNDECIDED, CallDecision
from ipy_agent.contract.tool import Tool, ToolError, text_of
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.history.blocks import JsonObject, ToolResultBlock

from .connection import CallFailed, CallOutcome, ServerDown, ToolInfo
from .results import result_blocks

__all__ = ["MAX_DESCRIPTION", "McpTool", "schema_problem", "tool_name"]

MAX_DESCRIPTION = 2048
MAX_NAME = 64  # the Messages API's limit for a tool name
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")

Invoke = Callable[[str, str, JsonObject], Awaitable[CallOutcome]]


class McpInput(BaseModel):
    """Any JSON object: the server's schema, not a pydantic model, says what is valid."""

    model_config = ConfigDict(extra="allow")


def tool_name(server: str, tool: str) -> str:
    """`mcp__<server>__<tool>`, with characters the API rejects replaced; a name over 64
    characters is cut and given a short hash of the original, so two long names stay apart."""
    name = f"mcp__{server}__{_UNSAFE.sub('_', tool)}"
    if len(name) <= MAX_NAME:
        return name
    digest = hashlib.sha256(tool.encode()).hexdigest()[:8]
    return f"{name[: MAX_NAME - 9]}_{digest}"


def schema_problem(schema: Any) -> str | None:
    """Why a server's input schema cannot be offered to the model, or None."""
    from jsonschema.exceptions import SchemaError
    from jsonschema.validators import validator_for

    if not isinstance(schema, dict):
        return f"its input schema is not a JSON object ({type(schema).__name__})"
    if schema.get("type", "object") != "object":
        return f"its input schema has type {schema.get('type')!r}; tool input must be an object"
    try:
        validator_for(schema).check_schema(schema)
    except SchemaError as e:
        return f"its input schema is not valid JSON Schema ({e.message})"
    return None


class McpTool(Tool[McpInput, CallOutcome]):
    input_model = McpInput

    def __init__(self, *, server: str, origin: str, info: ToolInfo, invoke: Invoke) -> None:
        from jsonschema.validators import validator_for

        self.server = server
        self.remote_name = info.name
        self.info = info
        self.name = tool_name(server, info.name)
        self.rule_groups = (f"mcp__{server}",)
        self.origin = f"MCP server {server} ({origin})"
        self.user_facing_name = f"{server}: {info.annotations.get('title') or info.name}"
        self._invoke = invoke
        self._schema = {"type": "object", **info.input_schema}
        self._validator = validator_for(self._schema)(self._schema)
        notes = info.annotations
        self._ro = notes.get("readOnlyHint") is True
        # Claude Code reads destructiveHint as false when absent; so do we (the prompt asks anyway).
        self._destroys = notes.get("destructiveHint") is True and not self._ro
        self.kind = "read" if self._ro else "other"

    # --- model-facing --------------------------------------------------------------------
    def description(self, ctx: ToolContext) -> str:
        text = self.info.description.strip() or f"The tool {self.remote_name!r} of the MCP server {self.server!r}."
        if len(text) > MAX_DESCRIPTION:
            text = text[: MAX_DESCRIPTION - 1] + "…"
        return text

    def input_schema(self) -> JsonObject:
        return self._schema

    # --- runtime control -----------------------------------------------------------------
    def _read_only(self, inp: McpInput) -> bool:
        return self._ro

    def _concurrency_safe(self, inp: McpInput) -> bool:
        return self._ro

    def _destructive(self, inp: McpInput) -> bool:
        return self._destroys

    async def validate_input(self, inp: McpInput, ctx: ToolContext) -> str | None:
        args = _arguments(inp)
        errors = sorted(self._validator.iter_errors(args), key=lambda e: [str(p) for p in e.absolute_path])
        if not errors:
            return None
        lines = []
        for e in errors[:10]:
            where = ".".join(str(p) for p in e.absolute_path)
            lines.append(f"`{where}`: {e.message}" if where else e.message)
        return (
            f"{self.name} was called with input that does not match its schema:\n- "
            + "\n- ".join(lines)
            + "\nFix the input to match the tool's schema and call it again."
        )

    # --- execution and results -----------------------------------------------------------
    async def call(self, inp: McpInput, ctx: ToolContext, decision: CallDecision = UNDECIDED) -> CallOutcome:
        try:
            return await self._invoke(self.server, self.remote_name, _arguments(inp))
        except ServerDown as e:
            raise ToolError(
                f"The MCP server {self.server!r} is down: it {e}\nThe call to {self.remote_name!r} did not complete "
                "(assume it had no effect unless you can check). The server is started again the next time one "
                "of its tools is called; if it keeps failing, go on without it."
            ) from None
        except CallFailed as e:
            raise ToolError(f"The MCP tool {self.remote_name!r} of server {self.server!r} failed: {e}") from None

    def map_result(self, output: CallOutcome, tool_use_id: str) -> ToolResultBlock:
        if not isinstance(output, CallOutcome):
            return super().map_result(output, tool_use_id)
        block: ToolResultBlock = {"type": "tool_result", "tool_use_id": tool_use_id, "content": result_blocks(output)}
        if output.is_error:
            block["is_error"] = True
        return block

    def summarize_result(self, output: CallOutcome) -> str:
        if not isinstance(output, CallOutcome):
            return super().summarize_result(output)
        if output.is_error:
            first = next((str(c.get("text", "")) for c in output.content if c.get("type") == "text"), "")
            return "error: " + (first.strip().splitlines() or ["(no details)"])[0][:100]
        kinds = [str(c.get("type")) for c in output.content]
        images = kinds.count("image")
        text = "\n".join(str(c.get("text", "")) for c in output.content if c.get("type") == "text")
        if not text and output.structured is not None:
            text = text_of(output.structured)
        lines = text.count("\n") + 1 if text else 0
        parts = [f"{lines} line{'s' if lines != 1 else ''}"] if lines else []
        parts += [f"{images} image{'s' if images != 1 else ''}"] if images else []
        return ", ".join(parts) or "no output"


def _arguments(inp: Any) -> JsonObject:
    if isinstance(inp, BaseModel):
        return inp.model_dump(mode="json")
    return dict(inp) if isinstance(inp, dict) else {}
