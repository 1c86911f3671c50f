"""OAuth for an MCP server, in a kernel a real Jupyter server started: the redirect comes back
through the server's handler (ipy_agent.mcp.server_extension), not a loopback port.

A Jupyter server with the extension, a kernel it launched (so the kernel finds its server by
JPY_PARENT_PID), an MCP server that needs OAuth with its own authorization server on 127.0.0.1
(tests/support/mcp_servers/oauth_server.py). The cell shows the link; an HTTP client plays the
person's browser (logged in to Jupyter: it has the server's cookie), follows the link, and the
authorization server sends it back to `<server>/ipy-agent/oauth/callback`; the handler hands the
code to the waiting kernel, the run continues and the tool call succeeds.

Attacks with their controls: the same redirect without the server's cookie, and one with a wrong
state, are refused and the kernel still waits (its registration is untouched); a replay after
the run is refused with the same clear message.
"""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import httpx
import pytest
from jupyter_client import BlockingKernelClient

from ipy_agent.mcp import jupyter_redirect
from tests.support.browser import write_kernel_spec
from tests.support.mcp import OAUTH, http_toolbox
from tests.support.waits import Deadline, require_marker, timed_out

pytestmark = pytest.mark.kernel

PROJECT_ROOT = Path(__file__).resolve().parents[2]
TOKEN = "ipy-agent-oauth-test"
TIMEOUT = 90.0
BASE_URL = "/user/ada/"


class Server:
    """`python -m jupyter_server` on 127.0.0.1 with the extension, in private Jupyter dirs, under
    a base URL as JupyterHub gives a person's server."""

    def __init__(self, home: Path) -> None:
        require_marker("kernel", "starts a Jupyter server and a kernel")
        self.home = home
        self.runtime = home / "runtime"
        for d in ("config", "data", "runtime", "ipython", "root", "user-config"):
            (home / d).mkdir()
        write_kernel_spec(home / "data")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "IPY_AGENT_", "JUPYTER"))}
        env.update(
            JUPYTER_CONFIG_DIR=str(home / "config"),
            JUPYTER_DATA_DIR=str(home / "data"),
            JUPYTER_RUNTIME_DIR=str(self.runtime),
            JUPYTER_PATH=str(home / "data"),
            IPYTHONDIR=str(home / "ipython"),
            IPY_AGENT_CONFIG_DIR=str(home / "user-config"),
            JUPYTER_PLATFORM_DIRS="1",
            PYTHONPATH=os.pathsep.join(p for p in (str(PROJECT_ROOT), os.environ.get("PYTHONPATH", "")) if p),
        )
        self.log = (home / "server.log").open("wb")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "jupyter_server",
                "--no-browser",
                "--ServerApp.ip=127.0.0.1",
                "--ServerApp.port=0",
                "--ServerApp.port_retries=0",
                f"--IdentityProvider.token={TOKEN}",
                f"--ServerApp.root_dir={home / 'root'}",
                f"--ServerApp.base_url={BASE_URL}",  # as under JupyterHub
                "--ServerApp.allow_root=True",
                '--ServerApp.jpserver_extensions={"ipy_agent.mcp.server_extension": True}',
            ],
            cwd=home / "root",
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        info = self.runtime / f"jpserver-{self.proc.pid}.json"
        deadline = Deadline(TIMEOUT)
        while True:
            try:
                self.url = str(json.loads(info.read_text())["url"])
                break
            except (OSError, ValueError, KeyError):
                pass
            if self.proc.poll() is not None or deadline.passed():
                raise timed_out("the Jupyter server did not write its server info", TIMEOUT, self.read_log())
            time.sleep(0.1)

    def read_log(self) -> str:
        return (self.home / "server.log").read_text(errors="replace")[-4000:]

    def start_kernel(self) -> BlockingKernelClient:
        """A kernel for a notebook session, started by the server; a client on its channels."""
        r = httpx.post(
            f"{self.url}api/sessions",
            json={"path": "t.ipynb", "type": "notebook", "name": "t.ipynb", "kernel": {"name": "python3"}},
            headers={"Authorization": f"token {TOKEN}"},
            timeout=TIMEOUT,
        )
        r.raise_for_status()
        client = BlockingKernelClient(connection_file=str(self.runtime / f"kernel-{r.json()['kernel']['id']}.json"))
        client.load_connection_file()
        client.start_channels()
        client.wait_for_ready(timeout=TIMEOUT)
        return client

    def stop(self) -> None:
        self.proc.terminate()  # by PID; its kernels end with their parent
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        self.log.close()


