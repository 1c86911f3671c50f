"""NotebookVerify's overhead over running the same notebook with nbclient.

A notebook of 30 small code cells (numbers, strings, a list, prints) is run top to bottom in a new
kernel both ways: NotebookVerify's run and comparison (`verify_target` on the file: the kernel
started in the notebook's directory, every cell run, the fresh kernel's variables described, the
outputs compared with the saved ones, the kernel shut down) against nbclient's `NotebookClient`
executing the same cells in a kernel of the same kernelspec, shut down the same way. What ours
adds is the variables' description and the comparison; the kernel's start dominates both.

    python -m bench.notebook_verify   # one pair, as JSON
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["CELLS", "make_notebook", "nbclient_seconds", "ours_seconds"]

CELLS = 30


def make_notebook(path: Path) -> None:
    import nbformat

    cells = []
    for i in range(CELLS):
        source = (
            f"v{i} = {i} * 3\nname{i} = 'cell {i}'\nitems{i} = list(range({i}))\nprint(name{i}, v{i})\nlen(items{i})"
        )
        cells.append(nbformat.v4.new_code_cell(source))
    nb = nbformat.v4.new_notebook(cells=cells)
    nbformat.write(nb, str(path))


def ours_seconds(path: Path) -> float:
    from ipy_agent.tools.notebook.verify import file_target, verify_target

    start = time.perf_counter()
    report = asyncio.run(verify_target(file_target(path, path.name), None))
    seconds = time.perf_counter() - start
    assert report.ran == CELLS and not report.raised, report
    return seconds


def nbclient_seconds(path: Path) -> float:
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(str(path), as_version=4)
    start = time.perf_counter()
    client = NotebookClient(
        nb, kernel_name="python3", timeout=120, allow_errors=True, resources={"metadata": {"path": str(path.parent)}}
    )
    asyncio.run(client.async_execute())  # nbclient owns its kernel and shuts it down
    return time.perf_counter() - start


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as d:
        nb_path = Path(d) / "nb.ipynb"
        make_notebook(nb_path)
        json.dump({"ours": ours_seconds(nb_path), "nbclient": nbclient_seconds(nb_path)}, sys.stdout)
