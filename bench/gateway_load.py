"""The key gateway under a class's load: many people streaming at once through N replicas on one database.

    python -m bench.gateway_load [--users 300] [--replicas 2] [--db sqlite|postgresql] [--rounds 8]

Processes: a stand-in Messages API (bench/gateway_upstream.py: 0.5 s answers in six chunks, its
own bill per person), N gateways (`python -m ipy_agent.gateway --upstream URL --db DB --tokens
FILE --per-user-usd LIMIT`, each a process of its own, on one database), and this process, the
client: one asyncio loop with httpx, each person their own token, requests spread over the
replicas round-robin. In order:

1. idle: a few warm-up requests to each replica, then the replicas' RSS;
2. open streams: the upstream holds every new stream after its first chunk; each person opens
   one stream, and once all have their first byte the replicas' RSS is read again (the
   difference over the number of streams is the memory one open stream costs); then released;
3. load: each person sends `rounds` streaming requests one after the other, with a think time
   of 0.2-1.0 s between them, after a start spread over a second; the per-person budget runs
   out about two rounds before the end, so some are refused (HTTP 429). Each request is
   completed (a stream read to its `message_stop`), refused (429 with `budget_exceeded_error`)
   or an error (anything else: another status, a stream cut short, a connection error);
4. spend: each person's total in the gateways' store (`GET /usage` with their token) against
   the upstream's own bill for them, exact (`Decimal`) at its own list prices;
5. direct: the same people with the same schedule straight to the upstream, as many streams each
   as went through the gateway: the time to first byte without the gateway, under the same load.

The time to first byte is from sending the request to the first chunk of its body (the
`message_start` the upstream writes at once), completed streams only.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import os
import random
import signal
import socket
import sqlite3
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench._table import Row  # noqa: E402
from bench.gateway_upstream import MODEL  # noqa: E402

__all__ = ["LoadResult", "bench_rows", "measure", "pct", "people", "run_load"]

API_KEY = "sk-ant-bench-not-a-key"
ROUNDS = 8
THINK_S = (0.2, 1.0)
START_SPREAD_S = 1.0
MAX_TOKENS = 1024
# A request costs about $0.018 here (bench/gateway_upstream.py's token draws at Sonnet prices):
# ROUNDS + 1 requests a person run past this about two rounds before the end.
PER_USER_USD = 0.12
WARMUP = 3  # requests per replica before the idle RSS


@dataclass(kw_only=True)
class Outcome:
    user: str
    status: str  # "completed", "refused" or "error"
    ttfb: float | None = None
    detail: str = ""


@dataclass(kw_only=True)
class LoadResult:
    db: str
    users: int
    replicas: int
    rounds: int
    think_s: tuple[float, float] = THINK_S
    per_user_usd: float = PER_USER_USD
    completed: int = 0
    refused: int = 0
    errors: list[str] = field(default_factory=list)
    opened: int = 0  # streams open at once in the memory phase
    rss_idle_kb: int = 0
    rss_open_kb: int = 0
    spend_checked: int = 0  # people whose spend was compared
    spend_max_diff: float = 0.0  # US dollars, gateway store against the upstream's bill
    spend_mismatched: list[str] = field(default_factory=list)
    over_limit_max: float = 0.0  # the most anyone spent past the per-person limit
    one_request_max: float = 0.0  # the most one request cost (the upstream's bill)
    ttfb_gateway: list[float] = field(default_factory=list)
    ttfb_direct: list[float] = field(default_factory=list)
    load_seconds: float = 0.0
    cores_used: dict[str, float] = field(default_factory=dict)  # CPU seconds / wall seconds in the load phase
    loadavg: float = 0.0
    load_requests: int = 0  # requests sent in the load phase

    def gateway_cpu_ms(self) -> float:
        """The gateways' CPU time per request of the load phase, in ms."""
        return self.cores_used.get("gateways", 0.0) * self.load_seconds / max(1, self.load_requests) * 1000

    def per_stream_kb(self) -> float:
        return (self.rss_open_kb - self.rss_idle_kb) / max(1, self.opened)


def pct(xs: list[float], q: float) -> float:
    """The q-quantile (nearest rank) of xs."""
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


