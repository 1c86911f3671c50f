"""A real MCP server for the tests, on the `mcp` SDK's MCPServer: `python toolbox.py [stdio|http]`.

Over HTTP it binds 127.0.0.1 on a free port, prints `PORT <n>` on stdout, and serves
streamable HTTP at /mcp until killed.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import struct
import sys
import time
import zlib

from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import EmbeddedResource, TextContent, TextResourceContents, ToolAnnotations

server = MCPServer("toolbox", instructions="Toolbox answers lookups; keys are lower case.")
_WIRE = os.dup(1)  # stdout as the client reads it (the SDK diverts fd 1 to stderr while serving)
_inflight = {"n": 0}
_both = asyncio.Event()


def _png() -> bytes:
    """A real 1x1 red PNG."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    raw = b"\x00\xff\x00\x00"
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
async def lookup(key: str) -> str:
    """Look a key up (read-only)."""
    return f"value of {key}"


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
async def together(tag: str) -> str:
    """Read-only; waits (up to 20 s) until a second call is running too, and reports when it ran."""
    start = time.time()
    _inflight["n"] += 1
    if _inflight["n"] >= 2:
        _both.set()
    try:
        await asyncio.wait_for(_both.wait(), 20)
        alone = False
    except TimeoutError:
        alone = True
    await asyncio.sleep(0.05)
    _inflight["n"] -= 1
    return json.dumps({"tag": tag, "start": start, "end": time.time(), "alone": alone})


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers (no annotations: the client must assume the worst)."""
    return a + b


@server.tool(annotations=ToolAnnotations(destructiveHint=True))
def wipe(target: str) -> str:
    """Pretend to wipe a target."""
    return f"wiped {target}"


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def picture() -> Image:
    """A 1x1 red PNG."""
    return Image(data=_png(), format="png")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def document() -> list:
    """A text block and an embedded text resource."""
    return [
        TextContent(type="text", text="Here is the file:"),
        EmbeddedResource(
            type="resource",
            resource=TextResourceContents(uri="file:///notes.txt", mimeType="text/plain", text="line one\nline two"),
        ),
    ]


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def refuse(reason: str) -> str:
    """Always fails with the reason (an isError result)."""
    raise ToolError(f"refused: {reason}")


@server.tool()
async def grow(ctx: Context) -> str:
    """Adds the tool `fresh` and tells the client the tool list changed."""
    server.add_tool(lambda: "fresh result", name="fresh", description="Added at run time.")
    await ctx.session.send_tool_list_changed()
    return "grown"


@server.tool()
def crash() -> str:
    """Exits the whole server in the middle of the call."""
    print("toolbox: about to crash on purpose", file=sys.stderr, flush=True)
    os._exit(3)


@server.tool()
async def hang() -> str:
    """Never answers."""
    print("toolbox: hanging on purpose", file=sys.stderr, flush=True)
    await asyncio.sleep(3600)
    return "never"


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def garbage(ctx: Context) -> str:
    """Writes a line that is not JSON, then answers its own request with a malformed result."""
    rid = ctx.request_context.request_id
    os.write(_WIRE, b"this is not JSON-RPC\n")
    os.write(_WIRE, (json.dumps({"jsonrpc": "2.0", "id": rid, "result": {"content": "not a list"}}) + "\n").encode())
    return "the real answer comes too late"


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def env(name: str) -> str:
    """The value of an environment variable of the server process."""
    return os.environ.get(name, "<unset>")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def header(ctx: Context, name: str) -> str:
    """The value of an HTTP request header (HTTP only)."""
    request = ctx.request_context.request
    return request.headers.get(name, "<none>") if request is not None else "<not http>"


# --- what the server asks of the client: elicitation, roots, sampling -------------------------
SIGNUP = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Your name"},
        "age": {"type": "integer", "minimum": 0},
        "score": {"type": "number", "default": 0.5},
        "subscribe": {"type": "boolean", "default": True},
        "color": {"type": "string", "enum": ["red", "green"], "default": "green"},
        "size": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}]},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}},
        "api_token": {"type": "string"},
    },
    "required": ["name"],
}


@server.tool()
async def signup(ctx: Context) -> str:
    """Asks the person a form (elicitation) and reports the answer as JSON."""
    result = await ctx.session.elicit_form("Who is signing up?", SIGNUP, related_request_id=ctx.request_id)
    return json.dumps({"action": result.action, "content": result.content})


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
async def roots(ctx: Context) -> str:
    """The client's roots (its working directories) as JSON: [[uri, name], ...]."""
    listed = await ctx.session.list_roots()
    return json.dumps([[str(r.uri), r.name] for r in listed.roots])


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
async def sample(ctx: Context) -> str:
    """Asks the client's model to write something (sampling); reports the error it gets."""
    from mcp.types import SamplingMessage
    from mcp.types import TextContent as Text

    try:
        await ctx.session.create_message(
            [SamplingMessage(role="user", content=Text(type="text", text="hi"))],
            max_tokens=10,
            related_request_id=ctx.request_id,
        )
    except Exception as e:
        return f"sampling failed: {e}"
    return "sampling worked"


# --- resources, a template and a prompt ------------------------------------------------------
@server.resource("memo://notes", name="notes", description="The team's notes.", mime_type="text/plain")
def notes() -> str:
    return "notes: ship on friday"


@server.resource("memo://logo", name="logo", mime_type="image/png")
def logo() -> bytes:
    return _png()


@server.resource("memo://people/{who}", name="person", description="One person's card.")
def person(who: str) -> str:
    return f"card of {who}"


@server.prompt(description="Review a file for one concern.")
def review(path: str, focus: str = "bugs") -> str:
    return f"Review {path} for {focus}."


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if mode == "stdio":
        server.run()
        return
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)  # connections wait in the backlog until uvicorn serves: no refusal after PORT
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(server.streamable_http_app(), log_level="warning")
    asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))


if __name__ == "__main__":
    main()
