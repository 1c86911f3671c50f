"""The gateway's store on PostgreSQL and SQLite: usage rows and holds in the database, so that
gateway replicas on one database enforce one budget. Two real `python -m ipy_agent.gateway`
processes on one PostgreSQL hold a per-person limit under 20 concurrent requests; a replica
killed mid-stream leaves a hold that blocks its person until the hold expires, then no longer;
an old gateway's SQLite file is migrated with its usage kept.

The check of spent and held against a limit and the insert of a hold are one step: the control
takes the store's lock away and lets every request read before any inserts, and then all of them
pass. The PostgreSQL tests start a temporary cluster from Debian's package (tests/support/postgres.py),
one for the module, a fresh database per test; they are in the `hub` suite (--full)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import httpx
import pytest

from ipy_agent.gateway.charges import BudgetRefusal, Limits
from ipy_agent.gateway.usage import UsageDB
from ipy_agent.models.base import Usage
from ipy_agent.models.pricing import estimate_cost
from tests.support.gateway_stream import open_stream
from tests.support.postgres import fresh_database
from tests.support.sse_server import ReplayServer, Reply, message_events
from tests.support.waits import Deadline, free_port, timed_out, waiting_for

SONNET = "claude-sonnet-4-5"
MAX_TOKENS = 20_000  # $0.30 of output held per request
ROOT = Path(__file__).resolve().parents[2]
T = TypeVar("T")


def request_body() -> bytes:
    return json.dumps(
        {"model": SONNET, "max_tokens": MAX_TOKENS, "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    ).encode()


HELD = estimate_cost(SONNET, Usage(input_tokens=len(request_body()) // 3 + 1, output_tokens=MAX_TOKENS))


def wait_until(what: str, check: Callable[[], T | None], seconds: float = 30) -> T:
    """`check()`'s first true value, polled until `seconds` pass (then fail, naming `what`)."""
    deadline = Deadline(seconds)
    with waiting_for(what):
        while not (value := check()):
            if deadline.passed():
                raise timed_out(what, seconds)
            time.sleep(0.05)
    return value


# --- the store -----------------------------------------------------------------------------------


@pytest.mark.hub
def test_the_store_keeps_usage_and_holds_on_postgres(cluster, tmp_path):
    url = fresh_database(cluster)
    db = UsageDB(url)
    db.add("alice", SONNET, {"input_tokens": 10, "output_tokens": 5}, 0.25)
    db.add("bob", SONNET, {"input_tokens": 1, "cache_read_input_tokens": 7}, 0.5)
    assert db.spent("alice") == (0.25, 0.25) and db.spent("carol") == (0.0, 0.0)
    # A hold counts against the limit until it is settled with its usage.
    limits = Limits(per_day=1.0)
    first = db.hold("alice", 0.5, limits)
    assert isinstance(first, int) and db.held("alice") == 0.5
    second = db.hold("alice", 0.5, limits)  # 0.25 spent + 0.5 held: under 1.0, so this one passes
    assert isinstance(second, int)
    third = db.hold("alice", 0.5, limits)
    assert isinstance(third, BudgetRefusal) and third.limit == "per_day" and third.held == 1.0
    db.settle(first, "alice", SONNET, {"input_tokens": 100, "output_tokens": 50}, 0.125)
    db.release(second)
    assert db.held("alice") == 0.0 and db.live_holds() == []
    rows = {r.user: r for r in db.report()}
    assert (rows["alice"].requests, rows["alice"].input_tokens, rows["alice"].usd) == (2, 110, 0.375)
    assert (rows["bob"].cache_read_input_tokens, [r.user for r in db.report()]) == (7, ["bob", "alice"])
    # The command line reads the same database.
    run = [sys.executable, "-m", "ipy_agent.gateway", "--db", url, "--report"]
    out = subprocess.run(
        run, capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}
    )
    assert out.returncode == 0 and "alice\t2 requests\t$0.3750" in out.stdout and "bob" in out.stdout