@contextlib.contextmanager
def upstream() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """The stand-in API in a process of its own: (its URL, the process)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench.gateway_upstream"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().decode()
        if not line.startswith("port "):
            raise RuntimeError(f"the stand-in API did not start: {line!r}")
        yield f"http://127.0.0.1:{int(line.split()[1])}", proc
    finally:
        _stop(proc)


@contextlib.contextmanager
def gateways(
    n: int, upstream_url: str, db: str, tokens: Path, work: Path, per_user_usd: float
) -> Iterator[list[tuple[str, subprocess.Popen[bytes]]]]:
    """`n` gateway processes on one database: [(URL, process)]. Raises RuntimeError with the
    gateway's own words when one does not start."""
    procs: list[tuple[str, subprocess.Popen[bytes], Path]] = []
    env = {**os.environ, "ANTHROPIC_API_KEY": API_KEY}
    env.pop("JUPYTERHUB_API_URL", None)
    try:
        for i in range(n):
            port = _free_port()
            log = work / f"gateway-{i}.log"
            cmd = [
                sys.executable,
                "-m",
                "ipy_agent.gateway",
                "--port",
                str(port),
                "--upstream",
                upstream_url,
                "--db",
                db,
                "--tokens",
                str(tokens),
                "--per-user-usd",
                str(per_user_usd),
            ]
            with log.open("wb") as out:  # a file, not a pipe: 4xx access lines must never block it
                proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
            procs.append((f"http://127.0.0.1:{port}", proc, log))
        for _url, proc, log in procs:
            deadline = time.monotonic() + 60
            while "serving on" not in log.read_text(errors="replace"):
                if proc.poll() is not None or time.monotonic() > deadline:
                    words = log.read_text(errors="replace").strip().splitlines()
                    raise RuntimeError(f"a gateway did not start: {' / '.join(words[-3:]) or 'no output'}")
                time.sleep(0.05)
        yield [(url, proc) for url, proc, _log in procs]
    finally:
        for _url, proc, _log in procs:
            _stop(proc)


def _body(user: str, n: int) -> bytes:
    return json.dumps(
        {
            "model": MODEL,
            "max_tokens": MAX_TOKENS,
            "stream": True,
            "metadata": {"user_id": user},
            "messages": [{"role": "user", "content": f"Question {n} of {user}: what does this cell compute?"}],
        }
    ).encode()


async def _request(
    client: httpx.AsyncClient, base: str, token: str, user: str, n: int, first_byte: asyncio.Event | None = None
) -> Outcome:
    headers = {"x-api-key": token, "anthropic-version": "2023-06-01", "content-type": "application/json"}
    began = time.perf_counter()
    ttfb = None
    data = b""
    try:
        async with client.stream("POST", f"{base}/v1/messages", content=_body(user, n), headers=headers) as r:
            async for chunk in r.aiter_raw():
                if ttfb is None:
                    ttfb = time.perf_counter() - began
                    if first_byte is not None:
                        first_byte.set()
                data += chunk
            status = r.status_code
    except httpx.HTTPError as e:
        return Outcome(user=user, status="error", detail=f"{type(e).__name__}: {e}")
    if status == 200 and b"event: message_stop" in data and b"event: message_delta" in data:
        return Outcome(user=user, status="completed", ttfb=ttfb)
    if status == 429 and b"budget_exceeded_error" in data:
        return Outcome(user=user, status="refused")
    return Outcome(user=user, status="error", detail=f"HTTP {status}: {data[-200:]!r}")


_TLS = ssl.create_default_context()  # made once: httpx makes one per client otherwise (20 ms each)


def _client() -> httpx.AsyncClient:
    """One person's client, as each kernel has its own (one shared pool for hundreds of streams
    costs the client more than the gateway: httpcore scans its connections at every request)."""
    return httpx.AsyncClient(timeout=httpx.Timeout(120, connect=30), verify=_TLS)


class _RoundRobin:
    def __init__(self, urls: list[str]) -> None:
        self.urls = urls
        self.next = 0

    def __call__(self) -> str:
        url = self.urls[self.next % len(self.urls)]
        self.next += 1
        return url


@dataclass(frozen=True)
class Person:
    token: str
    user: str
    client: httpx.AsyncClient


def people(n: int) -> dict[str, str]:
    """{token: name} of `n` people (the gateway's --tokens file)."""
    return {f"tok-{i:03d}-{random.Random(i).getrandbits(64):016x}": f"student{i:03d}" for i in range(n)}


def warm_up(replicas: int) -> dict[str, str]:
    """{token: name} of the warm-up's people: one request each, so none nears a budget."""
    return {f"tok-warmup-{n}": f"warmup{n}" for n in range(WARMUP * replicas)}


