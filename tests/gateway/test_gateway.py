"""The key gateway (`python -m ipy_agent.gateway`) between the real anthropic SDK and a local
Messages API: who may use it, that it streams and passes prompt caching through, that it holds
the key, counts each person's tokens and cost (two people at once included) and refuses a person
over budget with a message the agent shows."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ipy_agent import Agent, AnthropicModel
from ipy_agent.gateway.auth import TokenFile
from ipy_agent.gateway.charges import Limits
from ipy_agent.gateway.server import Gateway
from ipy_agent.gateway.usage import UsageDB
from ipy_agent.history.messages import history_problems
from tests.support.sse_server import ReplayServer, message_events

TOKENS = {"tok-alice": "alice", "tok-bob": "bob"}
REAL_KEY = "sk-ant-the-real-key"


@pytest.fixture
def served(tmp_path: Path, api_server: ReplayServer) -> Iterator[Any]:
    """Start a gateway in front of `api_server`; `served(per_day=...)` returns (url, db)."""
    stops: list[Any] = []

    def start(**limits: float) -> tuple[str, UsageDB]:
        tokens = tmp_path / "tokens.json"
        tokens.write_text(json.dumps(TOKENS))
        db = UsageDB(f"sqlite:///{tmp_path / 'usage.sqlite'}")
        gw = Gateway(api_key=REAL_KEY, auth=TokenFile(tokens), db=db, limits=Limits(**limits), upstream=api_server.url)
        url, thread, loop = gw.start_in_thread()
        stops.append((loop, thread))
        return url, db

    yield start
    for loop, thread in stops:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)


def kernel_env(monkeypatch: pytest.MonkeyPatch, url: str, token: str) -> None:
    """What a JupyterHub server's environment holds: the gateway's address and the Hub token."""
    monkeypatch.setenv("IPY_AGENT_GATEWAY_URL", url)
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", token)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)


def test_the_model_finds_the_gateway_and_streams_through_it(served, api_server, monkeypatch, tmp_path):
    url, db = served()
    kernel_env(monkeypatch, url, "tok-alice")
    api_server.add(
        message_events(
            [{"type": "text", "text": "Hello through the gateway, in many small chunks."}],
            chunk=4,
            usage={"input_tokens": 1200, "cache_read_input_tokens": 800, "cache_creation_input_tokens": 50},
            output_tokens=12,
        )
    )
    model = AnthropicModel("claude-sonnet-4-5", max_retries=0)
    assert "key gateway" in model.where
    agent = Agent(model, cwd=tmp_path)
    deltas: list[str] = []
    agent.on_event(lambda e: deltas.append(e.text) if type(e).__name__ == "TextEvent" else None)
    result = agent.run("hi")
    assert result.text == "Hello through the gateway, in many small chunks."
    assert len(deltas) > 5  # it came as a stream, not in one piece
    (sent,) = api_server.requests
    assert sent.headers["x-api-key"] == REAL_KEY  # the real key is added by the gateway...
    assert "tok-alice" not in json.dumps(sent.headers)  # ...and the person's token goes no further
    assert any("cache_control" in json.dumps(m) for m in sent.body["messages"])  # caching passes through
    (row,) = db.report()
    assert (row.user, row.requests, row.input_tokens, row.output_tokens) == ("alice", 1, 1200, 12)
    assert (row.cache_read_input_tokens, row.cache_creation_input_tokens) == (800, 50)
    assert row.usd > 0


def test_an_unknown_or_missing_token_is_refused(served, api_server, monkeypatch, tmp_path):
    url, _db = served()
    kernel_env(monkeypatch, url, "tok-mallory")
    result = Agent(AnthropicModel("claude-sonnet-4-5", max_retries=0), cwd=tmp_path).run("hi")
    assert result.error_kind == "authentication" and "does not know this token" in result.text
    monkeypatch.delenv("JUPYTERHUB_API_TOKEN")
    result = Agent(AnthropicModel("claude-sonnet-4-5", max_retries=0), cwd=tmp_path).run("hi")
    assert result.error_kind == "missing_key" and "JUPYTERHUB_API_TOKEN" in result.text
    assert api_server.requests == []  # nothing reached the API


def test_a_person_over_the_daily_budget_is_refused_and_the_agent_says_so(served, api_server, monkeypatch, tmp_path):
    url, _db = served(per_day=0.5)
    kernel_env(monkeypatch, url, "tok-alice")
    api_server.add(message_events([{"type": "text", "text": "one"}], usage={"input_tokens": 200_000}))
    agent = Agent(AnthropicModel("claude-sonnet-4-5", max_retries=0), cwd=tmp_path)
    assert agent.run("first").stop_reason == "end_turn"  # $0.60: over the limit from now on
    before = list(agent.messages)
    result = agent.run("second")
    assert result.stop_reason == "budget_exceeded"
    assert "alice has spent $0.60" in result.text and "$0.50 daily budget" in result.text
    assert agent.messages == before and history_problems(agent.messages) == []
    assert len(api_server.requests) == 1
    # Bob's budget is his own.
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "tok-bob")
    api_server.add(message_events([{"type": "text", "text": "bob's"}]))
    assert Agent(AnthropicModel("claude-sonnet-4-5", max_retries=0), cwd=tmp_path).run("hi").text == "bob's"


def test_two_people_at_once_are_each_counted_once(served, api_server, tmp_path):
    url, db = served()
    for _ in range(6):
        api_server.add(message_events([{"type": "text", "text": "ok"}], usage={"input_tokens": 1000}, tail_delay=0.2))

    async def person(token: str) -> list[str]:
        model = AnthropicModel("claude-sonnet-4-5", api_key=token, base_url=url, max_retries=0)
        agent = Agent(model, cwd=tmp_path)
        return [(await agent.arun(f"question {i}")).text for i in range(3)]

    async def both() -> list[list[str]]:
        return list(await asyncio.gather(person("tok-alice"), person("tok-bob")))

    assert asyncio.run(both()) == [["ok"] * 3, ["ok"] * 3]
    rows = {r.user: r for r in db.report()}
    assert set(rows) == {"alice", "bob"}
    for row in rows.values():
        assert (row.requests, row.input_tokens, row.output_tokens) == (3, 3000, 21)
    assert rows["alice"].usd == pytest.approx(rows["bob"].usd)


def test_one_persons_concurrent_requests_cannot_all_pass_the_check_on_the_same_spending(served, api_server, tmp_path):
    """Each request in flight holds the most it can cost (20,000 output tokens at $15 a million:
    $0.30), so of three at once under a $0.50 daily budget the third is refused while two run."""
    url, db = served(per_day=0.5)
    for _ in range(3):
        api_server.add(
            message_events([{"type": "text", "text": "ok"}], usage={"input_tokens": 100_000}, tail_delay=1.5)
        )

    async def ask(i: int) -> Any:
        model = AnthropicModel("claude-sonnet-4-5", api_key="tok-alice", base_url=url, max_retries=0, max_tokens=20_000)
        try:
            return await Agent(model, cwd=tmp_path).arun(f"question {i}")
        finally:
            await model.aclose()

    async def at_once() -> list[Any]:
        return list(await asyncio.gather(*(ask(i) for i in range(3))))

    results = asyncio.run(at_once())
    outcomes = sorted(r.stop_reason for r in results)
    assert outcomes == ["budget_exceeded", "end_turn", "end_turn"]
    refused = next(r for r in results if r.stop_reason == "budget_exceeded")
    assert "held by requests still running" in refused.text and "$0.50 daily budget" in refused.text
    assert len(api_server.requests) == 2  # the third never reached the API
    (row,) = db.report()
    assert row.requests == 2 and row.usd == pytest.approx(2 * (100_000 * 3 + 7 * 15) / 1e6)


def test_the_command_line_needs_the_key_and_reports_usage(tmp_path, served, api_server):
    _url, db = served()
    db.add("carol", "claude-sonnet-4-5", {"input_tokens": 10, "output_tokens": 5}, 0.0123)
    run = [sys.executable, "-m", "ipy_agent.gateway", "--db", str(tmp_path / "usage.sqlite")]
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    out = subprocess.run([*run, "--report"], capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 0 and "carol" in out.stdout and "$0.0123" in out.stdout
    out = subprocess.run(
        [*run, "--tokens", str(tmp_path / "tokens.json")], capture_output=True, text=True, timeout=60, env=env
    )
    assert out.returncode == 2 and "ANTHROPIC_API_KEY" in out.stderr


def test_as_a_hub_service_it_asks_the_hub_whose_token_it_is(api_server, tmp_path):
    """JupyterHub answers `GET /hub/api/user` with the token's owner; the gateway asks it once
    per token and minute, and a token the Hub refuses is refused."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from ipy_agent.gateway.auth import HubAuth

    asked: list[str] = []

    class FakeHub(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            token = self.headers.get("Authorization", "").removeprefix("token ")
            asked.append(token)
            known = {"hub-tok-dana": {"kind": "user", "name": "dana"}}
            body = json.dumps(known.get(token, {"status": 403, "message": "Forbidden"})).encode()
            self.send_response(200 if self.path == "/hub/api/user" and token in known else 403)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    hub = ThreadingHTTPServer(("127.0.0.1", 0), FakeHub)
    threading.Thread(target=hub.serve_forever, daemon=True).start()
    db = UsageDB(tmp_path / "usage.sqlite")
    gw = Gateway(
        api_key=REAL_KEY,
        auth=HubAuth(f"http://127.0.0.1:{hub.server_address[1]}/hub/api"),
        db=db,
        upstream=api_server.url,
    )
    url, thread, loop = gw.start_in_thread()
    try:
        api_server.add(message_events([{"type": "text", "text": "a"}]), message_events([{"type": "text", "text": "b"}]))
        agent = Agent(
            AnthropicModel("claude-sonnet-4-5", api_key="hub-tok-dana", base_url=url, max_retries=0), cwd=tmp_path
        )
        assert [agent.run("one").text, agent.run("two").text] == ["a", "b"]
        assert asked == ["hub-tok-dana"]  # asked once, then remembered
        assert [r.user for r in db.report()] == ["dana"]
        other = Agent(AnthropicModel("claude-sonnet-4-5", api_key="stolen", base_url=url, max_retries=0), cwd=tmp_path)
        assert other.run("hi").error_kind == "authentication"
        assert len(api_server.requests) == 2
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        hub.shutdown()
