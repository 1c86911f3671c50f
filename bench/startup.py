"""Cold start: `%load_ext ipy_agent` against `import anthropic`, each in a fresh interpreter.

`import anthropic` takes about a second, so the extension must not pay it at load time (the SDK is
imported when the first request is made). Each sample is a new `python -c` process; we time only
the statement under test inside it (after IPython itself is up, since every user of the magics
already has IPython running). The result is a ratio of medians measured in the same run, so a
slower or faster machine does not change the verdict. Target: ratio <= 0.2.

    python bench/startup.py [--runs N]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = 0.2

LOAD_EXT = """
import time, sys
from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config
c = Config(); c.HistoryManager.enabled = False
sh = InteractiveShell.instance(config=c)
t = time.perf_counter()
sh.run_line_magic("load_ext", "ipy_agent")
dt = time.perf_counter() - t
assert "agent" in sh.magics_manager.magics["line"], "extension did not load"
assert "anthropic" not in sys.modules, "loading the extension imported anthropic"
print(dt)
"""

IMPORT_ANTHROPIC = """
import time
t = time.perf_counter()
import anthropic
print(time.perf_counter() - t)
"""


def sample(code: str) -> float:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=False)
    if out.returncode != 0:
        raise SystemExit(f"benchmark subprocess failed:\n{out.stderr}")
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    # Interleave the two so drift in machine load affects both alike.
    load, anth = [], []
    for _ in range(args.runs):
        load.append(sample(LOAD_EXT))
        anth.append(sample(IMPORT_ANTHROPIC))
    ml, ma = statistics.median(load), statistics.median(anth)
    ratio = ml / ma
    print(f"{'measure':<28}{'median ms':>10}{'min ms':>10}{'max ms':>10}   runs={args.runs}")
    for name, xs in (("%load_ext ipy_agent", load), ("import anthropic", anth)):
        print(f"{name:<28}{statistics.median(xs) * 1000:>10.1f}{min(xs) * 1000:>10.1f}{max(xs) * 1000:>10.1f}")
    verdict = "ok" if ratio <= TARGET else "over target"
    print(f"{'ratio load_ext / anthropic':<28}{ratio:>10.3f}   (target <= {TARGET}: {verdict})")


if __name__ == "__main__":
    main()
