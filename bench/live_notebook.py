"""The live notebook at scale: a 500-cell notebook open in real JupyterLab, timed from the kernel.

What a person waits for when the agent works on a long notebook through the page: the listing
NotebookRead starts with, one cell read, the whole notebook read, and one NotebookEdit replace
applied to the page (auto-approved: validation, the permission check, the call). Each is timed
in the kernel around the same bridge requests the tools make (ipy_agent/notebook/bridge.py),
against the comm's floor: the trivial `get_agent_metadata` op on the same page at the same time.

Two states of the page, for each of JupyterLab's notebook windowing modes (the `windowingMode`
setting of @jupyterlab/notebook-extension:tracker, set through the server's settings API):
- idle: the page has finished rendering (no long task for QUIET_S), one untimed round (the page
  has just added and run the cell that times), then n rounds alternating each op with the floor;
- rendering: right after the page is (re)loaded, the first requests after its hello, while
  JupyterLab is still building the cells; RENDERING_ROUNDS rounds per reload, back to back.

The notebook (`make_notebook`) mixes code and markdown cells with realistic sources, and a third
of the code cells have outputs: printed text, a small HTML table, an error, a PNG.

    python -m bench.live_notebook [--quick] [--modes contentVisibility full]   # prints the JSON
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

__all__ = ["MODES", "QUIET_LIMIT_S", "QUIET_S", "RENDERING_ROUNDS", "make_notebook", "measure", "pct"]

CELLS = 500
MODES = ("contentVisibility", "full", "none", "defer")  # JupyterLab 4.6's; the first is its default
TARGET_CELL = 101  # the cell read and edited (a code cell with outputs, out of view)
PAUSE = 1.0  # seconds after the edit, untimed: a model turn before the next call
RENDERING_ROUNDS = 2  # rounds after each reload, back to back: the page is busy for seconds
QUIET_S = 2.5  # the page is done drawing when no long task has run for this long (it draws in bursts)
QUIET_LIMIT_S = 45.0  # or after this long: the idle rounds then run on a page still busy (say so)

_IMPORTS = "import numpy as np\nimport pandas as pd\nimport matplotlib.pyplot as plt\n"
_CODE = [
    'df = pd.read_csv("data/sales_{i}.csv", parse_dates=["date"])\ndf = df[df["region"] != "test"]\ndf.head()',
    "monthly = (\n    df.groupby([pd.Grouper(key='date', freq='M'), 'region'])['revenue']\n"
    "    .sum()\n    .unstack()\n)\nmonthly.tail({i})",
    "def clean(frame, cols=None):\n    cols = cols or frame.columns\n    out = frame.copy()\n"
    "    for c in cols:\n        out[c] = out[c].fillna(out[c].median())\n    return out\n\nclean_{i} = clean(df)",
    "fig, ax = plt.subplots(figsize=(8, 4))\nax.plot(monthly.index, monthly.values)\n"
    "ax.set_title('Revenue by region, run {i}')\nplt.show()",
    "print(len(df), 'rows;', df['revenue'].sum(), 'total')\nprint(df.dtypes.value_counts())",
    "model_{i} = fit(train, features=['price', 'units', 'discount'], alpha=0.{i})\nscore(model_{i}, test)",
]
_MARKDOWN = [
    "## Step {i}: where the revenue comes from\n\nThe regions differ a lot in **volume**; the next cells "
    "normalise by store count before comparing. See [the data notes](notes.md) for the caveats.",
    "Note: rows with a missing `date` were dropped in step {i}. About 2% of the file; none of them in 2024.",
    "### Check {i}\n\n- totals match the finance export\n- no duplicate order ids\n- prices are positive",
]
_HTML = (
    '<table border="1" class="dataframe"><thead><tr><th></th><th>date</th><th>region</th><th>revenue</th>'
    "</tr></thead><tbody>"
    + "".join(
        f"<tr><th>{r}</th><td>2024-0{r + 1}-01</td><td>north</td><td>{1000 + 37 * r}.5</td></tr>" for r in range(5)
    )
    + "</tbody></table>"
)
_TEXT_TABLE = "\n".join(f"{r}  2024-0{r + 1}-01  north  {1000 + 37 * r}.5" for r in range(5))


def _png() -> str:
    from bench._png import bar_chart

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "chart.png"
        bar_chart(path, [([0.2, 0.5, 0.9, 0.4, 0.7, 0.3], (52, 101, 164))], height=160)
        return base64.b64encode(path.read_bytes()).decode()


def _outputs(i: int, png: str) -> list[dict[str, Any]]:
    kind = (i // 6) % 4
    if kind == 0:
        return [{"output_type": "stream", "name": "stdout", "text": f"{9000 + i} rows; {123456.5 * i} total\n" * 3}]
    if kind == 1:
        data = {"text/html": _HTML, "text/plain": _TEXT_TABLE}
        return [{"output_type": "execute_result", "execution_count": i, "data": data, "metadata": {}}]
    if kind == 2:
        tb = [f"File <ipython-input-{i}>, line {n}, in <module>" for n in range(6)]
        return [{"output_type": "error", "ename": "KeyError", "evalue": f"'region_{i}'", "traceback": tb}]
    return [{"output_type": "display_data", "data": {"image/png": png, "text/plain": "<Figure>"}, "metadata": {}}]


def make_notebook(path: Path, setup: list[str], cells: int = CELLS) -> None:
    """`setup` first (code cells, no outputs), then cells up to `cells`: 60% code, a third of it with outputs."""
    png = _png()
    out: list[dict[str, Any]] = []
    for n, src in enumerate(setup):
        out.append({"cell_type": "code", "execution_count": None, "id": f"setup{n}", "metadata": {}, "outputs": []})
        out[-1]["source"] = src
    for i in range(len(setup), cells):
        if i % 5 in (1, 3):
            src = _MARKDOWN[i % len(_MARKDOWN)].format(i=i)
            out.append({"cell_type": "markdown", "id": f"c{i:04d}", "metadata": {}, "source": src})
            continue
        src = (_IMPORTS if i == len(setup) else "") + _CODE[i % len(_CODE)].format(i=i)
        with_outputs = i % 3 == 0 or i == TARGET_CELL
        cell = {
            "cell_type": "code",
            "execution_count": i if with_outputs else None,
            "id": f"c{i:04d}",
            "metadata": {"tags": ["report"]} if i % 50 == 0 else {},
            "outputs": _outputs(i, png) if with_outputs else [],
            "source": src,
        }
        out.append(cell)
    meta = {"kernelspec": {"name": "python3", "display_name": "Python 3 (ipy_agent test)", "language": "python"}}
    path.write_text(json.dumps({"cells": out, "metadata": meta, "nbformat": 4, "nbformat_minor": 5}, indent=1))


# Run in the kernel (cell 1). `timed` runs one round of every op and appends it to OUT as a JSON
# line; `idle(n, mode)` runs n rounds; `rendering()` (cell 2, run by the page right after a
# reload, as a person runs a cell) first does what every run does, `ensure` (a fresh comm the
# reloaded page answers with its hello), then one round.
KERNEL = r"""
import asyncio, json, time
from ipy_agent.contract.decision import CallDecision
from ipy_agent.contract.read_state import ReadState
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.magics import current_session
from ipy_agent.tools.notebook.edit import NotebookEditInput, NotebookEditTool
from ipy_agent.tools.notebook.live import record_cells
from ipy_agent.tools.notebook.read import NotebookReadInput, NotebookReadTool