async def _stats(client: httpx.AsyncClient, upstream_url: str) -> dict[str, dict[str, str]]:
    r = await client.get(f"{upstream_url}/bench/stats")
    users: dict[str, dict[str, str]] = r.json()["users"]
    return users


async def _open_streams(
    control: httpx.AsyncClient, pick: _RoundRobin, upstream_url: str, crowd: list[Person], pids: list[int]
) -> tuple[int, int, list[Outcome]]:
    """Phase 2: one stream per person held open at once; (streams open, RSS then, outcomes)."""
    await control.post(f"{upstream_url}/bench/hold")
    events = [asyncio.Event() for _ in crowd]
    tasks = []
    for i, (p, ev) in enumerate(zip(crowd, events)):
        tasks.append(asyncio.create_task(_request(p.client, pick(), p.token, p.user, 0, ev)))
        if i % 25 == 24:
            await asyncio.sleep(0.05)  # not one burst of SYNs: a class does not press Enter at once
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not all(e.is_set() for e in events):
        await asyncio.sleep(0.1)
    opened = sum(e.is_set() for e in events)
    await asyncio.sleep(0.5)  # let the replicas' allocations settle
    rss = sum(_rss_kb(pid) for pid in pids)
    await control.post(f"{upstream_url}/bench/release")
    return opened, rss, list(await asyncio.gather(*tasks))


async def _load(
    pick: _RoundRobin,
    crowd: list[Person],
    rounds: int,
    think_s: tuple[float, float],
    budget: dict[str, int] | None = None,
) -> list[Outcome]:
    """Phase 3 (and 5): each person's requests one after the other on a seeded schedule; with
    `budget`, each person sends only that many (the direct run)."""

    async def person(index: int, p: Person) -> list[Outcome]:
        rng = random.Random(index)
        await asyncio.sleep(rng.uniform(0, START_SPREAD_S))
        out = []
        for n in range(1, rounds + 1):
            if budget is None or n <= budget.get(p.user, 0):
                out.append(await _request(p.client, pick(), p.token, p.user, n))
            await asyncio.sleep(rng.uniform(*think_s))
        return out

    done = await asyncio.gather(*(person(i, p) for i, p in enumerate(crowd)))
    return [o for outcomes in done for o in outcomes]


async def _spend(pick: _RoundRobin, crowd: list[Person]) -> dict[str, float]:
    """Each person's total in the gateways' store, read through the gateways (`GET /usage`)."""

    async def stored(p: Person) -> tuple[str, float]:
        r = await p.client.get(f"{pick()}/usage", headers={"x-api-key": p.token})
        body = r.json()
        return str(body["user"]), float(body["total_usd"])

    return dict(await asyncio.gather(*(stored(p) for p in crowd)))


@contextlib.asynccontextmanager
async def _crowd(tokens: dict[str, str]) -> AsyncIterator[list[Person]]:
    crowd = [Person(t, u, _client()) for t, u in tokens.items()]
    try:
        yield crowd
    finally:
        await asyncio.gather(*(p.client.aclose() for p in crowd))


