"""docs/deploy.md's recipe for two gateway replicas behind the Hub's proxy, run on one machine:
configurable-http-proxy (the Hub's proxy, from tests/hub) with the route JupyterHub adds for the
service (`/services/ipy-agent-gateway/`), a TCP balancer that spreads connections over two real
`python -m ipy_agent.gateway` processes (it stands for the Kubernetes Service, or HAProxy in TCP
mode, of the recipe), both on one usage database.

It checks that requests through the proxy's path reach both replicas, that each person's usage
lands once in the one database (`--report`), and that a person at a budget is refused by either
replica. It does not start the Hub (recipe 2's test does: the service's route and its tokens),
and it runs on SQLite: holds shared between replicas need the database to keep them (PostgreSQL)."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from ipy_agent.gateway.usage import UsageDB
from ipy_agent.models.base import Usage
from ipy_agent.models.pricing import estimate_cost
from tests.support.sse_server import ReplayServer, message_events
from tests.support.waits import Deadline, free_port, timed_out, wait_for_http, waiting_for

pytestmark = pytest.mark.hub

ROOT = Path(__file__).resolve().parents[2]
PROXY = ROOT / "tests" / "hub" / "node_modules" / ".bin" / "configurable-http-proxy"
SONNET = "claude-sonnet-4-5"
ROUTE = "/services/ipy-agent-gateway/"
BODY = json.dumps({"model": SONNET, "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]}).encode()
COST = estimate_cost(SONNET, Usage(input_tokens=500, output_tokens=40))  # what each answer reports


def need_proxy() -> None:
    if PROXY.exists() and os.access(PROXY, os.X_OK):
        return
    why = f"configurable-http-proxy is missing ({PROXY}): npm ci --prefix tests/hub"
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(why, pytrace=False)
    pytest.skip(why)


class Balancer:
    """Round robin over `targets`, one TCP connection at a time, in a thread of its own."""

    def __init__(self, targets: list[int]) -> None:
        self.port = free_port()
        self._next = itertools.cycle(targets)
        self._loop = asyncio.new_event_loop()
        ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(ready,), daemon=True)
        self._thread.start()
        assert ready.wait(10)

    def _run(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(asyncio.start_server(self._pipe, "127.0.0.1", self.port))
        ready.set()
        self._loop.run_forever()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", next(self._next))

        async def copy(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            try:
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            except ConnectionError:
                pass
            finally:
                dst.close()

        await asyncio.gather(copy(reader, up_writer), copy(up_reader, writer))

    def stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)


def add_route(api_port: int, target: str, *, alive: Callable[[], bool]) -> None:
    """Add the route JupyterHub adds for the service, once the proxy's API listens."""
    url = f"http://127.0.0.1:{api_port}/api/routes{ROUTE.rstrip('/')}"
    deadline = Deadline(30)
    with waiting_for("configurable-http-proxy's API to listen"):
        while True:
            try:
                r = httpx.post(url, json={"target": target}, headers={"Authorization": "token proxy-secret"}, timeout=5)
            except httpx.ConnectError:
                if not alive() or deadline.passed():
                    raise timed_out("configurable-http-proxy's API did not listen", 30) from None
                time.sleep(0.1)
                continue
            assert r.status_code == 201, r.text
            return


