"""A notebook on a remote kernel: JupyterLab started with `--gateway-url`, its kernels run by
`jupyter kernelgateway` (both on 127.0.0.1, as docs/deploy.md's recipe 4 starts them).

The person opens a notebook in JupyterLab, loads ipy_agent in the gateway's kernel and runs
`%agent`; the live-notebook comm goes through the gateway's websocket, the person approves an
edit with the mouse, and the cell changes in the open notebook. The kernel works in the
gateway's directory, not the Lab server's: the agent's tools act there, and it says so.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SUITE_TIMEOUTS
from tests.support.browser import PROJECT_ROOT, TIMEOUT, JupyterServer, NotebookPage, write_kernel_spec
from tests.support.transcript import use
from tests.support.waits import free_port, wait_for_http

pytestmark = [pytest.mark.browser, pytest.mark.hub]

# How long the gateway's kernel may take to start, and the Lab server to connect to it. The Lab
# server's gateway client gives up after 40 s by default (GatewayClient.connect_timeout, and
# request_timeout 42 s): on a loaded machine a kernel that started later was left unconnected, and
# the notebook never showed an idle kernel (the test then failed after its own 90 s wait). Here the
# client waits as long as the test does, and both wait for the kernel itself, until the suite's
# timeout at most.
KERNEL_START = SUITE_TIMEOUTS["hub"] - 120


@pytest.fixture(scope="module")
def kernel_host(tmp_path_factory: Any) -> Iterator[tuple[str, Path]]:
    """`jupyter kernelgateway` on 127.0.0.1; yields its URL and the directory its kernels run in."""
    try:
        import kernel_gateway  # noqa: F401
    except ImportError:
        message = "the hub suite needs jupyter-kernel-gateway: pip install -e '.[test]'"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    home = tmp_path_factory.mktemp("kernel_host")
    workdir = home / "work"
    workdir.mkdir()
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "IPY_AGENT_", "JUPYTER_"))}
    env.update(
        JUPYTER_DATA_DIR=str(home / "data"),
        JUPYTER_PATH=str(home / "data"),
        JUPYTER_CONFIG_DIR=str(home / "config"),
        JUPYTER_RUNTIME_DIR=str(home / "runtime"),
        IPYTHONDIR=str(home / "ipython"),
        IPY_AGENT_CONFIG_DIR=str(home / "personal"),
        PYTHONPATH=os.pathsep.join(p for p in (str(PROJECT_ROOT), os.environ.get("PYTHONPATH", "")) if p),
    )
    # The gateway passes none of its environment to its kernels: the spec gives them this checkout.
    write_kernel_spec(home / "data", {k: env[k] for k in ("PYTHONPATH", "IPY_AGENT_CONFIG_DIR", "IPYTHONDIR")})
    log_path = home / "gateway.log"
    argv = [
        sys.executable,
        "-m",
        "kernel_gateway",
        "--KernelGatewayApp.ip=127.0.0.1",
        f"--KernelGatewayApp.port={port}",
        "--KernelGatewayApp.port_retries=0",
        "--JupyterWebsocketPersonality.list_kernels=True",
        "--KernelGatewayApp.default_kernel_name=python3",
    ]
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            argv, cwd=workdir, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_http(
            f"{url}/api/kernelspecs",
            "the kernel gateway",
            TIMEOUT,
            alive=lambda: proc.poll() is None,
            log=lambda: log_path.read_text(errors="replace"),
        )
        yield url, workdir
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)  # its own session: its kernels too
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)


@pytest.fixture(scope="module")
def gateway_lab(kernel_host: tuple[str, Path], tmp_path_factory: Any) -> Iterator[JupyterServer]:
    from tests.browser.conftest import _need_browser

    _need_browser(extension=True)
    url, _workdir = kernel_host
    server = JupyterServer(
        "lab",
        tmp_path_factory.mktemp("lab_root"),
        extra_args=[
            f"--gateway-url={url}",
            f"--GatewayClient.connect_timeout={KERNEL_START}",
            f"--GatewayClient.request_timeout={KERNEL_START}",
        ],
    ).start()
    try:
        yield server
    finally:
        server.stop()


def test_a_live_edit_approved_on_a_gateway_kernel(gateway_lab, kernel_host, browser):
    _url, workdir = kernel_host
    script = workdir / "edit.json"  # the kernel reads it on its own host
    script.write_text(
        json.dumps(
            {
                "turns": [
                    [use("NotebookRead", "r1")],
                    [use("NotebookEdit", "e1", notebook_path="remote.ipynb", cell_id="c1", new_source="x = 41")],
                    "Changed x in the open notebook.",
                ]
            }
        )
    )
    gateway_lab.notebook_file(
        "remote.ipynb",
        [
            "%load_ext ipy_agent",
            "import os; print('kernel in', os.getcwd())",
            "%agent --script edit.json change x",
            "x = 1",
            "a = get_ipython().magics_manager.registry['AgentMagics'].session.agent\n"
            "print('says where:', f'Working directory: {a.cwd}' in a.system() and 'Host: ' in a.system())",
        ],
        ids=["load", "where", "agent", "c1", "end"],
    )
    page = _open_on_a_started_kernel(gateway_lab, browser, "remote.ipynb", kernel_host[0])
    try:
        page.run(0)
        page.wait_done(0)
        page.run(1)
        page.wait_done(1)
        assert page.wait_text(1, "kernel in").strip() == f"kernel in {workdir}"  # not the Lab server's root
        assert Path(gateway_lab.root).resolve() != workdir.resolve()
        page.run(2)
        page.button(
            2, "Accept"
        ).click()  # the prompt arrived through the gateway's websocket (a cell edit under review: Accept)
        page.wait_done(2)
        page.wait_text(2, "Changed x in the open notebook.")
        sources = [c["source"] for c in page.cells()]
        assert sources[3] == "x = 41"  # the live notebook changed, through the comm
        on_disk = json.loads((gateway_lab.root / "remote.ipynb").read_text())
        assert "".join(on_disk["cells"][3]["source"]) == "x = 1"  # and nothing was saved behind the person's back
        page.run(4)
        page.wait_done(4)
        assert page.wait_text(4, "says where:").strip() == "says where: True"  # the prompt names host and directory
    finally:
        page.close()


def _open_on_a_started_kernel(lab: JupyterServer, browser: Any, name: str, gateway_url: str) -> NotebookPage:
    """Open `name` once its gateway kernel answers, as a person opens a notebook whose kernel runs.

    Opened cold, the page's first websocket races the gateway's kernel start: on a loaded machine
    the Lab server's proxy gave up on the handshake while the kernel was still starting, JupyterLab
    reconnected once and then waited forever. So the session is started through the Lab server's
    REST API (the kernel starts on the gateway), the kernel is asked for its kernel_info on the
    gateway's own websocket until it answers, and only then does the page open and attach to that
    session. Should the page's handshake still fail, it is reloaded once, as a person would.
    """
    started = time.monotonic()
    session = lab.api(
        "POST",
        "sessions",
        {"path": name, "name": name, "type": "notebook", "kernel": {"name": "python3"}},
        timeout=KERNEL_START,
    )
    kernel_id = session["kernel"]["id"]
    left = KERNEL_START - (time.monotonic() - started)
    # Playwright's sync API runs an event loop in this thread: the probe gets a thread of its own.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, _until_the_kernel_answers(gateway_url, kernel_id, left)).result()
    page = NotebookPage(lab, browser.new_page(viewport={"width": 1280, "height": 900}), name)
    page.page.goto(lab.url(f"lab/tree/{name}?reset"))
    try:
        page.wait_ready(TIMEOUT)
    except AssertionError:
        page.page.reload()
        page.wait_ready(TIMEOUT)
    sessions = [s["kernel"]["id"] for s in lab.api("GET", "sessions")]
    assert sessions == [kernel_id], f"the page started its own kernel instead of the started one: {sessions}"
    return page


async def _until_the_kernel_answers(gateway_url: str, kernel_id: str, timeout: float) -> None:
    """Until the kernel answers a kernel_info_request on the gateway's websocket (at most `timeout` s)."""
    from tornado.websocket import websocket_connect

    ws_url = gateway_url.replace("http://", "ws://") + f"/api/kernels/{kernel_id}/channels"
    deadline = time.monotonic() + timeout
    seen: list[str] = []
    while time.monotonic() < deadline:
        msg_id = uuid.uuid4().hex
        request = {
            "header": {
                "msg_id": msg_id,
                "msg_type": "kernel_info_request",
                "username": "test",
                "session": uuid.uuid4().hex,
                "date": "",
                "version": "5.3",
            },
            "parent_header": {},
            "metadata": {},
            "content": {},
            "channel": "shell",
            "buffers": [],
        }
        try:
            conn = await asyncio.wait_for(websocket_connect(ws_url), timeout=30)
        except Exception as e:  # the gateway may refuse while the kernel starts: try again
            seen.append(f"connect: {e!r}")
            await asyncio.sleep(1)
            continue
        try:
            await conn.write_message(json.dumps(request))
            while time.monotonic() < deadline:
                raw = await asyncio.wait_for(conn.read_message(), timeout=min(30, max(1, deadline - time.monotonic())))
                if raw is None:
                    seen.append("closed by the gateway")
                    break
                msg = json.loads(raw)
                if (
                    msg.get("parent_header", {}).get("msg_id") == msg_id
                    and msg["header"]["msg_type"] == "kernel_info_reply"
                ):
                    return
        except TimeoutError:
            seen.append("no kernel_info_reply within 30 s")
        finally:
            conn.close()
    raise AssertionError(
        f"the gateway's kernel {kernel_id} did not answer kernel_info within {timeout:.0f} s: {seen[-5:]}"
    )
