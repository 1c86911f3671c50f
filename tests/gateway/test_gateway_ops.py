"""The key gateway run as a service: `/health` and Prometheus `/metrics` whose counters move with
the requests, one JSON log line per request that never holds the prompt, the answer, the token
or the key, a bounded Hub token cache whose revoked tokens stop working after its TTL, the 429 of
a budget in all that says it never resets, and a managed policy read again when its file changes."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from ipy_agent.gateway.auth import HubAuth, TokenFile
from ipy_agent.gateway.charges import Limits
from ipy_agent.gateway.server import Gateway
from ipy_agent.gateway.usage import UsageDB
from ipy_agent.models.base import Usage
from ipy_agent.models.pricing import estimate_cost
from tests.support.sse_server import ReplayServer, Reply, message_events
from tests.support.waits import waiting_for

SONNET = "claude-sonnet-4-5"
PROMPT_MARKER = "PROMPT-MARKER-7f3a"
ANSWER_MARKER = "ANSWER-MARKER-91bc"
TOKEN = "tok-alice-SECRET-5d2e"
REAL_KEY = "sk-ant-REAL-KEY-0c4d"


@pytest.fixture
def start(tmp_path: Path, api_server: ReplayServer) -> Iterator[Any]:
    """`start(policy_paths=..., per_user=...)` runs a gateway in front of `api_server`: (url, gw)."""
    stops: list[Any] = []

    def run(policy_paths: list[Path] | None = None, **limits: float) -> tuple[str, Gateway]:
        tokens = tmp_path / "tokens.json"
        tokens.write_text(json.dumps({TOKEN: "alice"}))
        gw = Gateway(
            api_key=REAL_KEY,
            auth=TokenFile(tokens),
            db=UsageDB(tmp_path / "usage.sqlite"),
            limits=Limits(**limits),
            upstream=api_server.url,
            policy_paths=policy_paths,
        )
        url, thread, loop = gw.start_in_thread()
        stops.append((loop, thread))
        return url, gw

    yield run
    for loop, thread in stops:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)


def ask(url: str, model: str = SONNET, *, token: str = TOKEN) -> httpx.Response:
    body = {"model": model, "max_tokens": 1000, "messages": [{"role": "user", "content": f"say {PROMPT_MARKER}"}]}
    return httpx.post(f"{url}/v1/messages", json=body, headers={"x-api-key": token}, timeout=20)


def answer() -> Reply:
    return Reply(
        body={
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": SONNET,
            "content": [{"type": "text", "text": ANSWER_MARKER}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 500, "output_tokens": 40},
        }
    )


def samples(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of `/metrics`, parsed by Prometheus's own parser: {(name, labels): value}."""
    response = httpx.get(f"{url}/metrics", timeout=10)
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain; version=0.0.4")
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(response.text)
        for s in family.samples
    }


def test_health_says_the_store_answers(start, tmp_path):
    url, gw = start()
    response = httpx.get(f"{url}/health", timeout=10)
    assert response.status_code == 200 and response.json() == {"ok": True, "store": "reachable", "stopping": False}
    gw.db.close()  # the store gone: the balancer must stop sending here
    response = httpx.get(f"{url}/health", timeout=10)
    assert response.status_code == 503 and response.json()["store"] == "unreachable"
    assert str(tmp_path) not in response.text