async def _gateway_phases(
    result: LoadResult, urls: list[str], pids: list[int], upstream: tuple[str, int]
) -> dict[str, int]:
    """Phases 1-4; returns how many streams each person completed in the load phase."""
    upstream_url, upstream_pid = upstream
    pick = _RoundRobin(urls)
    async with _client() as control, _crowd(people(result.users)) as crowd:
        await control.post(f"{upstream_url}/bench/reset")
        for n in range(WARMUP * len(urls)):
            o = await _request(control, pick(), f"tok-warmup-{n}", f"warmup{n}", n)
            if o.status != "completed":
                result.errors.append(f"warm-up: {o.status} {o.detail}")
        await asyncio.sleep(0.5)
        result.rss_idle_kb = sum(_rss_kb(pid) for pid in pids)

        result.opened, result.rss_open_kb, held = await _open_streams(control, pick, upstream_url, crowd, pids)
        _tally(result, held, ttfb=False)

        cpu_before = {"gateways": sum(_cpu_s(p) for p in pids), "upstream": _cpu_s(upstream_pid)}
        client_before = time.process_time()
        began = time.monotonic()
        outcomes = await _load(pick, crowd, result.rounds, result.think_s)
        result.load_seconds = time.monotonic() - began
        result.cores_used = {
            "gateways": (sum(_cpu_s(p) for p in pids) - cpu_before["gateways"]) / result.load_seconds,
            "upstream": (_cpu_s(upstream_pid) - cpu_before["upstream"]) / result.load_seconds,
            "client": (time.process_time() - client_before) / result.load_seconds,
        }
        result.loadavg = os.getloadavg()[0]
        result.load_requests = len(outcomes)
        _tally(result, outcomes, ttfb=True)

        # The gateway writes a request's row just after the stream's last byte: wait until it is there.
        warm = [Person(t, u, control) for t, u in warm_up(len(urls)).items()]
        deadline = time.monotonic() + 15
        while True:
            lines = await _stats(control, upstream_url)
            bill = {u: Decimal(line["usd"]) for u, line in lines.items()}
            store = await _spend(pick, [*crowd, *warm])
            diffs = {u: abs(float(bill.get(u, Decimal(0))) - usd) for u, usd in store.items()}
            if max(diffs.values()) < 0.005 or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.5)
        result.spend_checked = len(diffs)
        result.spend_max_diff = max(diffs.values())
        result.spend_mismatched = [
            f"{u}: store ${store[u]:.6f}, upstream ${bill.get(u, 0)}" for u, d in diffs.items() if d >= 0.005
        ]
        result.over_limit_max = max(0.0, *(store[p.user] - result.per_user_usd for p in crowd))
        result.one_request_max = max(float(Decimal(line["max_usd"])) for line in lines.values())
        billed = sum(int(line["requests"]) for line in lines.values())
        if billed != result.completed + WARMUP * len(urls):
            result.errors.append(
                f"the upstream billed {billed} requests, the client completed {result.completed + WARMUP * len(urls)}"
            )
        per_user = {p.user: 0 for p in crowd}
        for o in outcomes:
            if o.status == "completed":
                per_user[o.user] += 1
        return per_user


async def _direct_phase(result: LoadResult, upstream_url: str, budget: dict[str, int]) -> None:
    direct = {f"direct-{i:03d}": user for i, user in enumerate(people(result.users).values())}
    async with _crowd(direct) as crowd:
        outcomes = await _load(_RoundRobin([upstream_url]), crowd, result.rounds, result.think_s, budget)
    for o in outcomes:
        if o.status == "completed" and o.ttfb is not None:
            result.ttfb_direct.append(o.ttfb)
        elif o.status != "completed":
            result.errors.append(f"direct: {o.detail}")


def _tally(result: LoadResult, outcomes: list[Outcome], *, ttfb: bool) -> None:
    for o in outcomes:
        if o.status == "completed":
            result.completed += 1
            if ttfb and o.ttfb is not None:
                result.ttfb_gateway.append(o.ttfb)
        elif o.status == "refused":
            result.refused += 1
        else:
            result.errors.append(o.detail)


def run_load(
    db: str,
    *,
    users: int,
    replicas: int,
    work: Path,
    rounds: int = ROUNDS,
    think_s: tuple[float, float] = THINK_S,
    per_user_usd: float = PER_USER_USD,
    label: str = "",
    direct: bool = True,
) -> LoadResult:
    """The five phases against `replicas` gateways on the database `db` (a path or URL);
    `direct=False` leaves out the last (the direct run, for timing only)."""
    result = LoadResult(
        db=label or db, users=users, replicas=replicas, rounds=rounds, think_s=think_s, per_user_usd=per_user_usd
    )
    tokens = work / "tokens.json"
    tokens.write_text(json.dumps({**people(users), **warm_up(replicas)}))
    with upstream() as (upstream_url, up_proc):
        with gateways(replicas, upstream_url, db, tokens, work, per_user_usd) as gws:
            completed = asyncio.run(
                _gateway_phases(result, [u for u, _ in gws], [p.pid for _, p in gws], (upstream_url, up_proc.pid))
            )
        if direct:
            asyncio.run(_direct_phase(result, upstream_url, completed))
    return result


