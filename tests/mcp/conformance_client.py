"""A client for the MCP conformance suite's client scenarios, built on ipy_agent's public API.

    npx @modelcontextprotocol/conformance@0.1.16 client \\
        --command "python tests/mcp/conformance_client.py" --scenario elicitation-sep1034-client-defaults

The suite starts a server and runs this command with the server's URL as the last argument; set
MCP_CONFORMANCE_SCENARIO to the scenario (initialize, tools_call, elicitation-sep1034-client-defaults;
the default is the elicitation one). It lives in tests/mcp/, not tests/support/, because a script's
own folder comes first on sys.path and tests/support/mcp.py would shadow the `mcp` SDK. An `Agent` with a scripted model connects to it as a
streamable-HTTP MCP server and calls the scenario's tool; the approver accepts every form with no
content of its own, so the schema's defaults are what the server receives.
"""

from __future__ import annotations

import os
import sys
import tempfile

from ipy_agent import Agent, ElicitationRequest, ScriptedModel

CALLS = {  # scenario -> (tool, input)
    "initialize": None,
    "tools_call": ("add_numbers", {"a": 2, "b": 3}),
    "elicitation-sep1034-client-defaults": ("test_client_elicitation_defaults", {}),
}


def approver(request: object) -> object:
    if isinstance(request, ElicitationRequest):
        return {"action": "accept", "content": {}}  # every field left out: the defaults apply
    return "allow"


def main() -> int:
    url = sys.argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "elicitation-sep1034-client-defaults")
    call = CALLS.get(scenario)
    turns: list[object] = ["done"]
    if call is not None:
        name, inp = call
        turns = [[{"type": "tool_use", "id": "toolu_1", "name": f"mcp__conf__{name}", "input": inp}], "done"]
    agent = Agent(
        model=ScriptedModel(turns),
        cwd=tempfile.mkdtemp(prefix="ipy-agent-conformance-"),
        tools=[],
        mcp_servers={"conf": {"type": "http", "url": url}},
        approver=approver,
    )
    try:
        agent.run("go")
    finally:
        agent.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