def test_metrics_count_requests_refusals_spend_holds_and_upstream_latency(start, api_server):
    url, _gw = start(per_day=1.0)
    before = samples(url)
    assert before[("ipy_agent_gateway_holds_open", ())] == 0
    api_server.add(answer())
    assert ask(url).status_code == 200
    assert ask(url, token="tok-nobody").status_code == 401
    after = samples(url)
    assert after[("ipy_agent_gateway_requests_total", (("status", "200"),))] == 1
    assert after[("ipy_agent_gateway_requests_total", (("status", "401"),))] == 1
    assert after[("ipy_agent_gateway_refusals_total", (("reason", "auth"),))] == 1
    spend = estimate_cost(SONNET, Usage(input_tokens=500, output_tokens=40))
    assert after[("ipy_agent_gateway_spend_usd_total", ())] == pytest.approx(spend)
    assert after[("ipy_agent_gateway_tokens_total", (("kind", "output"),))] == 40
    assert after[("ipy_agent_gateway_upstream_ttfb_seconds_count", ())] == 1
    assert after[("ipy_agent_gateway_upstream_ttfb_seconds_bucket", (("le", "+Inf"),))] == 1
    assert after[("ipy_agent_gateway_holds_open", ())] == 0
    # A person at the budget: refused by reason, and no request reaches the API.
    _gw.db.add("alice", SONNET, {"input_tokens": 1}, 5.0)
    assert ask(url).status_code == 429
    refused = samples(url)
    assert refused[("ipy_agent_gateway_refusals_total", (("reason", "budget_per_day"),))] == 1
    assert refused[("ipy_agent_gateway_upstream_ttfb_seconds_count", ())] == 1
    assert len(api_server.requests) == 1
    for text in (httpx.get(f"{url}/metrics").text, httpx.get(f"{url}/health").text):
        assert "alice" not in text and TOKEN not in text and REAL_KEY not in text