def measure(kind: str, *, users: int, replicas: int, rounds: int = ROUNDS) -> LoadResult | str:
    """One configuration on SQLite or PostgreSQL; a string says why it was not measured."""
    with tempfile.TemporaryDirectory(prefix="ipy_agent_gateway_load_") as tmp:
        work = Path(tmp)
        if kind == "sqlite":
            return run_load(
                f"sqlite:///{work / 'usage.sqlite'}",
                users=users,
                replicas=replicas,
                rounds=rounds,
                work=work,
                label="SQLite",
            )
        try:
            from tests.support.postgres import postgres_cluster  # the gateway's PostgreSQL tests' own cluster
        except ImportError as e:
            return f"tests/support/postgres.py is not on this branch ({e})"
        try:
            with postgres_cluster(work / "pg") as url:  # the tests' cluster: fsync off
                return run_load(url, users=users, replicas=replicas, rounds=rounds, work=work, label="PostgreSQL")
        except RuntimeError as e:
            return str(e)


def commit_ms(work: Path) -> float:
    """What one committed SQLite write costs on this disk (its fsync), in ms: a store's floor."""
    db = sqlite3.connect(work / "fsync.sqlite", isolation_level=None)
    try:
        db.execute("CREATE TABLE t (x INTEGER)")
        began = time.perf_counter()
        for i in range(20):
            db.execute("INSERT INTO t VALUES (?)", (i,))
        return (time.perf_counter() - began) / 20 * 1000
    finally:
        db.close()


CONFIGS = (("postgresql", 2, "PostgreSQL, 2 replicas"), ("sqlite", 1, "SQLite, 1 replica"))
FEWER = (50, 20)  # the same configuration with smaller classes: where the time goes as the class grows
MEMORY_TARGET_KB = 100  # a class of 300 in 30 MB of one replica


def bench_rows(quick: bool = False, users: int = 300) -> list[Row]:
    """The rows of `python -m bench --only gateway`: for each configuration, requests, spend,
    added time to first byte and memory per open stream (or one row saying why not measured)."""
    rounds = 4 if quick else ROUNDS
    with tempfile.TemporaryDirectory() as tmp:
        fsync = commit_ms(Path(tmp))
    rows: list[Row] = []
    for kind, replicas, label in CONFIGS:
        for n in (users, *FEWER):
            r = measure(kind, users=n, replicas=replicas, rounds=rounds)
            name = f"key gateway, {n} streaming users, {label}"
            if isinstance(r, str):
                rows.append(Row.unmeasured(name, f"not measured: {r}"))
                break
            if n == users:
                rows += _rows_of(r, name, fsync)
                continue
            # the smaller class: the time to first byte, and whether it too had no errors and exact spends
            _, spend, first, memory = _rows_of(r, name, fsync)
            rows.append(
                dataclasses.replace(
                    first,
                    how=f"as above with {n} people: {r.completed:,} completed, {r.refused:,} refused, "
                    f"{len(r.errors)} errors, spends {'exact' if spend.met else 'NOT exact'}, {memory.ours} "
                    f"per open stream; {_pace(r)}.",
                    note=" ".join(x.note for x in (first, spend) if x.note),
                )
            )
    return rows


def _pace(r: LoadResult) -> str:
    """How fast the load phase went and what it took of the machine."""
    cores = ", ".join(f"{k} {v:.2f}" for k, v in r.cores_used.items())
    return (
        f"load phase {r.load_seconds:.0f} s ({r.load_requests / max(r.load_seconds, 1e-9):.0f} requests/s), the "
        f"gateways' CPU {r.gateway_cpu_ms():.1f} ms per request; cores used: {cores}; load average {r.loadavg:.1f}"
    )