_b = current_session().bridge
await _b.ensure()
_ctx = ToolContext(cwd=_b.cwd, read_state=ReadState(), notebook=_b, permission_mode="acceptEdits")
_decision = CallDecision(source="mode")
_edit, _read = NotebookEditTool(), NotebookReadTool()
_n = [0]

async def _t(coro):
    t = time.perf_counter(); out = await coro; return time.perf_counter() - t, out

async def _edit_once():
    _n[0] += 1
    cells = await _b.read_cells([CELL])
    record_cells(_ctx, _b, cells)
    src = cells[0]['source'].split('\n# edit')[0] + f'\n# edit {_n[0]}'
    inp = NotebookEditInput(notebook_path=_b.path, cell_id=CELL, new_source=src)
    async def go():
        problem = await _edit.validate_input(inp, _ctx)
        assert problem is None, problem
        check = await _edit.check_permissions(inp, _ctx)
        assert check.behavior != 'deny', check
        return await _edit.call(inp, _ctx, _decision)
    return await _t(go())

async def timed(phase):
    row = {'phase': phase, 'mode': _mode[0], 'start': time.time() * 1000, 'failed': []}
    if _connect[0] is not None:  # the first round after a reload: how long its `ensure` took
        row['connect'], _connect[0] = _connect[0], None
    ops = [
        ('ping', lambda: _b.request('get_agent_metadata')),
        ('list', lambda: _b.request('list_cells')),
        ('ping2', lambda: _b.request('get_agent_metadata')),
        ('read_one', lambda: _b.read_cells([CELL])),
        ('ping3', lambda: _b.request('get_agent_metadata')),
        ('read_all', lambda: _b.read_cells()),
        ('ping4', lambda: _b.request('get_agent_metadata')),
        ('edit', None),
        ('tool_read_all', lambda: _read.call(NotebookReadInput(), _ctx)),
    ]
    out = {}
    for name, op in ops:
        try:
            row[name], out[name] = await (_edit_once() if op is None else _t(op()))
            if op is None:  # the model's next turn: the page draws the edit and scrolls to it meanwhile
                await asyncio.sleep(PAUSE)
        except Exception as e:  # a page too busy to answer in time: say so, reconnect, go on
            row['failed'].append(f'{name}: {type(e).__name__}: {e}'[:200])
            await _b.ensure()
    row['end'] = time.time() * 1000
    if 'list' in out:
        row['cells'] = len(out['list']['cells'])
        row['listing_bytes'] = len(json.dumps(out['list']))
    if 'read_all' in out:
        row['read_all_bytes'] = len(json.dumps(out['read_all']))
    with open(OUT, 'a') as f:
        f.write(json.dumps(row) + '\n')

