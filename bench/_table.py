"""The table `python -m bench` prints and the RESULTS.md it writes: one row per metric.

Every row is a ratio of two things measured in the same process run (ours and a peer, or ours
and a baseline), so a faster or slower machine does not change the verdict; the absolute
numbers are printed too, for the record.
"""

from __future__ import annotations

import contextlib
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata

__all__ = ["Row", "machine", "paired", "render_markdown", "render_text"]


@dataclass(frozen=True, kw_only=True)
class Row:
    metric: str
    ours: str
    peer: str
    ratio: float | None  # ours / peer; None when the row is not a ratio
    target: str
    met: bool | None  # None: not measured (say why in `note`)
    how: str  # one sentence on how it was measured
    note: str = ""

    @classmethod
    def unmeasured(cls, metric: str, note: str) -> Row:
        """A row with no numbers: `note` says why (not measured, or the suite failed)."""
        return cls(metric=metric, ours="", peer="", ratio=None, target="", met=None, how="", note=note)


def paired(a: Callable[[], float], b: Callable[[], float], reps: int) -> tuple[list[float], list[float]]:
    """Run `a` and `b` alternately `reps` times (order flipped every round) after one warm-up
    each; each callable returns its own measurement. Drift in machine load hits both alike."""
    a()
    b()
    xs: list[float] = []
    ys: list[float] = []
    for i in range(reps):
        if i % 2 == 0:
            xs.append(a())
            ys.append(b())
        else:
            ys.append(b())
            xs.append(a())
    return xs, ys


def median_ratio(xs: list[float], ys: list[float]) -> float:
    return statistics.median(x / y for x, y in zip(xs, ys))


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = ""
    try:
        pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        mem = f", {pages / 2**30:.0f} GiB"
    except (ValueError, OSError):
        pass
    load = ", load {:.1f} {:.1f} {:.1f}".format(*os.getloadavg()) if hasattr(os, "getloadavg") else ""
    versions = []
    for pkg in ("ipy_agent", "anthropic", "pydantic-ai-slim", "ipywidgets", "ipykernel"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            versions.append(f"{pkg} {metadata.version(pkg)}")
    rg = ""
    try:
        from ipy_agent.tools.search.ripgrep import find_rg

        rg = subprocess.run([find_rg(), "--version"], capture_output=True, text=True).stdout.split("\n")[0]
    except Exception:
        pass
    return (
        f"{platform.system()} {platform.release()} {platform.machine()}, {cpu}, {os.cpu_count()} CPUs{mem}{load}; "
        f"Python {sys.version.split()[0]}; {'; '.join(versions)}{'; ' + rg if rg else ''}; "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
    )


def _verdict(row: Row) -> str:
    return "met" if row.met else ("not measured" if row.met is None else "MISSED")


def render_text(rows: list[Row]) -> str:
    head = ("metric", "ours", "peer", "ratio", "target", "verdict")
    body = [
        (r.metric, r.ours, r.peer, "" if r.ratio is None else f"{r.ratio:.2f}x", r.target, _verdict(r)) for r in rows
    ]
    widths = [max(len(str(c)) for c in col) for col in zip(head, *body)]
    lines = [
        "  ".join(str(c).ljust(w) for c, w in zip(line, widths)).rstrip()
        for line in (head, tuple("-" * w for w in widths), *body)
    ]
    notes = [f"- {r.metric}: {r.note}" for r in rows if r.note]
    return "\n".join(lines + (["", *notes] if notes else []))


def render_markdown(
    rows: list[Row], machine_line: str, command: str, seconds: float, sections: list[str] | None = None
) -> str:
    out = [
        "# Benchmark results",
        "",
        f"Written by `{command}` in {seconds:.0f} s on: {machine_line}.",
        "",
        "Each ratio is ours / the peer, both measured in the same process run, alternating, after a warm-up;",
        "medians over the repetitions. Timings are never asserted in tests; this file is the record.",
        "",
        "| Metric | Ours | Peer | Ratio | Target | Verdict |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        ratio = "" if r.ratio is None else f"{r.ratio:.2f}x"
        cells = [r.metric, r.ours, r.peer, ratio, r.target, _verdict(r)]
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    out += ["", "## How each row is measured", ""]
    for r in rows:
        out.append(f"- **{r.metric}**: {r.how}" + (f" {r.note}" if r.note else ""))
    for section in sections or ():
        out += ["", section.rstrip("\n")]
    return "\n".join(out) + "\n"
