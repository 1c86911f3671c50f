"""First feedback of a first `%agent` run in a fresh kernel: how long until the cell shows
anything, against how long until the run's widget view appears.

A first run pays for slow imports (the tools, ipywidgets, and for real models the SDK) before
its view exists; the start line ("ipy_agent: starting with …") is displayed before them. Each
sample starts a new kernel (tests/support/kernel.py), loads the extension, runs an
offline `%agent --script ...`, and times from the execute_request to the first display_data and
to the first widget comm_open, read from the kernel's own iopub timestamps (no front-end delay).
Target: the first display within 100 ms of the cell starting.

    python bench/first_feedback.py [--runs N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.kernel import Kernel  # noqa: E402

TARGET_MS = 100.0


def _ts(msg: dict) -> datetime:
    date = msg["header"]["date"]
    return date if isinstance(date, datetime) else datetime.fromisoformat(str(date))


def sample() -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "hi.json").write_text(json.dumps({"turns": ["Hello."]}))
        with Kernel(Path(d)) as k:
            k.check("%load_ext ipy_agent")
            cell = k.execute("%agent --script hi.json hello")
            k.wait(cell)
            mine = [m for m in k.messages if m["parent_header"].get("msg_id") == cell]
            start = next(
                _ts(m) for m in mine if m["msg_type"] == "status" and m["content"]["execution_state"] == "busy"
            )
            first = next(_ts(m) for m in mine if m["msg_type"] == "display_data")
            view = next(_ts(m) for m in mine if m["msg_type"] == "comm_open")
            return (first - start).total_seconds() * 1000, (view - start).total_seconds() * 1000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    runs = ap.parse_args().runs
    samples = [sample() for _ in range(runs)]
    first = statistics.median(s[0] for s in samples)
    view = statistics.median(s[1] for s in samples)
    print(
        f"first display {first:.0f} ms, widget view {view:.0f} ms (median of {runs} fresh kernels); "
        f"target first display <= {TARGET_MS:.0f} ms: {'ok' if first <= TARGET_MS else 'MISSED'}"
    )


if __name__ == "__main__":
    main()
