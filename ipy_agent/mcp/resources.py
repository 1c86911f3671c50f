"""MCP servers' resources as two read-only tools, with Claude Code's names.

`ListMcpResourcesTool` lists the resources and resource templates of every connected server
that has any (or of one, `server`); `ReadMcpResourceTool` reads one by its URI. They are offered
only while a connected server says it has resources. A resource's contents become tool_result
blocks as an MCP tool's embedded resources do (results.py): text as text, images checked as
Read checks them, other binary data named with its size; the result budgets apply as to any
tool. Whole-tool rules name them as any tool (`deny: ["ReadMcpResourceTool"]`).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

from pydantic import BaseModel, Field

from ipy_agent.contract.decision import UNDECIDED, CallDecision
from ipy_agent.contract.tool import Tool, ToolError
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.history.blocks import JsonObject, ResultPart, ToolResultBlock

from .connection import CallFailed, CallOutcome, ServerDown
from .results import result_blocks

__all__ = ["LIST_RESOURCES", "READ_RESOURCE", "ListResourcesTool", "ReadResourceTool", "resource_parts"]

SERVER_KEY = '"server":'
LIST_RESOURCES = "ListMcpResourcesTool"
READ_RESOURCE = "ReadMcpResourceTool"

# (server or None) -> {server: (resources, templates)}; (server, uri) -> contents
Lister = Callable[[str | None], Awaitable[dict[str, tuple[list[JsonObject], list[JsonObject]]]]]
Reader = Callable[[str, str], Awaitable[list[JsonObject]]]


class ListInput(BaseModel):
    server: str | None = Field(default=None, description="Only this server's resources (all servers when left out).")


class ReadInput(BaseModel):
    server: str = Field(description="The MCP server's name.")
    uri: str = Field(description="The resource's URI, as ListMcpResourcesTool gave it (or a template filled in).")


def _failed(server: str, e: Exception) -> ToolError:
    if isinstance(e, ServerDown):
        return ToolError(f"The MCP server {server!r} is down: it {e}")
    return ToolError(f"The MCP server {server!r} could not answer: {e}")


class ListResourcesTool(Tool[ListInput, str]):
    name = LIST_RESOURCES
    input_model = ListInput
    kind = "read"
    user_facing_name = "MCP resources"
    origin = "MCP servers"

    def __init__(self, lister: Lister) -> None:
        self._lister = lister

    def description(self, ctx: ToolContext) -> str:
        return (
            "List the resources (files, records, documents) that connected MCP servers offer, and their "
            "resource templates (URIs with {placeholders} you fill in). Read one with ReadMcpResourceTool."
        )

    def _read_only(self, inp: ListInput) -> bool:
        return True

    def _concurrency_safe(self, inp: ListInput) -> bool:
        return True

    async def call(self, inp: ListInput, ctx: ToolContext, decision: CallDecision = UNDECIDED) -> str:
        try:
            found = await self._lister(inp.server)
        except (ServerDown, CallFailed) as e:
            raise _failed(inp.server or "?", e) from None
        except KeyError:
            raise ToolError(f"No connected MCP server named {inp.server!r} has resources.") from None
        listing: list[JsonObject] = []
        for server, (resources, templates) in found.items():
            listing += [{"server": server, **r} for r in resources]
            listing += [{"server": server, **t} for t in templates]
        if not listing:
            return "No resources found."
        return json.dumps(listing, indent=1, ensure_ascii=False)

    def summarize_result(self, output: str) -> str:
        if output.startswith("No resources"):
            return "none"
        return f"{output.count(SERVER_KEY)} resources"


class ReadResourceTool(Tool[ReadInput, CallOutcome]):
    name = READ_RESOURCE
    input_model = ReadInput
    kind = "read"
    user_facing_name = "Read MCP resource"
    origin = "MCP servers"

    def __init__(self, reader: Reader) -> None:
        self._reader = reader

    def description(self, ctx: ToolContext) -> str:
        return "Read one resource of an MCP server by its URI (see ListMcpResourcesTool)."

    def _read_only(self, inp: ReadInput) -> bool:
        return True

    def _concurrency_safe(self, inp: ReadInput) -> bool:
        return True

    def summarize_use(self, inp: ReadInput) -> str:
        return f"{inp.server}: {inp.uri}"

    async def call(self, inp: ReadInput, ctx: ToolContext, decision: CallDecision = UNDECIDED) -> CallOutcome:
        try:
            contents = await self._reader(inp.server, inp.uri)
        except (ServerDown, CallFailed) as e:
            raise _failed(inp.server, e) from None
        except KeyError:
            raise ToolError(f"No connected MCP server named {inp.server!r} has resources.") from None
        return CallOutcome(content=[{"type": "resource", "resource": c} for c in contents])

    def map_result(self, output: CallOutcome, tool_use_id: str) -> ToolResultBlock:
        parts = result_blocks(output) or [{"type": "text", "text": "(the resource is empty)"}]
        return {"type": "tool_result", "tool_use_id": tool_use_id, "content": parts}

    def summarize_result(self, output: CallOutcome) -> str:
        n = len(output.content)
        return f"{n} part{'s' if n != 1 else ''}"


def resource_parts(server: str, uri: str, contents: list[JsonObject]) -> list[ResultPart]:
    """A resource attached to a prompt (`@server:uri`): content blocks for the user message."""
    parts: list[ResultPart] = [{"type": "text", "text": f"[the person attached the resource {uri} of {server}]"}]
    parts += result_blocks(CallOutcome(content=[{"type": "resource", "resource": c} for c in contents]))
    return parts