async def idle(n, mode):
    _mode[0] = mode
    await timed('warm-up')  # the page has just added and run this cell: not yet idle
    for _ in range(n):
        await timed('idle')

async def rendering():
    # What a run does first (`ensure`): a fresh comm, and the reloaded page's hello on it. Then
    # two rounds while the page is still building its cells.
    t = time.perf_counter()
    assert await _b.ensure(), 'the reloaded page did not say hello'
    _connect[0] = time.perf_counter() - t
    for _ in range(RENDERING_ROUNDS):
        await timed('rendering')

_mode, _connect = ['?'], [None]
print('READY', len(await _b.list_cells()))
"""

# The page's long tasks (the main thread busy for 50 ms or more), for the rendering explanation.
LONG_TASKS = r"""
window.__long = [];
new PerformanceObserver(l => { for (const e of l.getEntries()) window.__long.push([performance.timeOrigin + e.startTime, e.duration]); })
  .observe({type: 'longtask', buffered: true});
"""


def pct(xs: list[float], q: float) -> float:
    """The q-quantile (nearest rank) of xs."""
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


def _set_windowing(server: Any, mode: str) -> None:
    body = json.dumps({"raw": json.dumps({"windowingMode": mode})}).encode()
    req = urllib.request.Request(
        server.url("lab/api/settings/@jupyterlab/notebook-extension:tracker"),
        data=body,
        method="PUT",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=30) as r:  # 127.0.0.1 only
        r.read()


def _wait_quiet(nb: Any, limit_s: float = QUIET_LIMIT_S) -> float | None:
    """Until the page has had no long task for QUIET_S: the seconds waited, or None when it did
    not happen within `limit_s` (a loaded machine: the rounds then run on a busy page)."""
    quiet_ms = QUIET_S * 1000
    start = time.monotonic()
    try:
        nb.page.wait_for_function(
            "(q) => { const l = window.__long || []; const last = l.length ? l[l.length - 1] : [0, 0];"
            " return performance.timeOrigin + performance.now() - (last[0] + last[1]) > q; }",
            arg=quiet_ms,
            timeout=limit_s * 1000,
            polling=200,
        )
    except Exception:
        return None
    return time.monotonic() - start


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def _wait_lines(path: Path, count: int, what: str, shows: Any, limit_s: float = 180.0) -> None:
    deadline = time.monotonic() + limit_s
    while len(_lines(path)) < count:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the kernel did not write {what} within {limit_s:.0f} s; the page shows {shows()!r}")
        time.sleep(0.1)


def measure(
    modes: tuple[str, ...] = MODES, idle_rounds: int = 9, reloads: int = 4, *, quiet_limit_s: float = QUIET_LIMIT_S
) -> dict[str, Any]:
    """Every round of every mode and phase, with the load average when each mode started. The
    idle rounds start once the page has had QUIET_S without a long task, or after `quiet_limit_s`."""
    from playwright.sync_api import sync_playwright

    from tests.support.browser import TIMEOUT, JupyterServer, NotebookPage, launch_browser

    root = Path(tempfile.mkdtemp(prefix="ipy_agent_live_nb_"))
    out = root / "rounds.jsonl"
    cell = f"c{TARGET_CELL:04d}"
    kernel = KERNEL.replace("CELL", repr(cell)).replace("OUT", repr(str(out))).replace("PAUSE", repr(PAUSE))
    kernel = kernel.replace("RENDERING_ROUNDS", repr(RENDERING_ROUNDS))
    setup = ["%load_ext ipy_agent", kernel, "await rendering()"]
    make_notebook(root / "long.ipynb", setup)
    server = JupyterServer("lab", root)
    server.start()
    result: dict[str, Any] = {"rounds": [], "loads": {}, "quiet_s": {}, "long_tasks": {}, "failed_modes": {}}
    try:
        with sync_playwright() as p:
            browser = launch_browser(p)
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            context.add_init_script(LONG_TASKS)
            page = context.new_page()
            page.on("dialog", lambda d: d.accept())  # "leave the page with unsaved changes?"
            nb = NotebookPage(server, page, "long.ipynb")
            for mode in modes:
                try:
                    _set_windowing(server, mode)
                    result["loads"][mode] = os.getloadavg()[0]
                    page.goto(server.url("lab/tree/long.ipynb?reset"))
                    nb.wait_ready()
                    for i in (0, 1):
                        nb.run(i)
                        nb.wait_done(i, TIMEOUT)
                    nb.wait_text(1, "READY")
                    result["quiet_s"][mode] = _wait_quiet(nb, limit_s=quiet_limit_s)
                    before = len(_lines(out))
                    i = nb.add_cell(f"await idle({idle_rounds}, {mode!r})")
                    nb.run(i)
                    _wait_lines(
                        out, before + 1 + idle_rounds, f"{idle_rounds} idle rounds ({mode})", lambda i=i: nb.outputs(i)
                    )
                    nb.wait_done(i, TIMEOUT)
                    longs = []
                    for r in range(reloads):
                        page.reload()
                        nb.wait_ready()
                        nb.run(2)
                        _wait_lines(
                            out,
                            before + 1 + idle_rounds + RENDERING_ROUNDS * (r + 1),
                            f"a round after reload {r + 1} ({mode})",
                            lambda: nb.outputs(2),
                        )
                        longs.append(page.evaluate("() => window.__long"))
                    result["long_tasks"][mode] = longs
                except Exception as e:  # this mode's page did not open or answer: say so, go on
                    result["failed_modes"][mode] = f"{type(e).__name__}: {str(e).splitlines()[0].split('; seen')[0]}"[
                        :300
                    ]
            browser.close()
    finally:
        server.stop()
    result["rounds"] = _lines(out)
    (root / "result.json").write_text(json.dumps(result))
    print(f"live notebook: raw rounds in {root / 'result.json'}", file=sys.stderr)
    return result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--modes", nargs="+", default=list(MODES))
    args = ap.parse_args()
    res = measure(tuple(args.modes), 5 if args.quick else 9, 3 if args.quick else 5)
    print(json.dumps(res))
    for mode in args.modes:
        for phase in ("idle", "rendering"):
            rs = [r for r in res["rounds"] if r["mode"] == mode and r["phase"] == phase]
            if rs:
                print(
                    mode,
                    phase,
                    " ".join(
                        f"{k} {statistics.median(xs) * 1000:.0f}/{pct(xs, 0.95) * 1000:.0f}"
                        for k in ("connect", "ping", "list", "read_one", "read_all", "edit", "tool_read_all")
                        if (xs := [r[k] for r in rs if k in r])
                    ),
                    file=sys.stderr,
                )


if __name__ == "__main__":
    main()
