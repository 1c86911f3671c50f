"""SIGTERM stops a real `python -m ipy_agent.gateway` gracefully: it stops accepting connections,
lets a response in flight finish and charges its reported usage, cuts the one still running
after `--drain-seconds` and charges it the held maximum, and exits 0. `--report` shows both."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO

import pytest

from ipy_agent.gateway.usage import UsageDB
from ipy_agent.models.base import Usage
from ipy_agent.models.pricing import estimate_cost
from tests.support.gateway_stream import open_stream
from tests.support.sse_server import ReplayServer, Reply, message_events
from tests.support.waits import free_port, waiting_for

SONNET = "claude-sonnet-4-5"
ROOT = Path(__file__).resolve().parents[2]


def stream_of(port: int, token: str) -> socket.socket:
    """A kernel's streaming request to the gateway on `port`, read up to its first event; the socket stays open."""
    body = json.dumps(
        {"model": SONNET, "max_tokens": 2000, "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    ).encode()
    return open_stream(f"http://127.0.0.1:{port}", body, token=token)


def line_with(stream: IO[str], text: str) -> str:
    """Read `stream` until a line holding `text` (the gateway's stderr)."""
    with waiting_for(f"the gateway to print {text!r}"):
        for line in stream:
            if text in line:
                return line
    raise AssertionError(f"the gateway exited before printing {text!r}")


def start_gateway(
    tmp_path: Path, api_server: ReplayServer, *, drain_seconds: float
) -> tuple[subprocess.Popen[str], list[str], dict[str, str], int]:
    """`python -m ipy_agent.gateway` for alice (tok-a) and bob (tok-b): (process, command, env, port)."""
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps({"tok-a": "alice", "tok-b": "bob"}))
    port = free_port()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(ROOT), "ANTHROPIC_API_KEY": "sk-real"}
    command = [sys.executable, "-m", "ipy_agent.gateway", "--port", str(port), "--db", str(tmp_path / "usage.sqlite")]
    command += ["--tokens", str(tokens), "--upstream", api_server.url, "--drain-seconds", str(drain_seconds)]
    gateway = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert gateway.stderr is not None
    line_with(gateway.stderr, "serving on")
    return gateway, command, env, port


def read_to_end(sock: socket.socket) -> bytes:
    seen = b""
    while data := sock.recv(4096):
        seen += data
        if seen.endswith(b"0\r\n\r\n"):  # the last chunk: the response is whole
            break
    return seen


@pytest.mark.timeout(90)
def test_sigterm_lets_a_response_finish_cuts_the_one_past_the_bound_settles_both_and_exits_0(
    tmp_path, api_server: ReplayServer
):
    gate = threading.Event()
    finishing = message_events([{"type": "text", "text": "done"}], usage={"input_tokens": 300}, output_tokens=25)
    finishing[-2].gate = gate  # its message_delta waits until the gateway has been told to stop
    endless = message_events([{"type": "text", "text": "never"}], usage={"input_tokens": 300}, end=False)
    api_server.add(finishing, Reply(events=endless, hold_open=True))
    gateway, command, env, port = start_gateway(tmp_path, api_server, drain_seconds=2)
    db = tmp_path / "usage.sqlite"
    try:
        assert gateway.stderr is not None and gateway.stdout is not None
        alice, bob = stream_of(port, "tok-a"), stream_of(port, "tok-b")
        gateway.send_signal(signal.SIGTERM)
        assert "2 responses in flight" in line_with(gateway.stderr, "stopping")
        with pytest.raises(ConnectionRefusedError):  # no new connections
            socket.create_connection(("127.0.0.1", port), timeout=5).close()
        gate.set()
        assert b"message_stop" in read_to_end(alice)  # the one in flight finished whole
        assert b"message_stop" not in read_to_end(bob)  # the endless one was cut at the bound
        assert "1 responses cut" in line_with(gateway.stderr, "stopped")
        assert gateway.wait(30) == 0
        log = [json.loads(line) for line in gateway.stdout.read().splitlines()]
        alice.close()
        bob.close()
    finally:
        if gateway.poll() is None:
            gateway.kill()
            gateway.wait(10)
    report = subprocess.run([*command[:3], "--db", str(db), "--report"], env=env, capture_output=True, text=True)
    assert report.returncode == 0 and "alice\t1 requests" in report.stdout and "bob\t1 requests" in report.stdout
    rows = {row.user: row for row in UsageDB(db).report()}
    assert rows["alice"].usd == pytest.approx(estimate_cost(SONNET, Usage(input_tokens=300, output_tokens=25)))
    assert rows["bob"].output_tokens == 2000  # the held maximum
    assert rows["bob"].usd == pytest.approx(
        estimate_cost(SONNET, Usage(input_tokens=rows["bob"].input_tokens, output_tokens=2000))
    )
    assert {(entry["user"], entry["charged"]) for entry in log} == {("alice", "usage"), ("bob", "held_maximum")}


@pytest.mark.timeout(90)
def test_a_second_signal_cuts_the_responses_in_flight_at_once_and_charges_them(tmp_path, api_server: ReplayServer):
    endless = message_events([{"type": "text", "text": "never"}], usage={"input_tokens": 300}, end=False)
    api_server.add(Reply(events=endless, hold_open=True))
    gateway, _command, _env, port = start_gateway(tmp_path, api_server, drain_seconds=600)
    try:
        assert gateway.stderr is not None
        bob = stream_of(port, "tok-b")
        gateway.send_signal(signal.SIGINT)  # as JupyterHub stops a service it runs
        assert "1 responses in flight, waiting up to 600 s" in line_with(gateway.stderr, "stopping")
        gateway.send_signal(signal.SIGTERM)  # the second: no more waiting
        assert "1 responses cut" in line_with(gateway.stderr, "stopped")
        assert gateway.wait(30) == 0
        assert b"message_stop" not in read_to_end(bob)
        bob.close()
    finally:
        if gateway.poll() is None:
            gateway.kill()
            gateway.wait(10)
    (row,) = UsageDB(tmp_path / "usage.sqlite").report()
    assert (row.user, row.output_tokens) == ("bob", 2000)  # the held maximum
