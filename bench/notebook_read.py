"""Reading a notebook file carrying 50 MB of outputs, against `json.load` of the same file.

The notebook has 500 code cells, each with a 100 KB text output. Read (a notebook on disk comes
back as cells; NotebookRead is the open notebook's, through the page) answers with the cells'
sources and outputs cut to their budget, so what it must not do is hold the whole file several
times over or take long to say so. Each side runs in a fresh process (the time of the call
alone, after the imports; its peak Python memory from tracemalloc, on a second call),
alternating.

    python -m bench.notebook_read ours|page|json PATH   # one sample, as JSON
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["make_notebook", "sample"]

CELLS, OUTPUT_BYTES = 500, 100_000


def make_notebook(path: Path) -> None:
    line = "0123456789 " * 9 + "\n"  # 100 bytes
    output = line * (OUTPUT_BYTES // len(line))
    cells = [
        {
            "cell_type": "code",
            "execution_count": i + 1,
            "id": f"c{i:04d}",
            "metadata": {},
            "outputs": [{"output_type": "stream", "name": "stdout", "text": output}],
            "source": f"print(data[{i}])",
        }
        for i in range(CELLS)
    ]
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))


def _child(kind: str, path: str) -> dict[str, float]:
    """One timed call, then the same call again under tracemalloc for its peak memory."""
    import time
    import tracemalloc

    call = _call(kind, path)
    start = time.perf_counter()
    sent = call()
    seconds = time.perf_counter() - start
    tracemalloc.start()
    call()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {"seconds": seconds, "extra_mb": peak / 1e6, "sent": sent}


def _call(kind: str, path: str) -> Any:
    if kind == "json":

        def load() -> int:
            with open(path, encoding="utf-8") as f:
                return len(json.load(f)["cells"])

        return load
    import asyncio

    from ipy_agent.contract.read_state import ReadState
    from ipy_agent.contract.tool import ToolContext, ToolError
    from ipy_agent.tools.files.read import ReadTool

    tool = ReadTool()
    page = {"offset": 1, "limit": 9} if kind == "page" else {}
    inp = tool.input_model(file_path=path, **page)

    def read() -> int:
        ctx = ToolContext(cwd=Path(path).parent, read_state=ReadState(), spill_dir=Path(path).parent / "spill")
        try:
            return len(json.dumps(tool.map_result(asyncio.run(tool.call(inp, ctx)), "toolu_bench")))
        except ToolError as e:  # over the token limit: the model is told how to page
            return -len(str(e))

    return read


def sample(kind: str, path: Path) -> dict[str, float]:
    root = Path(__file__).resolve().parents[1]
    proc = subprocess.run(
        [sys.executable, "-m", "bench.notebook_read", kind, str(path)],
        capture_output=True,
        text=True,
        check=True,
        cwd=root,
    )
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def scratch() -> Path:
    path = Path(tempfile.mkdtemp(prefix="ipy_agent_bench_nbread_")) / "outputs.ipynb"
    make_notebook(path)
    return path


if __name__ == "__main__":
    print(json.dumps(_child(sys.argv[1], sys.argv[2])))
