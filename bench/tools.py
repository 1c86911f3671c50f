"""Benchmarks for the built-in tools, as ratios against the command-line tools they stand in for.

Run: /work/venv/bin/python bench/tools.py [--reps N] [--skip-read]

1. Grep (and Glob) against raw `rg` on a large tree (this venv's site-packages), same query:
   the tool adds process start-up through asyncio, parsing, mtime sorting and paging; the
   target is a median within 1.2x of ripgrep alone.
2. Read of a line range near the end of a generated 1 GB file against `tail`: the target is at
   most 2x the time and at most +50 MB of memory (the file must be streamed, never loaded).
   Read runs in a child process so its peak memory is its own.

Prints tables; asserts nothing (timings belong here, not in tests).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

from ipy_agent.contract.read_state import ReadState
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.tools.search.glob_tool import GlobTool
from ipy_agent.tools.search.grep import GrepTool
from ipy_agent.tools.search.ripgrep import find_rg

SITE = Path(sysconfig.get_paths()["purelib"])
GIB = 1 << 30
LINE = b"the quick brown fox jumps over the lazy dog; 0123456789 abcdefgh\n"  # 66 bytes


def median_seconds(fn, reps: int) -> float:
    fn()  # warm the page cache and any lazy imports
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def paired_medians(a, b, reps: int) -> tuple[float, float, float, float]:
    """Medians of `a` and `b` run alternately (order flipped every round), the median of the
    per-round ratios b/a, and the ratio of the best times. On a shared, noisy machine the paired ratio is the steadier
    number: the drift between rounds hits both sides of a pair alike."""
    a()
    b()
    ta: list[float] = []
    tb: list[float] = []
    for i in range(reps):
        for fn, times in ((a, ta), (b, tb)) if i % 2 == 0 else ((b, tb), (a, ta)):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
    ratio = statistics.median(y / x for x, y in zip(ta, tb))
    return statistics.median(ta), statistics.median(tb), ratio, min(tb) / min(ta)


def print_table(title: str, header: tuple[str, ...], rows: list[tuple]) -> None:
    print(f"\n{title}")
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    for row in (header, tuple("-" * w for w in widths), *rows):
        print("  ".join(str(x).ljust(w) for x, w in zip(row, widths)))


# --- 1. Grep / Glob against ripgrep ------------------------------------------------------------

SEARCHES = [
    # label, tool, tool input, equivalent raw rg arguments (run in the same directory on ".")
    (
        "Grep files: def __init__",
        GrepTool(),
        {"pattern": r"def __init__\(self", "head_limit": 0},
        ["-l", "--hidden", r"def __init__\(self"],
    ),
    (
        "Grep files (default page)",
        GrepTool(),
        {"pattern": r"def __init__\(self"},
        ["-l", "--hidden", r"def __init__\(self"],
    ),
    (
        "Grep content: import asyncio",
        GrepTool(),
        {"pattern": r"^import asyncio", "output_mode": "content", "head_limit": 0},
        ["-n", "--hidden", r"^import asyncio"],
    ),
    (
        "Grep count -i: deprecated",
        GrepTool(),
        {"pattern": "deprecated", "output_mode": "count", "-i": True},
        ["--count-matches", "-i", "--hidden", "deprecated"],
    ),
    (
        "Grep no match",
        GrepTool(),
        {"pattern": "zq_no_such_identifier_xj"},
        ["-l", "--hidden", "zq_no_such_identifier_xj"],
    ),
    ("Glob **/*.py", GlobTool(), {"pattern": "**/*.py"}, ["--files", "--hidden", "--no-ignore", "--glob", "**/*.py"]),
]


def bench_search(reps: int) -> None:
    rg = find_rg()
    ctx = ToolContext(cwd=SITE, read_state=ReadState())
    n_files = sum(len(files) for _, _, files in os.walk(SITE))
    rows = []
    for label, tool, fields, rg_args in SEARCHES:
        inp = tool.input_model(**fields)

        def run_tool(tool=tool, inp=inp) -> None:
            out = asyncio.run(tool.call(inp, ctx))
            tool.map_result(out, "bench")

        def run_rg(rg_args=rg_args) -> None:
            subprocess.run(
                [rg, *rg_args, "."], cwd=SITE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=False
            )

        t_rg, t_tool, ratio, best = paired_medians(run_rg, run_tool, reps)
        summary = tool.summarize_result(asyncio.run(tool.call(inp, ctx)))
        rows.append(
            (
                label,
                f"{t_rg * 1000:.1f}",
                f"{t_tool * 1000:.1f}",
                f"{t_tool / t_rg:.2f}x",
                f"{ratio:.2f}x",
                f"{best:.2f}x",
                summary,
            )
        )
    print_table(
        f"1. Search tools vs raw rg on {SITE} ({n_files:,} files), median of {reps}; target <= 1.2x",
        ("query", "rg ms", "tool ms", "ratio", "paired ratio", "best/best", "tool result"),
        rows,
    )


# --- 2. Read near the end of a 1 GB file against tail -----------------------------------------

_READ_CHILD = r"""
import asyncio, json, resource, statistics, sys, time, tracemalloc
from pathlib import Path
from ipy_agent.contract.read_state import ReadState
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.tools.files.read import ReadTool

