"""The gateway's load bench (bench/gateway_load.py) runs end to end on a small class: gateway
processes in front of the stand-in API, every request completed or refused at the budget, and
each person's spend in the gateway's store exactly what the API billed them, on SQLite with one
replica and on PostgreSQL with two. Its timings go to `python -m bench --only gateway`; nothing
here is timed."""

from __future__ import annotations

from pathlib import Path

from bench.gateway_load import WARMUP, run_load
from tests.support.postgres import fresh_database


def five_people(db: str, replicas: int, work: Path) -> None:
    r = run_load(
        db,
        users=5,
        replicas=replicas,
        work=work,
        rounds=4,
        think_s=(0.0, 0.05),
        per_user_usd=0.05,  # about three requests: the last rounds are refused
        direct=False,
    )
    assert r.errors == []
    assert r.completed + r.refused == 5 * (1 + 4)  # one stream each held open, then four rounds
    assert r.refused > 0 and r.completed > 5
    assert r.opened == 5
    assert r.spend_checked == 5 + WARMUP * replicas  # and the warm-up's people, one request each
    assert r.spend_mismatched == []
    assert r.spend_max_diff < 1e-9
    assert len(r.ttfb_gateway) == r.completed - 5  # every stream of the load phase timed


def test_five_people_on_sqlite_are_each_charged_what_the_api_billed(tmp_path: Path) -> None:
    five_people(f"sqlite:///{tmp_path / 'usage.sqlite'}", 1, tmp_path)


def test_five_people_over_two_replicas_on_postgresql_are_each_charged_what_the_api_billed(
    tmp_path: Path, cluster: str
) -> None:
    five_people(fresh_database(cluster), 2, tmp_path)
