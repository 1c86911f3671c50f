"""The observed-effects check's cost per NotebookRun, on a namespace of 1,000 names and a 1 GB DataFrame.

NotebookRun fingerprints every name of the person's namespace before the run and compares after
it (notebook/observed.py). The check must cost what an int costs however big the values are, so
it is timed on a namespace holding 1,000 names (ints, strings, lists, dicts, small arrays) and
one pandas DataFrame of 1 GB (8 float64 columns, filled, not lazily zeroed), against the same
check on the same 1,000 names without the DataFrame: the ratio says whether the cost grows with the
data (it must not). IPython's own `run_cell` of the cheapest cell (`x = 1`) in a shell holding the
same namespace is timed beside it, for scale.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

__all__ = ["check_seconds"]

GB = 1 << 30


def _namespace() -> dict[str, Any]:
    import numpy as np
    import pandas as pd

    ns: dict[str, Any] = {}
    for i in range(1000):
        kind = i % 5
        ns[f"v{i}"] = (
            i
            if kind == 0
            else f"text {i}" * 3
            if kind == 1
            else list(range(i % 50))
            if kind == 2
            else {"k": i}
            if kind == 3
            else np.arange(100.0)
        )
    rows = GB // (8 * 8)
    ns["big"] = pd.DataFrame(np.ones((rows, 8)), columns=list("abcdefgh"))
    return ns


def _check_seconds(ns: dict[str, Any], hidden: dict[str, Any]) -> float:
    from ipy_agent.notebook.effects import cell_effects
    from ipy_agent.notebook.observed import namespace_prints, observed_changes

    t = time.perf_counter()
    before = namespace_prints(ns, hidden)
    ns["x"] = 1  # the run itself, not timed here
    observed_changes(before, ns, cell_effects("x = 1"), hidden)
    return time.perf_counter() - t


def check_seconds(reps: int) -> tuple[list[float], list[float], list[float], int, int]:
    """(check seconds with the DataFrame, without it, `run_cell('x = 1')` seconds, names, DataFrame
    bytes), `reps` rounds alternating."""
    from IPython.core.interactiveshell import InteractiveShell

    from ipy_agent.notebook.observed import namespace_prints

    shell = InteractiveShell.instance()
    shell.user_ns.update(_namespace())
    ns, hidden = shell.user_ns, shell.user_ns_hidden
    big = ns["big"]
    names = len(namespace_prints(ns, hidden))
    size = int(big.memory_usage(index=False).sum())
    with_df: list[float] = []
    without: list[float] = []
    cell: list[float] = []
    shell.run_cell("x = 1", store_history=True, silent=False)  # warm-up
    _check_seconds(ns, hidden)
    for i in range(reps):
        for frame in (True, False) if i % 2 == 0 else (False, True):  # alternating which goes first
            ns["big" if frame else "small"] = big if frame else 0  # the same number of names
            (with_df if frame else without).append(_check_seconds(ns, hidden))
            del ns["big" if frame else "small"]
        t = time.perf_counter()
        shell.run_cell("x = 1", store_history=True, silent=False)
        cell.append(time.perf_counter() - t)
    del big
    return with_df, without, cell, names, size


if __name__ == "__main__":
    w, wo, c, n, s = check_seconds(40)
    m = statistics.median
    print(f"check {m(w) * 1000:.2f} ms, without the frame {m(wo) * 1000:.2f} ms, run_cell {m(c) * 1000:.2f} ms")
    print(f"{n} names, {s / 2**30:.2f} GiB")