def test_an_open_hold_shows_while_its_stream_runs(start, api_server):
    url, gw = start()
    gate = threading.Event()
    events = message_events([{"type": "text", "text": "slow"}], usage={"input_tokens": 10})
    events[-2].gate = gate  # message_delta waits for the test
    api_server.add(events)
    body = {"model": SONNET, "max_tokens": 100, "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    with httpx.stream("POST", f"{url}/v1/messages", json=body, headers={"x-api-key": TOKEN}, timeout=20) as r:
        chunks = r.iter_bytes()
        seen = b""
        while b"message_start" not in seen:
            seen += next(chunks)
        assert samples(url)[("ipy_agent_gateway_holds_open", ())] == 1
        gate.set()
        for _ in chunks:
            pass
    assert gw.wait_ended(1, 20)
    assert samples(url)[("ipy_agent_gateway_holds_open", ())] == 0


class Lines(logging.Handler):
    """The gateway logger's records, as they are written (from the gateway's thread)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self.written = threading.Condition()

    def emit(self, record: logging.LogRecord) -> None:
        with self.written:
            self.records.append(record)
            self.written.notify_all()

    def wait(self, count: int) -> list[logging.LogRecord]:
        with waiting_for(f"{count} lines on the gateway's logger"), self.written:
            assert self.written.wait_for(lambda: len(self.records) >= count, 20), self.records
            return list(self.records)


@pytest.fixture
def gateway_log() -> Iterator[Lines]:
    logger = logging.getLogger("ipy_agent.gateway")
    lines, level = Lines(), logger.level
    logger.addHandler(lines)
    logger.setLevel(logging.INFO)
    yield lines
    logger.removeHandler(lines)
    logger.setLevel(level)


def test_one_json_log_line_per_request_without_the_prompt_the_answer_the_token_or_the_key(
    start, api_server, gateway_log, caplog
):
    caplog.set_level(logging.DEBUG)  # and every other logger's records, at every level
    url, _gw = start()
    api_server.add(answer())
    response = ask(url)
    assert response.status_code == 200 and ANSWER_MARKER in response.text  # the markers did pass
    assert PROMPT_MARKER in json.dumps(api_server.requests[0].body)
    assert ask(url, "claude-opus-4-1", token="tok-nobody").status_code == 401
    usage = httpx.get(f"{url}/usage", headers={"x-api-key": TOKEN}, timeout=10).json()
    records = gateway_log.wait(3)
    assert len(records) == 3
    served, unknown, usage_line = (json.loads(r.getMessage()) for r in records)
    assert served["user"] == "alice" and served["model"] == SONNET and served["status"] == 200
    assert served["tokens"] == {"input_tokens": 500, "output_tokens": 40} and served["charged"] == "usage"
    assert served["usd"] == pytest.approx(usage["total_usd"]) and served["refusal"] is None
    assert served["latency_ms"] > 0 and served["upstream_ttfb_ms"] > 0
    assert unknown["status"] == 401 and unknown["refusal"] == "auth" and unknown["user"] is None
    assert usage_line["path"] == "usage" and usage_line["status"] == 200
    everything = "\n".join(r.getMessage() + str(r.args) for r in [*records, *caplog.records])
    assert any(r.name.startswith("httpx") for r in caplog.records)  # the other loggers were captured
    for secret in (PROMPT_MARKER, ANSWER_MARKER, TOKEN, "tok-nobody", REAL_KEY):
        assert secret not in everything


def test_a_spent_budget_in_all_is_429_saying_it_never_resets(start, api_server):
    url, gw = start(per_user=3.0)
    gw.db.add("alice", SONNET, {"input_tokens": 1}, 3.5)
    response = ask(url)
    assert response.status_code == 429 and "retry-after" not in response.headers
    error = response.json()["error"]
    assert (error["type"], error["limit"], error["limit_usd"], error["resets_at"]) == (
        "budget_exceeded_error",
        "per_user",
        3.0,
        None,
    )
    assert "does not reset" in error["message"] and "$3.00" in error["message"]
    assert api_server.requests == []


def test_the_policy_file_is_read_again_when_it_changes_and_an_unreadable_one_stops_every_request(
    start, api_server, tmp_path
):
    policy = tmp_path / "managed-settings.json"
    missing = tmp_path / "later.json"
    policy.write_text(json.dumps({"availableModels": ["claude-sonnet-*"]}))
    url, _gw = start(policy_paths=[policy, missing])
    assert ask(url, "claude-opus-4-1").status_code == 403
    policy.write_text(json.dumps({"availableModels": ["claude-sonnet-*", "claude-opus-*"]}))
    api_server.add(answer())
    assert ask(url, "claude-opus-4-1").status_code == 200
    missing.write_text(json.dumps({"availableModels": ["claude-haiku-*"]}))  # a file that appears holds too
    assert ask(url, "claude-opus-4-1").status_code == 403
    policy.write_text("{broken")
    response = ask(url, SONNET)
    assert response.status_code == 503 and str(policy) in response.json()["error"]["message"]
    assert len(api_server.requests) == 1


class _Hub(BaseHTTPRequestHandler):
    tokens: ClassVar[dict[str, str]] = {}
    asked: ClassVar[list[str]] = []

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        token = self.headers.get("authorization", "").removeprefix("token ")
        self.asked.append(token)
        name = self.tokens.get(token)
        body = json.dumps({"kind": "user", "name": name} if name else {"status": 403}).encode()
        self.send_response(200 if name else 403)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def hub() -> Iterator[tuple[str, type[_Hub]]]:
    handler = type("Hub", (_Hub,), {"tokens": {"tok-a": "alice"}, "asked": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hub/api", handler
    server.shutdown()
    server.server_close()


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.asyncio
async def test_a_revoked_hub_token_stops_working_after_the_ttl(hub):
    url, handler = hub
    clock = Clock()
    auth = HubAuth(url, ttl=60, clock=clock)
    assert await auth.user("tok-a") == "alice"
    del handler.tokens["tok-a"]  # revoked in the Hub
    clock.now += 59
    assert await auth.user("tok-a") == "alice"  # still within the TTL: the cache answered
    assert handler.asked == ["tok-a"]
    clock.now += 2
    assert await auth.user("tok-a") is None  # past it: asked again, and refused
    assert handler.asked == ["tok-a", "tok-a"]
    await auth.aclose()


@pytest.mark.asyncio
async def test_the_hub_token_cache_does_not_grow_past_its_bound(hub):
    url, handler = hub
    auth = HubAuth(url, max_size=8, clock=Clock())
    for n in range(50):  # a flood of made-up tokens
        assert await auth.user(f"made-up-{n}") is None
        assert len(auth) <= 8
    assert len(auth) == 8
    assert await auth.user("tok-a") == "alice"
    for n in range(7):  # the most recently used token stays while older ones go
        await auth.user(f"again-{n}")
        assert await auth.user("tok-a") == "alice"
    assert handler.asked.count("tok-a") == 1 and len(auth) == 8
    await auth.aclose()