path, offset, limit, reps, trace = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "1"
tool = ReadTool()
inp = tool.input_model(file_path=path, offset=offset, limit=limit)
def once():
    ctx = ToolContext(cwd=Path(path).parent, read_state=ReadState())
    return asyncio.run(tool.call(inp, ctx))
rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
if trace:
    tracemalloc.start()
times = []
for _ in range(reps):
    t0 = time.perf_counter(); out = once(); times.append(time.perf_counter() - t0)
peak = tracemalloc.get_traced_memory()[1] if trace else 0
print(json.dumps({
    # the first read finds the range from scratch; later ones may reuse what it learnt
    "cold": times[0],
    "seconds": statistics.median(times[1:] or times),
    "rss_before_kb": rss_before,
    "rss_peak_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
    "tracemalloc_peak": peak,
    "summary": tool.summarize_result(out),
    "first": str(out.content).splitlines()[0][:60],
}))
"""

_CHILD_RSS = r"""
import resource, subprocess, sys
subprocess.run(sys.argv[1], shell=True, stdout=subprocess.DEVNULL, check=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def make_big_file(path: Path, size: int = GIB) -> int:
    """Write `size` bytes of real (not sparse) text quickly: one 1 MiB block, repeated."""
    block = LINE * ((1 << 20) // len(LINE))
    with open(path, "wb") as f:
        written = 0
        while written + len(block) <= size:
            f.write(block)
            written += len(block)
    return written // len(LINE)  # lines


def bench_read(reps: int) -> None:
    read_module = Path(__file__).resolve().parent.parent / "ipy_agent" / "tools" / "read.py"
    if not read_module.exists():
        print("\n2. Read vs tail: skipped, ipy_agent/tools/files/read.py does not exist yet")
        return
    with tempfile.TemporaryDirectory(prefix="ipy_agent_bench_") as tmp:
        path = Path(tmp) / "big.txt"
        t0 = time.perf_counter()
        lines = make_big_file(path)
        made = time.perf_counter() - t0
        limit = 100
        offset = lines - 200  # a range near the end: lines [offset, offset + 100)
        print(f"\n(generated {path.stat().st_size / GIB:.2f} GiB, {lines:,} lines, in {made:.1f}s)")

        def child(trace: bool, n: int) -> dict:
            proc = subprocess.run(
                [sys.executable, "-c", _READ_CHILD, str(path), str(offset), str(limit), str(n), "1" if trace else "0"],
                capture_output=True,
                text=True,
                check=True,
            )
            return json.loads(proc.stdout)

        timed = child(trace=False, n=reps)
        traced = child(trace=True, n=1)
        same_job = f"tail -n +{offset} {path} | head -n {limit}"  # lines by number, like Read
        from_end = f"tail -n 200 {path} | head -n {limit}"  # what tail is best at: seek from the end
        t_same = median_seconds(lambda: subprocess.run(same_job, shell=True, stdout=subprocess.DEVNULL), reps)
        t_end = median_seconds(lambda: subprocess.run(from_end, shell=True, stdout=subprocess.DEVNULL), reps)
        rss_tail = int(
            subprocess.run([sys.executable, "-c", _CHILD_RSS, same_job], capture_output=True, text=True).stdout
        )
        rss_delta = (timed["rss_peak_kb"] - timed["rss_before_kb"]) / 1024
        print(f"Read result: {timed['summary']}; first line {timed['first']!r}")
        print_table(
            f"2. Read lines {offset:,}..{offset + limit - 1:,} of a 1 GiB file, median of {reps}; target <= 2x time, <= +50 MB",
            ("what", "ms", "Read / it", "memory"),
            [
                (
                    "Read tool, first read (cold)",
                    f"{timed['cold'] * 1000:.1f}",
                    f"{timed['cold'] / t_same:.2f}x vs tail",
                    f"peak RSS +{rss_delta:.1f} MB over the process before the call; tracemalloc peak "
                    f"{traced['tracemalloc_peak'] / 1e6:.1f} MB; over 256 MB a tail child runs too (as below)",
                ),
                (
                    "Read tool, same range again",
                    f"{timed['seconds'] * 1000:.1f}",
                    f"{timed['seconds'] / t_same:.2f}x vs tail",
                    "(files of 8-256 MB page on from a line index; bigger ones ask tail each time)",
                ),
                (
                    f"tail -n +N | head -n {limit}",
                    f"{t_same * 1000:.1f}",
                    "1.00x",
                    f"max RSS of tail/head {rss_tail / 1024:.1f} MB",
                ),
                (
                    f"tail -n 200 | head -n {limit}",
                    f"{t_end * 1000:.1f}",
                    f"{t_end / t_same:.2f}x",
                    "(seeks from the end; reference only)",
                ),
            ],
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=21)
    parser.add_argument("--skip-read", action="store_true")
    args = parser.parse_args()
    print(f"ripgrep: {find_rg()}; python {sys.version.split()[0]}; {os.cpu_count()} CPUs")
    bench_search(args.reps)
    if not args.skip_read:
        bench_read(max(3, args.reps // 2))


if __name__ == "__main__":
    main()
