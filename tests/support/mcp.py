"""The MCP test servers (mcp_servers/: a toolbox of tools, resources and faults, and a server
that breaks) and small readers of what an agent offered and got back."""

from __future__ import annotations

import json
import select
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .transcript import result_text
from .waits import Deadline, timed_out, waiting_for

SERVERS = Path(__file__).parent / "mcp_servers"
TOOLBOX = str(SERVERS / "toolbox.py")
BROKEN = str(SERVERS / "broken.py")
OAUTH = str(SERVERS / "oauth_server.py")  # a server that needs OAuth, with its authorization server


def stdio(script: str = TOOLBOX, **extra: Any) -> dict[str, Any]:
    """A stdio server entry that runs `script` with this Python."""
    return {"command": sys.executable, "args": [script], **extra}


def offered(model: Any, request: int = 0) -> list[str]:
    return [t["name"] for t in model.requests[request]["tools"]]


def as_json(block: dict[str, Any]) -> Any:
    return json.loads(result_text(block))


@contextmanager
def http_toolbox(timeout: float = 30.0, argv: tuple[str, ...] = (TOOLBOX, "http")) -> Iterator[str]:
    """The toolbox server (or the server `argv` runs) over streamable HTTP on 127.0.0.1, a free
    port, in its own process; yields its URL and ends the process by its PID."""
    proc = subprocess.Popen([sys.executable, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        yield _port_url(proc, timeout)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _port_url(proc: subprocess.Popen[str], timeout: float) -> str:
    """Wait for the server's first line, `PORT n`."""
    assert proc.stdout is not None and proc.stderr is not None
    deadline = Deadline(timeout)
    with waiting_for("the MCP toolbox server (HTTP) to print its port"):
        while not select.select([proc.stdout], [], [], min(0.5, deadline.left()))[0]:
            if proc.poll() is not None or deadline.passed():
                proc.kill()
                raise timed_out("the MCP toolbox server (HTTP) did not print its port", timeout, proc.stderr.read())
        line = proc.stdout.readline()
    if not line.startswith("PORT "):
        proc.kill()
        raise AssertionError(f"the MCP toolbox server (HTTP) did not start: {line!r} {proc.stderr.read()}")
    return f"http://127.0.0.1:{int(line.split()[1])}/mcp"
