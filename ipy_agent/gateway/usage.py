"""The gateway's store: one row per answered request (the person, the model, tokens and cost),
and the holds of the requests in flight. It is the gateway's one source of truth: several
gateway processes on one database enforce the same budgets.

`--db` is a SQLite path, a `sqlite:///path` URL (the form JupyterHub's `db_url` takes), or a
PostgreSQL URL (`postgresql://user:password@host:port/db`, through psycopg 3). One code path
serves both (SQLAlchemy Core); the schema is created, or migrated from an older gateway's
file, when the store opens. SQLite runs in WAL mode with synchronous=NORMAL (`_sqlite_connect`):
a process crash loses no commit, a power loss may lose the last few.

A hold (`holds`: id, user, day, usd, replica, expires_at) is the most one request in flight
can cost. `hold()` checks what the person spent and holds against the limits and inserts the
new hold in one transaction under the person's lock (`pg_advisory_xact_lock` on PostgreSQL,
`BEGIN IMMEDIATE` on SQLite), so requests spread over replicas cannot all pass the check on the
same spending: only the one running when a limit is crossed can end past it. `settle()` deletes
a hold and writes its usage row in one transaction. A hold carries an expiry that its replica
renews while the response streams (`renew()`); one past its expiry no longer holds: it is
charged in full (a usage row of its held maximum, model `LOST_MODEL`), as any response that ends
without its final usage is, since the API may well have answered a request whose replica
crashed. So the holds of a replica that crashed stop blocking its people after `hold_seconds`,
and what they may have cost is counted once: the expired hold is claimed by one transaction's
`DELETE ... RETURNING`, and a replica that settles a hold already charged so adds nothing.
"""

from __future__ import annotations

import datetime as dt
import os
import socket
import sqlite3
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

try:
    import sqlalchemy as sa
    from sqlalchemy import event
except ImportError as e:  # pragma: no cover - an install without the extra
    raise ImportError("the key gateway needs SQLAlchemy: pip install 'ipy_agent[hub]'") from e

from .charges import BudgetRefusal, Limits, over_budget

LOST_MODEL = "(no final usage: its gateway stopped)"
SQLITE_WAL_WAIT = 30.0  # seconds a starting store waits for another process to let go of the file  # the model of a charged expired hold

__all__ = ["LiveHold", "UsageDB", "UsageRow", "engine_url"]

SCHEMA_VERSION = 2  # 1: the `usage` table alone (SQLite); 2: `holds`, and this version in `gateway_schema`
DEFAULT_HOLD_SECONDS = 60.0

_metadata = sa.MetaData()
_usage = sa.Table(
    "usage",
    _metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("user", sa.Text, nullable=False),
    sa.Column("day", sa.Text, nullable=False),
    sa.Column("model", sa.Text, nullable=False),
    sa.Column("input_tokens", sa.Integer, nullable=False),
    sa.Column("output_tokens", sa.Integer, nullable=False),
    sa.Column("cache_read_input_tokens", sa.Integer, nullable=False),
    sa.Column("cache_creation_input_tokens", sa.Integer, nullable=False),
    sa.Column("usd", sa.Double, nullable=False),
    sa.Index("usage_user_day", "user", "day"),
)
_holds = sa.Table(
    "holds",
    _metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("user", sa.Text, nullable=False),
    sa.Column("day", sa.Text, nullable=False),
    sa.Column("usd", sa.Double, nullable=False),
    sa.Column("replica", sa.Text, nullable=False),
    sa.Column("expires_at", sa.Double, nullable=False),  # seconds since the epoch
    sa.Index("holds_user", "user"),
)
_schema = sa.Table("gateway_schema", _metadata, sa.Column("version", sa.Integer, nullable=False))


def engine_url(url: str | Path) -> sa.URL:
    """The SQLAlchemy URL of `--db`: a path or `sqlite:///path`, or a PostgreSQL URL (psycopg 3)."""
    text = str(url)
    if text.startswith(("postgresql://", "postgres://", "postgresql+psycopg://")):
        return sa.make_url(text).set(drivername="postgresql+psycopg")
    if text.startswith("sqlite:///"):
        text = text[len("sqlite:///") :]
    elif "://" in text:
        raise ValueError(
            "the gateway keeps its usage in SQLite or PostgreSQL: give a path, a sqlite:/// URL or a "
            f"postgresql:// URL, not {text.split('://')[0]}://..."
        )
    return sa.URL.create("sqlite", database=str(Path(text)))


def today() -> str:
    return dt.datetime.now(dt.UTC).date().isoformat()


def _replica_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


@dataclass(frozen=True, kw_only=True)
class UsageRow:
    user: str
    requests: int
    input_tokens: int
    output_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int
    usd: float


@dataclass(frozen=True, kw_only=True)
class LiveHold:
    """A hold that still counts: a request in flight on some replica."""

    id: int
    user: str
    usd: float
    replica: str
    expires_at: float


