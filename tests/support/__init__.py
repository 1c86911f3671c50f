"""What the tests share: helpers, fixtures, and the harnesses that drive real software.

Modules, in import order:
    waits        deadlines that say what they waited for; the suite marker real software needs; free ports
    transcript   tool_use blocks for scripted models; tool_result blocks and their text
    tools        the ToolContext factory, recording tools, project trees, one direct tool call
    fixtures     rec, ctx, api_server, need_bwrap and the InteractiveShell fixtures (a plugin)
    faults       an agent whose tools, approver and hooks fail on demand
    context      a tool with large results and turns that check the history, for long sessions
    bash         the permission decision a Bash command gets, and a project its commands name
    containment  a Bash call as the lifecycle makes it, Unix-socket listeners, a family's figures
    fuzz_world   a scratch git project, and Bash run in it under strace, for the shell fuzzer
    run_view     the cell's widgets without a kernel, over a scripted agent
    widgets      a comm that counts the bytes widgets send, and a tool that answers at once
    sse_server   a local Messages API that replays scripted event streams
    prompt_cache the Messages API's prompt-cache accounting, simulated, and a replay server that bills by it
    wire_servers the other clouds' wires (Bedrock's event stream, OpenAI's chat completions), served locally
    wires        each provider's wire: its server, its model, its recorded replies and errors
    mcp          the MCP test servers (mcp_servers/) and readers of what an agent got from them
    kernel       a real IPython kernel driven as a notebook front end drives it
    frontend     the JupyterLab extension's side of the live notebook, over a real kernel
    browser      real JupyterLab and Notebook 7 servers, driven by Chromium

A helper used by one test file stays in that file; one used by two or more lives here, once.
"""
