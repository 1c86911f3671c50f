"""JupyterLab in Debian's Chromium, for the live-notebook browser tests.

A JupyterLab server on 127.0.0.1 (a free port, token auth, private config/data/runtime dirs, a
private "python3" kernelspec running this test's Python with this checkout first on PYTHONPATH),
Chromium at /usr/bin/chromium through Playwright (never a downloaded browser), and a page object
that reads cells from the notebook MODEL (`window.jupyterapp`, exposed with
--LabApp.expose_app_in_browser), not from the DOM. The ipy-agent-notebook extension must be
installed in this environment (`pip install -e .` with Node >= 20.19 builds it).

Every wait is bounded and fails with what was seen, never with a bare timeout.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
TIMEOUT = 90.0
EXTENSION = "ipy-agent-notebook"


def browser_missing() -> str | None:
    """Why the browser tests cannot run here, or None."""
    if not Path(CHROMIUM).exists():
        return f"{CHROMIUM} is missing (apt-get install chromium)"
    for mod in ("playwright", "jupyterlab"):
        try:
            __import__(mod)
        except ImportError:
            return f"the {mod} package is missing (pip install -e '.[test]')"
    if not (Path(sys.prefix) / "share" / "jupyter" / "labextensions" / EXTENSION / "package.json").exists():
        return (f"the {EXTENSION} JupyterLab extension is not installed in {sys.prefix} (reinstall with "
                "`pip install -e .` where Node >= 20.19 is on PATH)")
    return None


class LabServer:
    def __init__(self, root: Path, token: str = "ipy-agent-live") -> None:
        self.root, self.token = root, token
        self._tmp = tempfile.TemporaryDirectory(prefix="ipy_agent_lab_")
        self.home = Path(self._tmp.name)
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0

    def start(self) -> LabServer:
        dirs = {n: self.home / n for n in ("config", "data", "runtime", "ipython", "workspaces")}
        for d in dirs.values():
            d.mkdir(parents=True)
        spec = dirs["data"] / "kernels" / "python3"
        spec.mkdir(parents=True)
        (spec / "kernel.json").write_text(json.dumps({
            "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "Python 3", "language": "python"}))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "IPY_AGENT_", "JUPYTER_"))}
        env.update(JUPYTER_CONFIG_DIR=str(dirs["config"]), JUPYTER_DATA_DIR=str(dirs["data"]),
                   JUPYTER_RUNTIME_DIR=str(dirs["runtime"]), IPYTHONDIR=str(dirs["ipython"]),
                   JUPYTER_PATH=str(dirs["data"]), PYTHONUNBUFFERED="1",
                   PYTHONPATH=os.pathsep.join(p for p in (str(PROJECT_ROOT), os.environ.get("PYTHONPATH", "")) if p))
        argv = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1", "--ServerApp.port=0",
                "--ServerApp.port_retries=0", f"--IdentityProvider.token={self.token}",
                f"--ServerApp.root_dir={self.root}", "--ServerApp.allow_root=True",
                "--LabApp.expose_app_in_browser=True", f"--LabApp.workspaces_dir={dirs['workspaces']}",
                "--LanguageServerManager.autodetect=False", "--MappingKernelManager.default_kernel_name=python3"]
        self.log_path = self.home / "server.log"
        self.proc = subprocess.Popen(argv, cwd=self.root, env=env, stdout=self.log_path.open("wb"),
                                     stderr=subprocess.STDOUT, start_new_session=True)
        info = dirs["runtime"] / f"jpserver-{self.proc.pid}.json"
        end = time.monotonic() + TIMEOUT
        while not info.exists():
            if self.proc.poll() is not None or time.monotonic() > end:
                self.stop()
                raise AssertionError(f"JupyterLab did not start; its log:\n{self.log()}")
            time.sleep(0.1)
        while True:  # the server may still be writing the file
            try:
                self.port = int(json.loads(info.read_text())["port"])
                return self
            except (ValueError, KeyError):
                if time.monotonic() > end:
                    raise
                time.sleep(0.1)

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)  # its own session: its kernels too
            except ProcessLookupError:
                pass
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        self._tmp.cleanup()

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-4000:]
        except (OSError, AttributeError):
            return "(no log)"

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}/{path}{'&' if '?' in path else '?'}token={self.token}"

    def open(self, browser: Any, name: str) -> LivePage:
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        lp = LivePage(self, page)
        page.goto(self.url(f"lab/tree/{name}?reset"))
        lp.wait_ready()
        return lp


_P = "const P = () => window.jupyterapp && window.jupyterapp.shell.currentWidget;"


class LivePage:
    def __init__(self, server: LabServer, page: Any) -> None:
        self.server, self.page = server, page
        self.console: list[str] = []
        page.on("console", lambda m: self.console.append(m.text))

    def js(self, body: str, arg: Any = None) -> Any:
        return self.page.evaluate(f"(arg) => {{ {_P} {body} }}", arg)

    def wait_js(self, what: str, body: str, arg: Any = None, timeout: float = TIMEOUT) -> None:
        try:
            self.page.wait_for_function(f"(arg) => {{ {_P} {body} }}", arg=arg, timeout=timeout * 1000)
        except Exception as e:
            raise AssertionError(f"timed out waiting for {what}: {e}\nconsole: {self.console[-10:]}\n"
                                 f"server log:\n{self.server.log()[-2000:]}") from None

    def wait_ready(self) -> None:
        self.wait_js("the notebook and an idle kernel",
                     "const w = P(); const k = w && w.sessionContext && w.sessionContext.session"
                     " && w.sessionContext.session.kernel; return !!(k && k.status === 'idle' && w.context"
                     " && w.context.isReady && w.content.widgets.length > 0);")

    # --- the model ---------------------------------------------------------------------------
    def cells(self) -> list[dict[str, Any]]:
        """Each cell as the notebook model holds it: id, type, source, execution count, outputs."""
        return self.js(
            "const m = P().content.model; const out = [];"
            "for (let i = 0; i < m.cells.length; i++) { const c = m.cells.get(i);"
            "  out.push({id: c.id, cell_type: c.type, source: c.sharedModel.getSource(),"
            "    execution_count: c.type === 'code' ? c.executionCount : null,"
            "    outputs: c.type === 'code' ? c.outputs.toJSON() : []}); }"
            "return out;")

    def dirty(self) -> bool:
        return bool(self.js("return P().context.model.dirty;"))

    def index_of(self, cell_id: str) -> int:
        return int(self.js("return P().content.model.sharedModel.cells.findIndex(c => c.id === arg);", cell_id))

    def run(self, index: int) -> None:
        self.js("P().content.activeCellIndex = arg; void window.jupyterapp.commands.execute('notebook:run-cell');"
                " return true;", index)

    def wait_done(self, index: int, timeout: float = TIMEOUT) -> None:
        self.wait_js(f"cell {index} to finish; it shows {self.text(index)!r}",
                     "const p = P(); const c = p.content.widgets[arg]; const k = p.sessionContext.session.kernel;"
                     "return c.model.executionCount !== null && c.model.sharedModel.execution_state !== 'running'"
                     " && k.status === 'idle';", index, timeout)

    # --- the DOM, where a person looks and clicks --------------------------------------------
    def cell(self, index: int) -> Any:
        return self.page.locator(".jp-Notebook .jp-Cell").nth(index)

    def text(self, index: int) -> str:
        try:
            return str(self.cell(index).locator(".jp-Cell-outputArea").inner_text(timeout=2000))
        except Exception:
            return "(no output area)"

    def wait_text(self, index: int, needle: str, timeout: float = TIMEOUT) -> None:
        end = time.monotonic() + timeout
        while needle not in self.text(index):
            if time.monotonic() > end:
                raise AssertionError(f"cell {index} never showed {needle!r}; it shows:\n{self.text(index)}\n"
                                     f"console: {self.console[-10:]}")
            time.sleep(0.2)

    def button(self, index: int, label: str) -> Any:
        """The first enabled button with this label in cell `index`, once it is visible."""
        loc = self.cell(index).locator("button.jupyter-button:not([disabled])", has_text=label).first
        try:
            loc.wait_for(state="visible", timeout=TIMEOUT * 1000)
        except Exception:
            raise AssertionError(f"no {label!r} button appeared in cell {index}; it shows:\n{self.text(index)}") from None
        return loc

    def type_into(self, index: int, keys: str) -> None:
        """Click at the end of cell `index`'s editor and type, key by key, as a person does."""
        editor = self.cell(index).locator(".cm-content")
        editor.click()
        self.page.keyboard.press("Control+End")
        self.page.keyboard.type(keys, delay=40)