@pytest.fixture
def server() -> Iterator[Server]:
    with tempfile.TemporaryDirectory(prefix="ipy_agent_oauth_") as home:
        s = Server(Path(home))
        try:
            yield s
        finally:
            s.stop()


CELL = """
from ipy_agent import Agent, ScriptedModel
from tests.support.transcript import use, result_text
agent = Agent(
    model=ScriptedModel([[use("mcp__secured__whoami", "w1")], "Done."]),
    tools=[],
    mcp_servers={{"secured": {{"type": "http", "url": {url!r}}}}},
)
agent.run("who am I?")
print("TOOL RESULT:", [result_text(b) for m in agent.messages if isinstance(m["content"], list)
                       for b in m["content"] if b.get("type") == "tool_result"])
agent.close()
"""


def _text_until(client: BlockingKernelClient, msg_id: str, marker: str, seen: list[str]) -> re.Match[str]:
    """Read the cell's output into `seen` until the pattern `marker` shows (or the cell ends)."""
    deadline = Deadline(TIMEOUT)
    while not (found := re.search(marker, "".join(seen))):
        try:
            msg = client.get_iopub_msg(timeout=min(1.0, deadline.left()))
        except queue.Empty:
            if deadline.passed():
                raise timed_out(f"the cell did not show {marker!r}", TIMEOUT, "".join(seen)) from None
            continue
        content = msg["content"]
        if msg["msg_type"] == "stream":
            seen.append(content["text"])
        elif msg["msg_type"] == "error":
            seen.append(f"{content['ename']}: {content['evalue']}\n")
        elif (
            msg["msg_type"] == "status"
            and content["execution_state"] == "idle"
            and msg["parent_header"].get("msg_id") == msg_id
            and not re.search(marker, "".join(seen))
        ):
            raise AssertionError(f"the cell ended without showing {marker!r}; it showed:\n{''.join(seen)}")
    return found


def test_the_authorization_comes_back_through_the_jupyter_servers_handler(server: Server):
    with http_toolbox(argv=(OAUTH,)) as mcp_url:
        kernel = server.start_kernel()
        try:
            msg_id = kernel.execute(CELL.format(url=mcp_url))
            seen: list[str] = []
            link = _text_until(kernel, msg_id, r"Open this link to sign in:\n(\S+)\n", seen).group(1)
            redirect_uri = parse_qs(urlparse(link).query)["redirect_uri"][0]
            # The server's address (its base URL included), not a loopback port of the kernel's.
            assert redirect_uri == f"{server.url}ipy-agent/oauth/callback"
            assert urlparse(redirect_uri).path == f"{BASE_URL}ipy-agent/oauth/callback"

            # The authorization server (the person signs in and says yes) sends the browser back.
            back = httpx.get(link, timeout=30)
            assert back.status_code == 302
            redirected = back.headers["location"]
            state = parse_qs(urlparse(redirected).query)["state"][0]
            registration = jupyter_redirect._state_file(server.runtime, state)
            assert registration.exists()
            assert registration.stat().st_mode & 0o777 == 0o600
            assert (server.runtime / "ipy-agent-oauth").stat().st_mode & 0o777 == 0o700

            # Attack: the redirect without the person's Jupyter login is not forwarded.
            stranger = httpx.get(redirected, timeout=30)
            assert stranger.status_code == 302  # to the server's login page, which comes back here after
            assert stranger.headers["location"].startswith(f"{BASE_URL}login?next=")
            assert registration.exists()  # the kernel still waits for it

            browser = httpx.Client(timeout=30)
            login = browser.get(f"{server.url}api/status?token={TOKEN}")  # the person's session: a cookie
            assert login.status_code == 200 and browser.cookies

            # Attack: a wrong state is refused, clearly, and the kernel still waits.
            wrong = browser.get(redirected.replace(f"state={state}", "state=forged"))
            assert wrong.status_code == 400 and "No notebook waits for this authorization" in wrong.text
            assert registration.exists()

            done = browser.get(redirected)
            assert done.status_code == 200, done.text
            assert "Authorized" in done.text
            assert not registration.exists()
            result = _text_until(kernel, msg_id, r"TOOL RESULT: (.*)\n", seen).group(1)
            assert result == "['signed in through OAuth']"

            # Attack: the same redirect again finds nothing.
            replay = browser.get(redirected)
            assert replay.status_code == 400 and "the link was used already" in replay.text
        finally:
            kernel.stop_channels()
