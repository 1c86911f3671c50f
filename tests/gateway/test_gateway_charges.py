"""What the key gateway charges and refuses: a response that ends without its final usage (a
client that hangs up after the first events, an upstream cut mid-stream, a non-streamed body cut
short) is charged the most the request could cost; a model outside the managed policy's
`availableModels` is refused before it reaches the API; a spent budget is HTTP 429 with a JSON
body naming the limit and when it resets.

Each attack has a control: the old accounting (the usage seen so far, whatever it is) charges
the same hang-up for its input only, and a gateway without the policy forwards the model."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ipy_agent import Agent, AnthropicModel
from ipy_agent.config.policy import load_policy
from ipy_agent.gateway.auth import TokenFile
from ipy_agent.gateway.charges import Hold, Limits, SseUsage
from ipy_agent.gateway.server import Gateway
from ipy_agent.gateway.usage import UsageDB, UsageRow
from ipy_agent.models.base import Usage
from ipy_agent.models.pricing import estimate_cost
from tests.support.gateway_stream import open_stream
from tests.support.postgres import fresh_database
from tests.support.sse_server import ReplayServer, Reply, message_events

SONNET = "claude-sonnet-4-5"
MAX_TOKENS = 4_000
INPUT = 1_000  # the input tokens the API reports for each request below

Start = Callable[..., tuple[str, Gateway, UsageDB]]


@pytest.fixture
def gateway(tmp_path: Path, api_server: ReplayServer) -> Iterator[Start]:
    """`gateway(policy=..., per_day=...)` starts one in front of `api_server`: (url, gateway, db)."""
    stops: list[Any] = []

    def start(
        policy: dict[str, Any] | None = None, db_url: str | None = None, **limits: float
    ) -> tuple[str, Gateway, UsageDB]:
        tokens = tmp_path / "tokens.json"
        tokens.write_text(json.dumps({"tok-alice": "alice"}))
        loaded = None
        if policy is not None:
            path = tmp_path / "managed-settings.json"
            path.write_text(json.dumps(policy))
            loaded = load_policy([path])
        db = UsageDB(db_url or tmp_path / "usage.sqlite")
        gw = Gateway(
            api_key="sk-real",
            auth=TokenFile(tokens),
            db=db,
            limits=Limits(**limits),
            upstream=api_server.url,
            policy=loaded,
        )
        url, thread, loop = gw.start_in_thread()
        stops.append((loop, thread))
        return url, gw, db

    yield start
    for loop, thread in stops:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)


def request_body(model: str = SONNET, *, stream: bool = True) -> bytes:
    return json.dumps(
        {"model": model, "max_tokens": MAX_TOKENS, "stream": stream, "messages": [{"role": "user", "content": "hi"}]}
    ).encode()


def held(body: bytes) -> float:
    """What the gateway holds for `body`: its input at three bytes a token and its max_tokens."""
    return estimate_cost(SONNET, Usage(input_tokens=len(body) // 3 + 1, output_tokens=MAX_TOKENS))


def input_only() -> float:
    return estimate_cost(SONNET, Usage(input_tokens=INPUT, output_tokens=1))  # message_start's usage


def slow_answer() -> Reply:
    """A stream that sends its first events, then waits for the caller to go away."""
    return Reply(
        events=message_events([{"type": "text", "text": "partly"}], usage={"input_tokens": INPUT}, end=False),
        hold_open=True,
    )


def the_row(gw: Gateway, db: UsageDB, url: str) -> UsageRow:
    """The one usage row `--report` prints, checked against what `/usage` shows alice."""
    assert gw.wait_ended(1, 20), "the gateway did not settle the response"
    (row,) = db.report()
    shown = httpx.get(f"{url}/usage", headers={"x-api-key": "tok-alice"}, timeout=10).json()
    assert (shown["user"], shown["total_usd"], shown["today_usd"]) == (
        "alice",
        pytest.approx(row.usd),
        pytest.approx(row.usd),
    )
    return row


def old_accounting(monkeypatch: pytest.MonkeyPatch) -> None:
    """The defence off: a response is charged the usage seen so far, whether or not it was final."""

    def seen_so_far(self: Gateway, user: str, hold: Hold, usage: SseUsage) -> None:
        self.count(user, usage.model or hold.model, usage.tokens)

    monkeypatch.setattr(Gateway, "settle", seen_so_far)


@pytest.mark.timeout(60)
def test_a_client_that_hangs_up_after_the_first_events_is_charged_the_held_maximum(gateway, api_server):
    url, gw, db = gateway()
    api_server.add(slow_answer())
    body = request_body()
    open_stream(url, body).close()  # the kernel hangs up after the first events
    row = the_row(gw, db, url)
    assert row.usd == pytest.approx(held(body)) and row.output_tokens == MAX_TOKENS
    assert api_server.wait_disconnect(10)  # and the API's response was not read on for nothing


@pytest.mark.hub  # the hub group starts the PostgreSQL cluster
def test_a_hang_up_is_charged_the_held_maximum_on_postgresql_too(gateway, api_server, cluster):
    url, gw, db = gateway(db_url=fresh_database(cluster))
    api_server.add(slow_answer())
    body = request_body()
    open_stream(url, body).close()  # the kernel hangs up after the first events
    row = the_row(gw, db, url)
    assert row.usd == pytest.approx(held(body)) and row.output_tokens == MAX_TOKENS
    assert db.held("alice") == 0.0  # the hold became the charge, in the database every replica reads


@pytest.mark.timeout(60)
def test_control_the_old_accounting_charges_a_hang_up_its_input_only(gateway, api_server, monkeypatch):
    old_accounting(monkeypatch)
    url, gw, db = gateway()
    api_server.add(slow_answer())
    body = request_body()
    open_stream(url, body).close()  # the kernel hangs up after the first events
    row = the_row(gw, db, url)
    assert row.usd == pytest.approx(input_only()) and row.usd < held(body) / 10


def cut_stream() -> Reply:
    return Reply(
        events=message_events([{"type": "text", "text": "cut"}], usage={"input_tokens": INPUT}, end=False), cut=True
    )


@pytest.mark.timeout(60)
def test_an_upstream_cut_mid_stream_is_charged_the_held_maximum_and_the_agent_sees_it_broken(
    gateway, api_server, tmp_path
):
    url, gw, db = gateway()
    api_server.add(cut_stream())
    model = AnthropicModel(SONNET, api_key="tok-alice", base_url=url, max_retries=0, max_tokens=MAX_TOKENS)
    result = Agent(model, cwd=tmp_path).run("hi")
    assert result.stop_reason == "error"  # not a short reply taken for a whole one
    row = the_row(gw, db, url)
    assert row.output_tokens == MAX_TOKENS
    assert row.usd == pytest.approx(
        estimate_cost(SONNET, Usage(input_tokens=row.input_tokens, output_tokens=MAX_TOKENS))
    )
    assert row.usd > 10 * input_only()


@pytest.mark.timeout(60)
def test_control_the_old_accounting_charges_an_upstream_cut_its_input_only(gateway, api_server, monkeypatch):
    old_accounting(monkeypatch)
    url, gw, db = gateway()
    api_server.add(cut_stream())
    headers = {"x-api-key": "tok-alice"}
    with (
        pytest.raises(httpx.HTTPError),  # the kernel's side of the cut
        httpx.stream("POST", f"{url}/v1/messages", content=request_body(), headers=headers) as response,
    ):
        for _ in response.iter_bytes():
            pass
    assert the_row(gw, db, url).usd == pytest.approx(input_only())


def whole_message() -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": SONNET,
        "content": [{"type": "text", "text": "a long answer " * 20}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": INPUT, "output_tokens": 300},
    }


def post_plain(url: str, body: bytes) -> httpx.Response:
    return httpx.post(f"{url}/v1/messages", content=body, headers={"x-api-key": "tok-alice"}, timeout=20)


@pytest.mark.timeout(60)
def test_a_non_streamed_body_cut_short_is_charged_the_held_maximum(gateway, api_server):
    url, gw, db = gateway()
    api_server.add(Reply(body=whole_message(), short=True))
    body = request_body(stream=False)
    with pytest.raises(httpx.HTTPError):
        post_plain(url, body)
    row = the_row(gw, db, url)
    assert row.usd == pytest.approx(held(body))


@pytest.mark.timeout(60)
def test_a_whole_non_streamed_body_is_charged_its_usage(gateway, api_server):
    url, gw, db = gateway()
    api_server.add(Reply(body=whole_message()))
    assert post_plain(url, request_body(stream=False)).json()["usage"]["output_tokens"] == 300
    assert the_row(gw, db, url).usd == pytest.approx(
        estimate_cost(SONNET, Usage(input_tokens=INPUT, output_tokens=300))
    )


@pytest.mark.timeout(60)
def test_a_model_outside_available_models_is_refused_with_a_json_error_naming_it(gateway, api_server, tmp_path):
    url, _gw, db = gateway(policy={"availableModels": ["claude-sonnet-*"]})
    response = post_plain(url, request_body("claude-opus-4-1"))
    assert response.status_code == 403
    error = response.json()["error"]
    assert error["type"] == "permission_error" and "'claude-opus-4-1'" in error["message"]
    assert "claude-sonnet-*" in error["message"] and "managed policy" in error["message"]
    # The agent shows the same words and ends its run.
    model = AnthropicModel("claude-opus-4-1", api_key="tok-alice", base_url=url, max_retries=0)
    result = Agent(model, cwd=tmp_path).run("hi")
    assert result.error_kind == "permission" and "'claude-opus-4-1'" in result.text
    assert api_server.requests == [] and db.report() == []
    # A listed model goes through.
    api_server.add(message_events([{"type": "text", "text": "ok"}]))
    assert (
        Agent(AnthropicModel(SONNET, api_key="tok-alice", base_url=url, max_retries=0), cwd=tmp_path).run("hi").text
        == "ok"
    )


@pytest.mark.timeout(60)
def test_control_a_gateway_without_the_policy_forwards_any_model(gateway, api_server):
    url, _gw, _db = gateway()
    api_server.add(Reply(body=whole_message()))
    assert post_plain(url, request_body("claude-opus-4-1", stream=False)).status_code == 200
    assert [r.body["model"] for r in api_server.requests] == ["claude-opus-4-1"]


@pytest.mark.timeout(60)
def test_a_spent_budget_is_429_naming_the_limit_and_when_it_resets(gateway, api_server):
    url, _gw, db = gateway(policy={"budget": {"perDayUsd": 2}}, per_day=5)  # the policy's is stricter
    db.add("alice", SONNET, {"input_tokens": 10}, 2.5)
    response = post_plain(url, request_body())
    assert response.status_code == 429 and response.headers["x-should-retry"] == "false"
    assert 0 < int(response.headers["retry-after"]) <= 86_400
    error = response.json()["error"]
    assert error["type"] == "budget_exceeded_error" and error["limit"] == "per_day"
    assert (error["spent_usd"], error["limit_usd"]) == (2.5, 2.0)
    assert error["resets_at"].endswith("T00:00:00Z") and "$2.00 daily budget" in error["message"]
    assert api_server.requests == []


def test_the_command_line_reads_a_policy_and_refuses_to_start_on_a_broken_one(tmp_path):
    bad = tmp_path / "policy.json"
    bad.write_text("{not json")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(__file__).resolve().parents[2]), "ANTHROPIC_API_KEY": "k"}
    tokens = tmp_path / "tokens.json"
    tokens.write_text("{}")
    run = [sys.executable, "-m", "ipy_agent.gateway", "--db", str(tmp_path / "u.sqlite"), "--tokens", str(tokens)]
    out = subprocess.run([*run, "--policy", str(bad)], capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 2 and str(bad) in out.stderr and "not valid JSON" in out.stderr
