"""What this person has spent, kept across kernels: per day and in all, for the policy's budgets.

A small JSON file in the person's ipy_agent directory (`~/.ipy_agent/spending.json`, or
`$IPY_AGENT_CONFIG_DIR`), written only while a policy sets a per-day or per-user budget. It is
the kernel's own count, which a person who owns the file can change: a budget that must hold
against the person is enforced by the key gateway (`python -m ipy_agent.gateway`), which keeps
its own database on the server.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

from ipy_agent.mcp.config import user_config_dir

__all__ = ["SpendingLedger", "today"]


def today() -> str:
    return dt.datetime.now(dt.UTC).date().isoformat()


class SpendingLedger:
    """`{"total": usd, "days": {"2026-12-01": usd}}` in one file; a bad file counts from zero again."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else user_config_dir() / "spending.json"

    def _read(self) -> tuple[float, dict[str, float]]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            days = {str(k): float(v) for k, v in dict(data.get("days", {})).items()}
            return float(data.get("total", 0.0)), days
        except (OSError, ValueError, TypeError, AttributeError):
            return 0.0, {}

    def spent(self) -> tuple[float, float]:
        """(today, in all) in US dollars."""
        total, days = self._read()
        return days.get(today(), 0.0), total

    def add(self, usd: float) -> None:
        if usd <= 0:
            return
        total, days = self._read()
        day = today()
        days = {day: days.get(day, 0.0) + usd}  # only today's figure is needed again
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"total": total + usd, "days": days}), encoding="utf-8")
        tmp.replace(self.path)