def _rows_of(r: LoadResult, name: str, fsync_ms: float) -> list[Row]:
    g50, g95 = pct(r.ttfb_gateway, 0.5), pct(r.ttfb_gateway, 0.95)
    d50, d95 = pct(r.ttfb_direct, 0.5), pct(r.ttfb_direct, 0.95)
    load = (
        f"{r.users} people, {r.rounds} streaming requests each one after the other (think time "
        f"{r.think_s[0]}-{r.think_s[1]} s) after one held open, round-robin over {r.replicas} gateway process(es), "
        f"a stand-in API answering in 0.5 s (six chunks); {_pace(r)} on 2 cores; a committed SQLite write on "
        f"this disk {fsync_ms:.1f} ms."
    )
    return [
        Row(
            metric=f"{name}: requests",
            ours=f"{r.completed:,} completed, {r.refused:,} refused (429), {len(r.errors)} errors",
            peer="",
            ratio=None,
            target="0 errors",
            met=not r.errors,
            how=f"{load} Completed: a stream read to its message_stop; refused: 429 budget_exceeded_error "
            f"(the per-person budget, ${r.per_user_usd}, runs out about two rounds before the end); anything else "
            "is an error.",
            note=f"Errors: {r.errors[:3]}" if r.errors else "",
        ),
        Row(
            metric=f"{name}: each person's spend, the gateways' store against the API's own bill",
            ours=f"largest difference ${r.spend_max_diff:.6f}",
            peer=f"{r.spend_checked} people; most past the budget ${r.over_limit_max:.4f} "
            f"(one request at most ${r.one_request_max:.4f})",
            ratio=None,
            target="exact to the cent",
            met=r.spend_checked == r.users + WARMUP * r.replicas and not r.spend_mismatched,
            how="each person's total through the gateways (GET /usage with their token) against what the stand-in "
            "API billed them (metadata.user_id of each request, its own list prices, Decimal), warm-up included.",
            note=f"Mismatched: {r.spend_mismatched[:3]}" if r.spend_mismatched else "",
        ),
        Row(
            metric=f"{name}: time to first byte added by the gateway, p95",
            ours=f"+{(g95 - d95) * 1000:.1f} ms (p95 {g95 * 1000:.1f} ms, p50 {g50 * 1000:.1f} ms)",
            peer=f"direct p95 {d95 * 1000:.1f} ms, p50 {d50 * 1000:.1f} ms",
            ratio=g95 / d95 if d95 else None,
            target="<= +10 ms",
            met=g95 - d95 <= 0.010,
            how="from sending a request to the first chunk of its body (message_start, written at once), "
            f"{len(r.ttfb_gateway):,} completed streams through the gateways against {len(r.ttfb_direct):,} straight "
            "to the stand-in API with the same people, schedule and number of streams each, right after.",
        ),
        Row(
            metric=f"{name}: memory per open stream",
            ours=f"{r.per_stream_kb():.0f} KB ({r.opened} of {r.users} streams open)",
            peer=f"RSS idle {r.rss_idle_kb / 1024:.1f} MB, with the streams open {r.rss_open_kb / 1024:.1f} MB",
            ratio=None,
            target=f"<= {MEMORY_TARGET_KB} KB, every stream open",
            met=r.opened == r.users and r.per_stream_kb() <= MEMORY_TARGET_KB,
            how="the stand-in API holds every new stream after its first chunk; each person opens one; once all "
            "have their first byte (or after 30 s), the gateway processes' RSS (summed) less their RSS after a "
            "warm-up, over the streams open.",
        ),
    ]


def summary(r: LoadResult) -> str:
    g50, g95 = pct(r.ttfb_gateway, 0.5), pct(r.ttfb_gateway, 0.95)
    d50, d95 = (pct(r.ttfb_direct, 0.5), pct(r.ttfb_direct, 0.95)) if r.ttfb_direct else (0.0, 0.0)
    return (
        f"{r.db}, {r.replicas} replica(s), {r.users} users x {r.rounds} rounds (+1 held open): "
        f"{r.completed} completed, {r.refused} refused, {len(r.errors)} errors {r.errors[:3]}\n"
        f"  spend: {r.spend_checked} people, max difference ${r.spend_max_diff:.9f}; mismatched {r.spend_mismatched[:3]}; "
        f"most past the limit ${r.over_limit_max:.4f} (one request at most ${r.one_request_max:.4f})\n"
        f"  first byte: gateway p50 {g50 * 1e3:.1f} ms p95 {g95 * 1e3:.1f} ms; direct p50 {d50 * 1e3:.1f} ms "
        f"p95 {d95 * 1e3:.1f} ms; added p50 {(g50 - d50) * 1e3:.1f} ms p95 {(g95 - d95) * 1e3:.1f} ms\n"
        f"  memory: {r.opened} streams open, RSS idle {r.rss_idle_kb / 1024:.1f} MB, open {r.rss_open_kb / 1024:.1f} MB, "
        f"{r.per_stream_kb():.1f} KB per stream\n"
        f"  {_pace(r)}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.gateway_load", description=__doc__.splitlines()[0])
    ap.add_argument("--users", type=int, default=300)
    ap.add_argument("--replicas", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=ROUNDS)
    ap.add_argument("--db", choices=("sqlite", "postgresql"), default="sqlite")
    args = ap.parse_args()
    r = measure(args.db, users=args.users, replicas=args.replicas, rounds=args.rounds)
    print(f"not measured: {r}" if isinstance(r, str) else summary(r))


if __name__ == "__main__":
    main()