class UsageDB:
    """The store. `replica` names this process in the holds it makes; `hold_seconds` is how long
    a hold counts unless its replica renews it."""

    def __init__(
        self, url: str | Path, *, hold_seconds: float = DEFAULT_HOLD_SECONDS, replica: str | None = None
    ) -> None:
        self.url = engine_url(url)
        self.hold_seconds = hold_seconds
        self.replica = replica or _replica_name()
        self.postgres = self.url.get_backend_name() == "postgresql"
        if self.postgres:
            try:
                import psycopg  # noqa: F401
            except ImportError:
                raise ValueError("a PostgreSQL --db needs the psycopg driver: pip install 'ipy_agent[hub]'") from None
            self._engine = sa.create_engine(self.url, pool_pre_ping=True)
        else:
            Path(self.url.database or ".").parent.mkdir(parents=True, exist_ok=True)
            self._engine = sa.create_engine(self.url, connect_args={"check_same_thread": False, "timeout": 30})
            event.listen(self._engine, "connect", _sqlite_connect)
            event.listen(self._engine, "begin", _sqlite_begin)
        self._closed = False
        self._migrate()

    def __repr__(self) -> str:
        return f"UsageDB({self.url.render_as_string(hide_password=True)!r}, replica={self.replica!r})"

    def _migrate(self) -> None:
        """Create what is missing (a new database, or a version-1 SQLite file's `holds`), under
        one lock, so replicas starting together do not both create the tables."""
        with self._engine.begin() as conn:
            self._lock(conn, "schema")
            _metadata.create_all(conn)
            version = conn.execute(sa.select(sa.func.max(_schema.c.version))).scalar()
            if version is None:
                conn.execute(sa.insert(_schema).values(version=SCHEMA_VERSION))
            elif version > SCHEMA_VERSION:
                raise ValueError(
                    f"the gateway's database was made by a newer gateway (schema {version}; this one knows {SCHEMA_VERSION})"
                )
            elif version < SCHEMA_VERSION:
                conn.execute(sa.update(_schema).values(version=SCHEMA_VERSION))

    def _lock(self, conn: sa.Connection, key: str) -> None:
        """Serialize the transactions on `key` (a person, or the schema) until `conn` commits.
        SQLite's BEGIN IMMEDIATE already holds the whole file's write lock."""
        if self.postgres:
            conn.execute(sa.text("SELECT pg_advisory_xact_lock(hashtext(:key))"), {"key": f"ipy_agent.gateway:{key}"})

    # -- holds -------------------------------------------------------------------------------------

    def hold(self, user: str, usd: float, limits: Limits) -> int | BudgetRefusal:
        """Hold `usd` for a request of `user` (its id), or the refusal of `user` at a limit: what
        they spent and hold is checked and the hold inserted atomically."""
        now = time.time()
        with self._engine.begin() as conn:
            self._lock(conn, user)
            self._charge_expired(conn, now, user)
            day, total = self._spent(conn, user)
            refusal = over_budget(user, day, total, self._held(conn, user, now), limits)
            if refusal is not None:
                return refusal
            row = dict(user=user, day=today(), usd=usd, replica=self.replica, expires_at=now + self.hold_seconds)
            key = conn.execute(sa.insert(_holds).values(**row)).inserted_primary_key
            assert key is not None  # a single-row insert
            return int(key[0])

    def renew(self, hold_id: int) -> bool:
        """Keep a hold counting for `hold_seconds` more; whether it was renewed (False: it was
        gone, or the database did not answer this time)."""
        try:
            with self._engine.begin() as conn:
                done = conn.execute(
                    sa.update(_holds).where(_holds.c.id == hold_id).values(expires_at=time.time() + self.hold_seconds)
                )
                return done.rowcount > 0
        except sa.exc.OperationalError:
            return False

    def release(self, hold_id: int) -> None:
        """Drop a hold without a charge (the API answered with an error)."""
        with self._engine.begin() as conn:
            conn.execute(sa.delete(_holds).where(_holds.c.id == hold_id))

    def settle(self, hold_id: int, user: str, model: str, tokens: dict[str, int], usd: float) -> None:
        """Replace a hold with its usage row, in one transaction. A hold that expired before its
        answer ended was charged its held maximum already (`_charge_expired`): nothing is added."""
        with self._engine.begin() as conn:
            self._lock(conn, user)
            if conn.execute(sa.delete(_holds).where(_holds.c.id == hold_id)).rowcount == 0:
                return
            conn.execute(sa.insert(_usage).values(_usage_row(user, model, tokens, usd)))

    def held(self, user: str) -> float:
        """What `user`'s requests in flight hold, on every replica, in US dollars."""
        with self._engine.begin() as conn:
            return self._held(conn, user, time.time())

    def live_holds(self) -> list[LiveHold]:
        """Every hold that still counts, on every replica."""
        with self._engine.begin() as conn:
            rows = conn.execute(
                sa.select(_holds.c.id, _holds.c.user, _holds.c.usd, _holds.c.replica, _holds.c.expires_at)
                .where(_holds.c.expires_at >= time.time())
                .order_by(_holds.c.id)
            ).all()
        return [LiveHold(id=r[0], user=r[1], usd=r[2], replica=r[3], expires_at=r[4]) for r in rows]

    # -- usage -------------------------------------------------------------------------------------

    def add(self, user: str, model: str, tokens: dict[str, int], usd: float) -> None:
        """A usage row without a hold (what an administrator adds; the gateway itself settles)."""
        with self._engine.begin() as conn:
            self._lock(conn, user)
            conn.execute(sa.insert(_usage).values(_usage_row(user, model, tokens, usd)))

    def spent(self, user: str) -> tuple[float, float]:
        """(today, in all) in US dollars for `user`."""
        with self._engine.begin() as conn:
            self._charge_expired(conn, time.time(), user)
            return self._spent(conn, user)

    def report(self) -> list[UsageRow]:
        """Everyone's totals, highest cost first."""
        c = _usage.c
        query = (
            sa.select(
                c.user,
                sa.func.count(),
                sa.func.sum(c.input_tokens),
                sa.func.sum(c.output_tokens),
                sa.func.sum(c.cache_read_input_tokens),
                sa.func.sum(c.cache_creation_input_tokens),
                sa.func.sum(c.usd),
            )
            .group_by(c.user)
            .order_by(sa.func.sum(c.usd).desc(), c.user)
        )
        with self._engine.begin() as conn:
            self._charge_expired(conn, time.time())
            rows = conn.execute(query).all()
        return [
            UsageRow(
                user=r[0],
                requests=int(r[1]),
                input_tokens=int(r[2]),
                output_tokens=int(r[3]),
                cache_read_input_tokens=int(r[4]),
                cache_creation_input_tokens=int(r[5]),
                usd=float(r[6]),
            )
            for r in rows
        ]

    def ping(self) -> None:
        """Raise unless the database answers (what `/health` asks)."""
        if self._closed:
            raise RuntimeError("the store is closed")
        with self._engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))

    def close(self) -> None:
        self._closed = True
        self._engine.dispose()

    def _charge_expired(self, conn: sa.Connection, now: float, user: str | None = None) -> None:
        """Charge the holds past their expiry (of `user`, or everyone's) their held maximum. The
        delete claims each row once, whichever replica runs it first."""
        expired = _holds.c.expires_at < now
        where = expired if user is None else sa.and_(expired, _holds.c.user == user)
        claimed = conn.execute(sa.delete(_holds).where(where).returning(_holds.c.user, _holds.c.day, _holds.c.usd))
        for who, day, usd in claimed.all():
            conn.execute(sa.insert(_usage).values({**_usage_row(who, LOST_MODEL, {}, float(usd)), "day": day}))

    def _spent(self, conn: sa.Connection, user: str) -> tuple[float, float]:
        c = _usage.c
        day_sum = sa.func.coalesce(sa.func.sum(sa.case((c.day == today(), c.usd), else_=0.0)), 0.0)
        row = conn.execute(sa.select(day_sum, sa.func.coalesce(sa.func.sum(c.usd), 0.0)).where(c.user == user)).one()
        return float(row[0]), float(row[1])

    def _held(self, conn: sa.Connection, user: str, now: float) -> float:
        c = _holds.c
        held = conn.execute(
            sa.select(sa.func.coalesce(sa.func.sum(c.usd), 0.0)).where(c.user == user, c.expires_at >= now)
        ).scalar()
        return float(held or 0.0)