def race(stores: list[UsageDB], monkeypatch: pytest.MonkeyPatch, *, locked: bool) -> int:
    """20 requests of alice's at once, half through each store, each holding $0.30 under a $1
    daily budget; each reads what is spent and held, then waits (a second at most) until all 20
    have read. How many holds were granted."""
    arrived = threading.Barrier(20, timeout=1)
    read = UsageDB._held

    def read_then_wait(self: UsageDB, conn, user: str, now: float) -> float:
        value = read(self, conn, user, now)
        with contextlib.suppress(threading.BrokenBarrierError):  # the lock keeps the others out: go on
            arrived.wait()
        return value

    monkeypatch.setattr(UsageDB, "_held", read_then_wait)
    if not locked:
        monkeypatch.setattr(UsageDB, "_lock", lambda self, conn, key: None)
    with ThreadPoolExecutor(20) as pool:
        results = list(pool.map(lambda i: stores[i % 2].hold("alice", 0.3, Limits(per_day=1.0)), range(20)))
    return sum(isinstance(r, int) for r in results)


@pytest.mark.hub
@pytest.mark.parametrize("locked", [True, False], ids=["locked", "control_lock_removed"])
def test_two_stores_on_one_postgres_check_and_hold_in_one_step(cluster, monkeypatch, locked):
    url = fresh_database(cluster)
    stores = [UsageDB(url, replica="a"), UsageDB(url, replica="b")]
    granted = race(stores, monkeypatch, locked=locked)
    # 0, 0.30, 0.60, 0.90 held: four fit under $1; without the lock all 20 read $0 and pass.
    assert granted == (4 if locked else 20)
    assert stores[0].held("alice") == pytest.approx(0.3 * granted)


def test_two_stores_on_one_sqlite_file_check_and_hold_in_one_step(tmp_path, monkeypatch):
    stores = [UsageDB(tmp_path / "usage.sqlite", replica=r) for r in "ab"]
    assert race(stores, monkeypatch, locked=True) == 4


OLD_SCHEMA = """
CREATE TABLE usage (id INTEGER PRIMARY KEY, user TEXT NOT NULL, day TEXT NOT NULL, model TEXT NOT NULL,
    input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL, cache_read_input_tokens INTEGER NOT NULL,
    cache_creation_input_tokens INTEGER NOT NULL, usd REAL NOT NULL);
CREATE INDEX usage_user_day ON usage (user, day);
INSERT INTO usage VALUES (1, 'alice', '2026-01-05', 'claude-sonnet-4-5', 1000, 200, 0, 0, 0.006);
INSERT INTO usage VALUES (2, 'alice', '2026-01-06', 'claude-sonnet-4-5', 2000, 100, 500, 0, 0.0076);
"""


def test_an_old_gateways_sqlite_file_is_migrated_with_its_usage_kept(tmp_path):
    """The file the previous gateway wrote (its `usage` table alone) opens with its rows, gains
    the holds, and counts what was spent in the old days against a budget in all."""
    path = tmp_path / "ipy_agent_gateway.sqlite"
    with contextlib.closing(sqlite3.connect(path)) as old:
        old.executescript(OLD_SCHEMA)
        old.commit()
    db = UsageDB(f"sqlite:///{path}")
    (row,) = db.report()
    assert (row.user, row.requests, row.input_tokens, row.cache_read_input_tokens) == ("alice", 2, 3000, 500)
    assert db.spent("alice") == (0.0, pytest.approx(0.0136))  # nothing today, the old rows in all
    refusal = db.hold("alice", 0.01, Limits(per_user=0.0136))
    assert isinstance(refusal, BudgetRefusal) and refusal.limit == "per_user"
    hold = db.hold("alice", 0.01, Limits(per_user=1.0))
    assert isinstance(hold, int)
    db.settle(hold, "alice", SONNET, {"input_tokens": 10}, 0.001)
    db.close()
    with contextlib.closing(sqlite3.connect(path)) as reopened:
        assert reopened.execute("SELECT version FROM gateway_schema").fetchall() == [(2,)]
        assert reopened.execute("SELECT COUNT(*) FROM usage").fetchone() == (3,)
    assert UsageDB(path).report()[0].requests == 3  # opened again: nothing migrated twice


