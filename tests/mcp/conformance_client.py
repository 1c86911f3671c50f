"""A client for the MCP conformance suite's client scenarios, built on the public API only.

The suite (`conformance client --command "python tests/mcp/conformance_client.py"`) starts a
scenario's server and runs this script with the server's URL as the last argument, the
scenario's name in MCP_CONFORMANCE_SCENARIO and its data (a pre-registered client's credentials)
in MCP_CONFORMANCE_CONTEXT. The script is what a person's code would be: an `Agent` with the
server in `mcp_servers` (its `"oauth"` entry for a pre-registered client and a client ID
metadata document URL), `mcp_authorize` standing in for the person's browser (it follows the
authorization URL to the redirect), and a scripted model that calls each of the server's tools.
A server's form (elicitation) is accepted with no content of its own, so the schema's defaults
are what the server receives. It exits 1 when a tool call failed. CONFORMANCE_AUTHORIZE=async gives an async
`mcp_authorize`; =link gives none: the link is shown and followed, the redirect comes back to
the loopback listener.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import sys
import threading
from typing import TextIO

import httpx2

from ipy_agent import Agent, ElicitationRequest, ScriptedModel
from ipy_agent.history.blocks import ContentBlock, Message

SERVER = "conf"
# The suite's client ID metadata document (its authorization server resolves this URL itself).
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
ARGUMENTS = {"add_numbers": {"a": 5, "b": 3}}
# How the person authorizes: a sync or an async `mcp_authorize`, or the link (loopback redirect).
MODE = os.environ.get("CONFORMANCE_AUTHORIZE", "sync")


def authorize(url: str) -> str:
    """The browser's part: open the authorization URL, return where it redirects."""
    answer = httpx2.get(url, follow_redirects=False, timeout=10)
    location = answer.headers.get("location")
    if not location:
        raise RuntimeError(f"the authorization endpoint did not redirect ({answer.status_code})")
    return str(location)


def approver(request: object) -> object:
    """The person: every form accepted with every field left out (the schema's defaults apply)."""
    if isinstance(request, ElicitationRequest):
        return {"action": "accept", "content": {}}
    return "allow"


async def authorize_async(url: str) -> str:
    return await asyncio.to_thread(authorize, url)


class Browser(io.TextIOBase):
    """The person without `mcp_authorize`: stdout, where the link is shown; a link to follow is
    opened, and its redirect lands on the loopback listener."""

    def __init__(self, out: TextIO) -> None:
        self.out = out

    def write(self, text: str) -> int:
        for word in text.split():
            if word.startswith("http") and "client_id=" in word:
                threading.Thread(target=httpx2.get, args=(word,), kwargs={"follow_redirects": True}).start()
        return self.out.write(text)

    def flush(self) -> None:
        self.out.flush()


def main() -> int:
    url = sys.argv[-1]
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    oauth = {"clientMetadataUrl": CLIENT_METADATA_URL}
    if context.get("client_id"):
        oauth["clientId"] = context["client_id"]
    if context.get("client_secret"):
        oauth["clientSecret"] = context["client_secret"]

    if MODE == "link":
        sys.stdout = Browser(sys.stdout)
    model: ScriptedModel

    def call_every_tool(messages: list[Message]) -> list[ContentBlock]:
        offered = [t["name"] for t in model.requests[-1]["tools"] if t["name"].startswith(f"mcp__{SERVER}__")]
        return [
            {
                "type": "tool_use",
                "id": f"call_{i}",
                "name": name,
                "input": ARGUMENTS.get(name.removeprefix(f"mcp__{SERVER}__"), {}),
            }
            for i, name in enumerate(offered)
        ] or [{"type": "text", "text": "no tools"}]

    model = ScriptedModel([call_every_tool, "done"])
    agent = Agent(
        model,
        mcp_servers={SERVER: {"type": "http", "url": url, "oauth": oauth, "startupTimeout": 20, "timeout": 20}},
        mcp_authorize={"sync": authorize, "async": authorize_async, "link": None}[MODE],
        allow=[f"mcp__{SERVER}"],
        approver=approver,
        instructions=False,
    )
    try:
        agent.run("Call every tool of the server.")
        calls = [c for c in agent.trace if c.tool_name.startswith(f"mcp__{SERVER}__")]
        for call in calls:
            print(f"{call.tool_name}: {'error' if call.is_error else 'ok'}", file=sys.stderr)
        return 1 if any(c.is_error for c in calls) else 0
    finally:
        agent.close()


if __name__ == "__main__":
    sys.exit(main())