def _usage_row(user: str, model: str, tokens: dict[str, int], usd: float) -> dict[str, str | int | float]:
    return {
        "user": user,
        "day": today(),
        "model": model,
        "input_tokens": tokens.get("input_tokens", 0),
        "output_tokens": tokens.get("output_tokens", 0),
        "cache_read_input_tokens": tokens.get("cache_read_input_tokens", 0),
        "cache_creation_input_tokens": tokens.get("cache_creation_input_tokens", 0),
        "usd": usd,
    }


def _sqlite_connect(dbapi_connection: sqlite3.Connection, _record: object) -> None:
    dbapi_connection.isolation_level = None  # the driver's own BEGIN off: the one below is sent
    # Write-ahead log: a commit appends to the log (one fsync at a checkpoint, not two per
    # commit), and readers do not wait for the writer. With synchronous=NORMAL a commit is not
    # lost when the gateway's process crashes, only the last ones on a power loss or an OS crash.
    # The mode is kept in the file: only the first connection ever switches it. The switch needs
    # the file to itself, and SQLite answers "database is locked" at once (no busy wait) while
    # another process holds it, as a second replica starting at the same moment does: retried.
    deadline = time.monotonic() + SQLITE_WAL_WAIT
    while dbapi_connection.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
        try:
            dbapi_connection.execute("PRAGMA journal_mode=WAL")
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    dbapi_connection.execute("PRAGMA synchronous=NORMAL")


def _sqlite_begin(conn: sa.Connection) -> None:
    conn.exec_driver_sql("BEGIN IMMEDIATE")  # the write lock first: a check and its insert are one step