def test_an_expired_hold_is_charged_its_maximum_once_and_a_late_settle_adds_nothing(tmp_path):
    """A hold whose replica stopped renewing it no longer holds and is charged in full, once,
    whoever looks first (a report, a new hold); the replica that settles it late adds no second
    row. Control: a hold that is renewed is not charged."""
    db = UsageDB(tmp_path / "g.sqlite", hold_seconds=0.5)  # long enough for a loaded machine to renew in time
    lost = db.hold("alice", 0.30, Limits())
    kept = db.hold("bob", 0.20, Limits())
    assert isinstance(lost, int) and isinstance(kept, int)
    deadline = Deadline(10)
    while db.held("alice") and not deadline.passed():
        db.renew(kept)  # bob's replica lives
        time.sleep(0.01)
    db.renew(kept)
    assert db.held("alice") == 0.0 and db.held("bob") == pytest.approx(0.20)
    (row,) = db.report()  # the first look charges alice's lost request
    assert (row.user, row.requests, row.usd) == ("alice", 1, pytest.approx(0.30))
    assert db.spent("alice") == (pytest.approx(0.30), pytest.approx(0.30))  # a second look: still once
    db.release(kept)  # bob's request ends: nothing of his may expire from here on
    db.settle(lost, "alice", SONNET, {"input_tokens": 10}, 0.001)  # its replica was only slow
    assert [(r.user, r.requests, r.usd) for r in db.report()] == [("alice", 1, pytest.approx(0.30))]
    refusal = db.hold("alice", 0.01, Limits(per_user=0.25))
    assert isinstance(refusal, BudgetRefusal) and refusal.spent == pytest.approx(0.30) and refusal.held == 0


def test_a_store_opening_while_another_process_writes_the_file_waits_for_it(tmp_path):
    """Two replicas start on one new SQLite file: the second one's switch to the write-ahead log
    met the first one's write lock, and SQLite answers that at once, without waiting ("database
    is locked": a replica died at start in CI). It waits now, and opens once the file is free."""
    path = tmp_path / "g.sqlite"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE other_writer (x)")
    holder.execute("BEGIN IMMEDIATE")  # another process in the middle of a write
    holder.execute("INSERT INTO other_writer VALUES (1)")
    opened: list[UsageDB] = []
    opening = threading.Thread(target=lambda: opened.append(UsageDB(path)))
    opening.start()
    time.sleep(0.3)  # let the opening store meet the lock (it waits; before the fix it raised)
    holder.execute("COMMIT")
    opening.join(30)
    (db,) = opened
    assert db.report() == [] and isinstance(db.hold("alice", 0.01, Limits(per_user=1.0)), int)
    with contextlib.closing(sqlite3.connect(path)) as check:
        assert check.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    holder.close()


# --- replicas: real gateway processes on one database ---------------------------------------------


@dataclass
class Replica:
    process: subprocess.Popen[bytes]
    url: str
    log: Path


@pytest.fixture
def replicas(tmp_path: Path, api_server: ReplayServer) -> Iterator[Callable[..., list[Replica]]]:
    """`replicas(db_url, *options)` starts two `python -m ipy_agent.gateway` in front of `api_server`."""
    started: list[Replica] = []
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps({"tok-alice": "alice"}))

    def start_one(db_url: str, options: tuple[str, ...]) -> Replica:
        port, log = free_port(), tmp_path / f"replica-{len(started)}.log"
        argv = [sys.executable, "-m", "ipy_agent.gateway", "--port", str(port), "--db", db_url]
        argv += ["--tokens", str(tokens), "--upstream", api_server.url, *options]
        env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "ANTHROPIC_API_KEY": "sk-real"}
        with log.open("wb") as out:
            process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env)
        started.append(Replica(process, f"http://127.0.0.1:{port}", log))
        return started[-1]

    def answers(replica: Replica) -> bool:
        assert replica.process.poll() is None, f"the replica exited:\n{replica.log.read_text()}"
        with contextlib.suppress(httpx.HTTPError):
            return httpx.get(f"{replica.url}/usage", headers={"x-api-key": "tok-alice"}, timeout=5).is_success
        return False

    def start(db_url: str, *options: str) -> list[Replica]:
        pair = [start_one(db_url, options) for _ in range(2)]
        for replica in pair:
            wait_until(f"the gateway replica at {replica.url} to answer", functools.partial(answers, replica), 60)
        return pair

    yield start
    for replica in started:
        replica.process.kill()  # our own child, by its Popen
        replica.process.wait(10)


