"""Where a live-bridge round trip spends its time: a timestamp on every hop, in a real JupyterLab.

`python -m pytest -s tests/browser/test_live_notebook.py -k 500` prints one number; this script
says where it goes. It opens a 500-cell notebook in Chromium (the browser tests' harness) and
times `list_cells` round trips with stamps (epoch ms) taken by the kernel (comm.send, reply
resolved), by jupyter_server (ZMQ in/out, websocket in/out: bench/live_bridge/
jupyter_server_config.py, loaded from the server's private config dir) and by the page (its
WebSocket's message and send). It also lists the page's long tasks during the timed cell.

    python -m bench.live_bridge_hops            # N=7 round trips; NODELAY=1 sets TCP_NODELAY
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import statistics
import tempfile
from pathlib import Path

from tests.browser.harness import JupyterServer, NotebookPage, launch_browser

HERE = Path(__file__).resolve().parent
PAGE_STAMPS = r"""
(() => {
  const T = () => performance.timeOrigin + performance.now();
  const dec = new TextDecoder();
  const tag = d => { const m = (typeof d === 'string' ? d : dec.decode(d)).match(/"(request_id|reply_to)": ?"([0-9a-f]{32})"/);
    return m ? m[2] : null; };
  window.__stamps = []; window.__long = [];
  const Orig = window.WebSocket;
  window.WebSocket = class extends Orig {
    constructor(...a) { super(...a);
      this.addEventListener('message', ev => { const t = tag(ev.data); if (t) window.__stamps.push(['recv', t, T()]); }); }
    send(d) { const t = tag(d); if (t) window.__stamps.push(['send', t, T()]); return super.send(d); }
  };
  new PerformanceObserver(l => { for (const e of l.getEntries()) window.__long.push([performance.timeOrigin + e.startTime, e.duration]); })
    .observe({type: 'longtask', buffered: true});
})();
"""
TIMED = r"""
import time, json
from ipy_agent.magics import current_session
b = current_session().bridge
await b.ensure()
K = []
_send, _resolve = b.front_end.comm.send, b._resolve
def send(data, *a, **k):
    K.append(('send', data.get('request_id'), time.time() * 1000)); return _send(data, *a, **k)
def resolve(rid, data):
    K.append(('resolve', rid, time.time() * 1000)); return _resolve(rid, data)
b.front_end.comm.send, b._resolve = send, resolve
for _ in range(N):
    await b.list_cells()
b._resolve = _resolve
open(OUT, 'w').write(json.dumps(K))
"""
HOPS = ["kernel>server", "server", "server>page", "page answers", "page>server", "server", "server>kernel"]


def main() -> None:
    n = int(os.environ.get("N", "7"))
    root = Path(tempfile.mkdtemp(prefix="ipy_agent_hops_"))
    server = JupyterServer("lab", root)
    (server.home / "config").mkdir(parents=True, exist_ok=True)
    shutil.copy(HERE / "live_bridge" / "jupyter_server_config.py", server.home / "config")
    os.environ["DIAG_LOG"] = str(root / "server_stamps.log")
    os.environ["DIAG_NODELAY"] = os.environ.get("NODELAY", "0")
    server.start()
    from playwright.sync_api import sync_playwright

    try:
        with sync_playwright() as p:
            browser = launch_browser(p)
            server.notebook_file(
                "long.ipynb", ["%load_ext ipy_agent"] + [f"v{i} = {i}\nprint(v{i})" for i in range(499)]
            )
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            context.add_init_script(PAGE_STAMPS)
            page = context.new_page()
            nb = NotebookPage(server, page, "long.ipynb")
            page.goto(server.url("lab/tree/long.ipynb?reset"))
            nb.wait_ready()
            nb.run(0)
            nb.wait_done(0)
            out = root / "kernel_stamps.json"
            i = nb.add_cell(TIMED.replace("range(N)", f"range({n})").replace("OUT", repr(str(out))))
            nb.run(i)
            nb.wait_done(i)
            kernel = json.loads(out.read_text())
            stamps = page.evaluate("() => window.__stamps")
            long_tasks = page.evaluate("() => window.__long")
            browser.close()
    finally:
        server.stop()
    k_send = {rid: t for kind, rid, t in kernel if kind == "send"}
    k_resolve = {rid: t for kind, rid, t in kernel if kind == "resolve"}
    p_recv = {rid: t for kind, rid, t in stamps if kind == "recv"}
    p_send = {rid: t for kind, rid, t in stamps if kind == "send"}
    srv: dict[str, dict[str, float]] = {}
    for line in (root / "server_stamps.log").read_text().splitlines():
        kind, rid, t, _size = line.split()
        srv.setdefault(kind, {})[rid.split(":")[1]] = float(t)
    rows = []
    for rid in k_send:
        seq = [
            k_send.get(rid),
            srv["S_zmq_in"].get(rid),
            srv["S_ws_out"].get(rid),
            p_recv.get(rid),
            p_send.get(rid),
            srv["S_ws_in"].get(rid),
            srv["S_zmq_out"].get(rid),
            k_resolve.get(rid),
        ]
        if all(x is not None for x in seq):
            rows.append([b - a for a, b in itertools.pairwise(seq)] + [seq[-1] - seq[0]])  # type: ignore[operator]
    print("ms per hop: " + " | ".join(HOPS) + " | total")
    for r in rows:
        print("  " + " | ".join(f"{x:6.1f}" for x in r))
    print("median " + " | ".join(f"{statistics.median(c):6.1f}" for c in zip(*rows)))
    t0, t1 = min(k_send.values()), max(k_resolve.values())
    print(
        "page long tasks during the round trips (start ms, duration ms):",
        [(round(a - t0), round(d)) for a, d in long_tasks if t0 - 200 < a < t1],
    )


if __name__ == "__main__":
    main()
