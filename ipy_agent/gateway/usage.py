"""The gateway's usage database: one row per request, with the person, the model, tokens and cost.

SQLite through the standard library: a path, or a `sqlite:///path` URL (the form JupyterHub's
`db_url` takes). Every request's row is written when its response ends, so two people's
concurrent requests are each counted once.
"""

from __future__ import annotations

import datetime as dt
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path

__all__ = ["UsageDB", "UsageRow", "db_path"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS usage (
    id INTEGER PRIMARY KEY,
    user TEXT NOT NULL,
    day TEXT NOT NULL,
    model TEXT NOT NULL,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    cache_read_input_tokens INTEGER NOT NULL,
    cache_creation_input_tokens INTEGER NOT NULL,
    usd REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS usage_user_day ON usage (user, day);
"""


def db_path(url: str) -> Path:
    """The file of `url`: a plain path or `sqlite:///path`; other databases are not supported yet."""
    if url.startswith("sqlite:///"):
        return Path(url[len("sqlite:///") :])
    if "://" in url:
        raise ValueError(
            f"the gateway keeps its usage in SQLite: give a path or a sqlite:/// URL, not {url.split('://')[0]}://..."
        )
    return Path(url)


def today() -> str:
    return dt.datetime.now(dt.UTC).date().isoformat()


@dataclass(frozen=True, kw_only=True)
class UsageRow:
    user: str
    requests: int
    input_tokens: int
    output_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int
    usd: float


class UsageDB:
    def __init__(self, url: str | Path) -> None:
        path = db_path(str(url))
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._lock = threading.Lock()
        with self._lock:
            self._db.executescript(_SCHEMA)

    def add(self, user: str, model: str, tokens: dict[str, int], usd: float) -> None:
        with self._lock:
            self._db.execute(
                "INSERT INTO usage (user, day, model, input_tokens, output_tokens, cache_read_input_tokens, "
                "cache_creation_input_tokens, usd) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    user,
                    today(),
                    model,
                    tokens.get("input_tokens", 0),
                    tokens.get("output_tokens", 0),
                    tokens.get("cache_read_input_tokens", 0),
                    tokens.get("cache_creation_input_tokens", 0),
                    usd,
                ),
            )

    def spent(self, user: str) -> tuple[float, float]:
        """(today, in all) in US dollars for `user`."""
        with self._lock:
            day = self._db.execute(
                "SELECT COALESCE(SUM(usd), 0) FROM usage WHERE user = ? AND day = ?", (user, today())
            ).fetchone()[0]
            total = self._db.execute("SELECT COALESCE(SUM(usd), 0) FROM usage WHERE user = ?", (user,)).fetchone()[0]
        return float(day), float(total)

    def report(self) -> list[UsageRow]:
        """Everyone's totals, highest cost first."""
        with self._lock:
            rows = self._db.execute(
                "SELECT user, COUNT(*), SUM(input_tokens), SUM(output_tokens), SUM(cache_read_input_tokens), "
                "SUM(cache_creation_input_tokens), SUM(usd) FROM usage GROUP BY user ORDER BY SUM(usd) DESC"
            ).fetchall()
        return [
            UsageRow(
                user=r[0],
                requests=r[1],
                input_tokens=r[2],
                output_tokens=r[3],
                cache_read_input_tokens=r[4],
                cache_creation_input_tokens=r[5],
                usd=r[6],
            )
            for r in rows
        ]

    def close(self) -> None:
        with self._lock:
            self._db.close()