def answer(tail_delay: float = 0.0) -> list:
    return message_events(
        [{"type": "text", "text": "ok"}], model=SONNET, usage={"input_tokens": 100_000}, tail_delay=tail_delay
    )


@pytest.mark.hub
@pytest.mark.timeout(timeout=120)  # shorter than the hub suite's: a stuck replica fails fast
def test_two_replicas_on_one_database_hold_a_per_user_limit_under_20_concurrent_requests(cluster, replicas, api_server):
    """Each request holds $0.30 and is charged $0.30 of input; under a $1 budget in all, four
    pass whichever replica they reach, and alice ends within one held maximum of the limit."""
    url = fresh_database(cluster)
    pair = replicas(url, "--per-user-usd", "1")
    api_server.add(*(answer(tail_delay=0.3) for _ in range(20)))

    async def all_at_once() -> list[int]:
        async with httpx.AsyncClient(timeout=60) as client:

            async def ask(i: int) -> int:
                headers = {"x-api-key": "tok-alice", "content-type": "application/json"}
                response = await client.post(f"{pair[i % 2].url}/v1/messages", content=request_body(), headers=headers)
                return response.status_code

            return list(await asyncio.gather(*(ask(i) for i in range(20))))

    statuses = asyncio.run(all_at_once())
    db = UsageDB(url)  # a response is settled just after its last byte went out
    wait_until("the replicas to settle every answer", lambda: not db.live_holds())
    (row,) = db.report()
    assert row.usd <= 1.0 + HELD, f"alice spent ${row.usd:.2f} of a $1 budget in {row.requests} requests"
    assert row.usd >= 1.0 and statuses.count(200) == 4 and statuses.count(429) == 16
    assert row.requests == len(api_server.requests) == 4  # the refused never reached the API
    assert db.live_holds() == []


@pytest.mark.hub
@pytest.mark.timeout(timeout=120)  # shorter than the hub suite's: a stuck replica fails fast
def test_a_killed_replicas_hold_blocks_until_it_expires_then_is_charged(cluster, replicas, api_server):
    """Alice's budget in all ($0.25) is below one request's hold ($0.30): while her stream on
    replica A runs, replica B refuses her for what is held. A is killed mid-stream; its hold,
    renewed while the stream ran, blocks her on B until it expires (--hold-seconds 3). Then it
    holds nothing, and it is charged its held maximum (the API may have answered it), once: B
    now refuses her for what she spent."""
    url = fresh_database(cluster)
    a, b = replicas(url, "--per-user-usd", "0.25", "--hold-seconds", "3")
    db = UsageDB(url)
    api_server.add(Reply(events=answer()[:3], hold_open=True))  # message_start, ping, a block: then silence
    with contextlib.closing(open_stream(a.url, request_body())):
        (first,) = db.live_holds()
        assert (first.user, first.usd) == ("alice", pytest.approx(HELD))
        wait_until("replica A to renew its hold", lambda: db.live_holds()[0].expires_at > first.expires_at)
        a.process.kill()
        a.process.wait(10)
        refused = httpx.post(f"{b.url}/v1/messages", content=request_body(), headers={"x-api-key": "tok-alice"})
    assert refused.status_code == 429
    error = refused.json()["error"]
    assert error["limit"] == "per_user" and error["held_usd"] == pytest.approx(HELD, abs=1e-6)
    wait_until("the killed replica's hold to expire", lambda: db.held("alice") == 0.0)
    assert db.spent("alice")[1] == pytest.approx(HELD)  # the lost stream, charged its held maximum
    refused = httpx.post(f"{b.url}/v1/messages", content=request_body(), headers={"x-api-key": "tok-alice"})
    assert refused.status_code == 429  # $0.30 spent of $0.25: the charge counts
    error = refused.json()["error"]
    assert error["spent_usd"] == pytest.approx(HELD, abs=1e-6) and error["held_usd"] == 0
    (row,) = db.report()
    assert row.requests == 1 and row.usd == pytest.approx(HELD)  # charged once, not per look