@pytest.fixture
def replicas(tmp_path: Path, api_server: ReplayServer) -> Iterator[tuple[str, list[str], list[str]]]:
    """(the proxy's URL, the replicas' own URLs, the command that runs a gateway on the shared db)."""
    need_proxy()
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps({"tok-a": "alice"}))
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(ROOT), "ANTHROPIC_API_KEY": "sk-real"}
    gateway = [sys.executable, "-m", "ipy_agent.gateway", "--db", str(tmp_path / "usage.sqlite")]
    limits = ["--tokens", str(tokens), "--upstream", api_server.url, "--per-user-usd", str(1.5 * COST)]
    ports = [free_port(), free_port()]
    processes = [
        subprocess.Popen(
            [*gateway, *limits, "--port", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for port in ports
    ]
    balancer = Balancer(ports)
    proxy_port, api_port = free_port(), free_port()
    proxy_env = {**os.environ, "CONFIGPROXY_AUTH_TOKEN": "proxy-secret"}
    proxy = subprocess.Popen(
        [
            str(PROXY),
            "--ip",
            "127.0.0.1",
            "--port",
            str(proxy_port),
            "--api-ip",
            "127.0.0.1",
            "--api-port",
            str(api_port),
        ],
        env=proxy_env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for port, process in zip(ports, processes, strict=True):
            wait_for_http(
                f"http://127.0.0.1:{port}/health",
                "a gateway replica",
                30,
                alive=lambda p=process: p.poll() is None,
                log=lambda p=process: "" if p.poll() is None else (p.stderr.read() if p.stderr else ""),
            )
        add_route(api_port, f"http://127.0.0.1:{balancer.port}", alive=lambda: proxy.poll() is None)
        yield f"http://127.0.0.1:{proxy_port}", [f"http://127.0.0.1:{p}" for p in ports], [*gateway]
    finally:
        proxy.terminate()
        proxy.wait(10)
        balancer.stop()
        for process in processes:
            process.terminate()
            process.wait(30)


def counted(url: str) -> dict[str, float]:
    text = httpx.get(f"{url}/metrics", timeout=10).text
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name in ("ipy_agent_gateway_requests_total", "ipy_agent_gateway_refusals_total"):
                out[next(iter(s.labels.values()))] = s.value
    return out


def stream_to_first_event(client: httpx.Client, url: str) -> Iterator[bytes]:
    """A streaming request of alice's, read up to its first event; the rest of its bytes."""
    body = json.loads(BODY) | {"stream": True}
    request = client.build_request("POST", url, json=body, headers={"x-api-key": "tok-a"})
    response = client.send(request, stream=True)
    assert response.status_code == 200
    chunks = response.iter_bytes()
    seen = b""
    while b"message_start" not in seen:
        seen += next(chunks)
    return chunks


@pytest.mark.timeout(timeout=90)  # shorter than the hub suite's: a stuck replica fails fast
def test_two_replicas_behind_the_hubs_proxy_share_one_database_and_one_budget(replicas, api_server):
    proxy, own, gateway = replicas
    through = f"{proxy}{ROUTE}v1/messages"
    gate = threading.Event()
    for _ in range(2):
        events = message_events(
            [{"type": "text", "text": "ok"}], model=SONNET, usage={"input_tokens": 500}, output_tokens=40
        )
        events[-2].gate = gate  # message_delta waits until both streams are open
        api_server.add(events)
    # Two people's kernels at once: the proxy opens a second connection, and the balancer sends it
    # to the other replica (one after the other, they would share the proxy's kept-alive connection).
    with httpx.Client(timeout=20) as one, httpx.Client(timeout=20) as two:
        first, second = stream_to_first_event(one, through), stream_to_first_event(two, through)
        gate.set()
        assert b"message_stop" in b"".join(first) and b"message_stop" in b"".join(second)
    assert [counted(url).get("200") for url in own] == [1, 1]  # each replica answered one
    # The budget is spent: the next request is refused through the proxy, and by each replica.
    refused = httpx.post(through, content=BODY, headers={"x-api-key": "tok-a"}, timeout=20)
    assert refused.status_code == 429 and refused.json()["error"]["limit"] == "per_user"
    for url in own:
        assert httpx.post(f"{url}/v1/messages", content=BODY, headers={"x-api-key": "tok-a"}).status_code == 429
    assert httpx.get(f"{proxy}{ROUTE}health", timeout=10).json()["ok"] is True
    (row,) = UsageDB(gateway[-1]).report()
    assert (row.user, row.requests) == ("alice", 2) and row.usd == pytest.approx(2 * COST)
    assert len(api_server.requests) == 2
