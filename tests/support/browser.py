"""Real JupyterLab and Notebook 7 servers driven by Debian's Chromium through Playwright.

Why this exists: some bugs only show when a person uses the notebook in a browser (a reason
typed key by key into a widget, a saved notebook reopened without its kernel, a prompt drawn
below the fold). The kernel harness (tests/support/kernel.py) sends the messages a front
end would send; this one runs the front end itself.

How to use it (tests/browser/conftest.py wires it into fixtures):

    server = JupyterServer("lab", root=tmp_path)        # or "notebook" for Notebook 7
    server.start()                                     # 127.0.0.1, a free port, token auth
    browser = launch_browser(playwright)               # /usr/bin/chromium, never a download
    nb = server.open(browser, "t.ipynb")               # creates the file when missing, `?reset`
    tree, nb = server.new_from_tree(browser, "d")      # Notebook 7: New > Python 3 in the file browser
    nb = server.new_from_launcher(browser, "d")        # JupyterLab: the Launcher's Notebook card
    i = nb.add_cell("%load_ext ipy_agent")             # returns the cell's index
    nb.run(i); nb.wait_done(i)
    i = nb.add_cell("%agent --script s.json fix it"); nb.run(i)
    prompt = nb.prompt(i)                              # the first open approval prompt in cell i
    prompt.locator("input").press_sequentially("keep it", delay=60)   # real key presses
    nb.button(i, "Deny").click()                       # a real mouse click
    nb.wait_text(i, "Denied: keep it")
    nb.outputs(i)                                      # the cell's outputs as the notebook MODEL has them
    nb.save(); nb.close()                              # Ctrl+S, then close the page
    server.saved(path)                                 # the .ipynb JSON on disk
    server.stop_kernels()                              # so a reopen starts without widget models
    nb = server.open(browser, "t.ipynb")               # a fresh page: what a person sees next day
    server.stop()                                      # by PID

The live-notebook tests read the notebook MODEL as JupyterLab holds it, not the DOM:
`nb.cells()` (id, type, source, execution count, outputs of every cell), `nb.dirty()`,
`nb.index_of(cell_id)`; `nb.type_into(i, keys)` types into a cell's editor key by key. They need
the ipy-agent-notebook JupyterLab extension (`browser_missing(extension=True)` says when it is
not installed).

The server runs in a temp dir with private Jupyter config, data and runtime dirs, and a private
kernelspec (named "python3", so notebooks need no special metadata) whose interpreter is the
test's own Python with this checkout first on PYTHONPATH. ANTHROPIC_* and IPY_AGENT_* variables
are removed from the server's and kernel's environment: browser tests never reach a model.

Every wait is bounded (TIMEOUT, shorter than the browser suite's pytest-timeout) and fails with
a sentence naming what did not happen and what was seen ("Chromium did not show an enabled
'Allow' button in cell 1 within 90 s; it shows: ..."), never with a bare timeout. Starting a
server in a test not marked `browser` fails at once: the fast default run must not start one.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import nbformat

from .waits import Deadline, require_marker, timed_out, waiting_for

PROJECT_ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# The README's screenshots are taken by the browser tests, and written to docs/images only when
# asked (`IPY_AGENT_SCREENSHOTS=1 python -m pytest tests/browser`): a test run leaves the
# work tree as it found it.
SCREENSHOTS = (
    PROJECT_ROOT / "docs" / "images"
    if os.environ.get("IPY_AGENT_SCREENSHOTS") == "1"
    else Path(tempfile.mkdtemp(prefix="ipy_agent_screenshots_"))
)
TIMEOUT = 90.0  # seconds for one wait; shared machine, so generous; the suite's pytest-timeout is longer
EXTENSION = "ipy-agent-notebook"  # the JupyterLab extension the live notebook bridge talks to
Kind = Literal["lab", "notebook"]

__all__ = [
    "CHROMIUM",
    "EXTENSION",
    "SCREENSHOTS",
    "TIMEOUT",
    "JupyterServer",
    "NotebookPage",
    "browser_missing",
    "launch_browser",
]


def browser_missing(*, extension: bool = False) -> str | None:
    """Why the browser tests cannot run here (with `extension`, the live-notebook ones), or None."""
    if not Path(CHROMIUM).exists():
        return f"{CHROMIUM} is missing (apt-get install chromium)"
    try:
        import playwright  # noqa: F401
    except ImportError:
        return "the playwright package is missing (pip install -e '.[test]')"
    for mod in ("jupyterlab", "notebook"):
        try:
            __import__(mod)
        except ImportError:
            return f"the {mod} package is missing (pip install -e '.[test]')"
    if (
        extension
        and not (Path(sys.prefix) / "share" / "jupyter" / "labextensions" / EXTENSION / "package.json").exists()
    ):
        return (
            f"the {EXTENSION} JupyterLab extension is not installed in {sys.prefix} (reinstall with "
            "`pip install -e .` where Node >= 20.19 is on PATH)"
        )
    return None


def launch_browser(playwright: Any, *, headless: bool = True) -> Any:
    """Debian's Chromium, headless; Playwright never downloads a browser for these tests."""
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=headless)


def write_kernel_spec(data_dir: Path, env: dict[str, str] | None = None) -> None:
    """The `python3` kernel spec of the tests, in a JUPYTER_DATA_DIR: this Python, ipykernel;
    `env`: variables the kernel gets whatever its launcher passes on (a kernel gateway passes none)."""
    spec = data_dir / "kernels" / "python3"
    spec.mkdir(parents=True, exist_ok=True)
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "Python 3 (ipy_agent test)",
                "language": "python",
                **({"env": env} if env else {}),
            }
        )
    )


class JupyterServer:
    """One `jupyter lab` or `jupyter notebook` (7) process serving `root`; stop() ends it by PID."""

    def __init__(
        self,
        kind: Kind,
        root: Path,
        *,
        token: str = "ipy-agent-test",
        extra_args: Sequence[str] = (),
        env: dict[str, str] | None = None,
    ) -> None:
        self.kind = kind
        self.env = dict(env or {})  # for the kernels too, e.g. IPY_AGENT_COURSE_AUTOANSWER=1
        self.extra_args = tuple(extra_args)  # e.g. --gateway-url=... for kernels behind a gateway
        self.root = Path(root)
        self.token = token
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0
        self._tmp = tempfile.TemporaryDirectory(prefix=f"ipy_agent_{kind}_")
        self.home = Path(self._tmp.name)
        self.log_path = self.home / "server.log"

    # --- lifecycle -------------------------------------------------------------------------
    def start(self) -> JupyterServer:
        require_marker("browser", f"starts a Jupyter {self.kind} server for Chromium")
        dirs = {name: self.home / name for name in ("config", "data", "runtime", "ipython", "workspaces")}
        for d in dirs.values():
            d.mkdir(parents=True, exist_ok=True)
        write_kernel_spec(dirs["data"])
        built = PROJECT_ROOT / "ipy_agent" / "labextension"
        if (built / "package.json").exists():
            # This checkout's own build of the extension (`jlpm build`) wins over the installed one,
            # so a change to the TypeScript is tested in the checkout that made it.
            (dirs["data"] / "labextensions").mkdir()
            (dirs["data"] / "labextensions" / EXTENSION).symlink_to(built, target_is_directory=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "IPY_AGENT_", "JUPYTER_"))}
        env.update(
            JUPYTER_CONFIG_DIR=str(dirs["config"]),
            JUPYTER_DATA_DIR=str(dirs["data"]),
            JUPYTER_RUNTIME_DIR=str(dirs["runtime"]),
            IPYTHONDIR=str(dirs["ipython"]),
            JUPYTER_PATH=str(dirs["data"]),
            PYTHONUNBUFFERED="1",
            JUPYTER_PLATFORM_DIRS="1",
            PYTHONPATH=os.pathsep.join(p for p in (str(PROJECT_ROOT), os.environ.get("PYTHONPATH", "")) if p),
        )
        env.update(self.env)
        app = "ServerApp"
        argv = [
            sys.executable,
            "-m",
            "jupyterlab" if self.kind == "lab" else "notebook",
            "--no-browser",
            f"--{app}.ip=127.0.0.1",
            f"--{app}.port=0",
            f"--{app}.port_retries=0",
            f"--IdentityProvider.token={self.token}",
            f"--{app}.root_dir={self.root}",
            f"--{app}.allow_root=True",
            "--LabApp.expose_app_in_browser=True",
            "--JupyterNotebookApp.expose_app_in_browser=True",
            f"--LabApp.workspaces_dir={dirs['workspaces']}",
            "--ServerApp.open_browser=False",
            "--LanguageServerManager.autodetect=False",
            "--MappingKernelManager.default_kernel_name=python3",
            *self.extra_args,
        ]
        log = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            argv, cwd=self.root, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        deadline = Deadline(TIMEOUT)
        info = dirs["runtime"] / f"jpserver-{self.proc.pid}.json"
        with waiting_for(f"the Jupyter {self.kind} server to start"):
            while True:
                try:  # the server may still be writing the file
                    self.port = int(json.loads(info.read_text())["port"])
                    return self
                except (OSError, ValueError, KeyError):
                    pass
                if self.proc.poll() is not None or deadline.passed():
                    exited = self.proc.poll()
                    log = self.log()
                    self.stop()
                    if exited is not None:
                        raise AssertionError(f"the Jupyter {self.kind} server exited ({exited}); its log:\n{log}")
                    raise timed_out(f"the Jupyter {self.kind} server did not write {info.name}", TIMEOUT, log)
                time.sleep(0.1)

    def stop(self) -> None:
        """Stop the server (and its kernels) by its PID; SIGKILL if it does not end in time."""
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)  # its own session: the kernels it started too
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        self._tmp.cleanup()

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-6000:]
        except OSError:
            return "(no log)"

    # --- REST ------------------------------------------------------------------------------
    def url(self, path: str) -> str:
        sep = "&" if "?" in path else "?"
        return f"http://127.0.0.1:{self.port}/{path.lstrip('/')}{sep}token={self.token}"

    def api(self, method: str, path: str, body: Any = None, *, timeout: float = 30) -> Any:
        import urllib.request

        data = None if body is None else json.dumps(body).encode()
        headers = {} if body is None else {"Content-Type": "application/json"}
        req = urllib.request.Request(self.url(f"api/{path}"), data=data, headers=headers, method=method)
        with urllib.request.urlopen(req, timeout=timeout) as r:  # 127.0.0.1 only
            body = r.read()
        return json.loads(body) if body else None

    def stop_kernels(self) -> None:
        """Shut every kernel down, as after a restart of the machine: widget models are gone."""
        for k in self.api("GET", "kernels"):
            self.api("DELETE", f"kernels/{k['id']}")

    # --- notebooks -------------------------------------------------------------------------
    def notebook_file(self, name: str, cells: Sequence[str] = (), *, ids: Sequence[str] = ()) -> Path:
        """Write a notebook of code cells `cells` (with these cell ids, when given) under the root."""
        path = self.root / name
        nb = nbformat.v4.new_notebook()
        nb.metadata["kernelspec"] = {
            "name": "python3",
            "display_name": "Python 3 (ipy_agent test)",
            "language": "python",
        }
        nb.cells = [nbformat.v4.new_code_cell(src) for src in cells]
        for cell, cell_id in zip(nb.cells, ids):
            cell.id = cell_id
        nbformat.write(nb, path)
        return path

    def saved(self, name: str) -> dict[str, Any]:
        """The notebook file as saved on disk (what nbviewer, GitHub and nbconvert read)."""
        return json.loads((self.root / name).read_text())

    def open(
        self, browser: Any, name: str, *, viewport: tuple[int, int] = (1280, 900), ready_timeout: float = TIMEOUT
    ) -> NotebookPage:
        """Open `name` in a new page (creating an empty notebook when missing) and wait for its kernel."""
        if not (self.root / name).exists():
            self.notebook_file(name)
        page = browser.new_page(viewport={"width": viewport[0], "height": viewport[1]})
        nb = NotebookPage(self, page, name)
        page.goto(self.url(f"lab/tree/{name}?reset" if self.kind == "lab" else f"notebooks/{name}"))
        nb.wait_ready(ready_timeout)
        return nb

    def new_from_tree(self, browser: Any, folder: str) -> tuple[Any, NotebookPage]:
        """Notebook 7 as a person starts: the file browser at `folder`, New > the kernel's entry;
        the notebook opens in a new tab and the file browser's tab stays open (and connected to
        the new kernel). Returns (the file browser's page, the notebook's page)."""
        assert self.kind == "notebook", "New > Notebook from the file browser is Notebook 7's flow"
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        tree = context.new_page()
        tree.goto(self.url(f"tree/{folder}"))
        with waiting_for(f"the file browser at {folder!r} to offer New > Python 3"):
            tree.get_by_text("New", exact=True).first.click(timeout=TIMEOUT * 1000)
            entry = tree.locator(".lm-Menu-item:has-text('Python 3')").first
            with context.expect_page(timeout=TIMEOUT * 1000) as opened:
                entry.click(timeout=TIMEOUT * 1000)
        page = opened.value
        existing = sorted(p.name for p in (self.root / folder).glob("Untitled*.ipynb"))
        nb = NotebookPage(self, page, f"{folder}/{existing[-1] if existing else 'Untitled.ipynb'}")
        nb.wait_ready()
        return tree, nb

    def new_from_launcher(self, browser: Any, folder: str) -> NotebookPage:
        """JupyterLab as a person starts: the file browser at `folder`, the Launcher's Notebook
        card (the kernel's entry); the notebook opens in the same page."""
        assert self.kind == "lab", "the Launcher is JupyterLab's"
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(self.url(f"lab/tree/{folder}?reset"))
        card = page.locator(".jp-Launcher-section:has-text('Notebook') .jp-LauncherCard").first
        with waiting_for(f"the Launcher in {folder!r} to offer a Notebook card"):
            card.click(timeout=TIMEOUT * 1000)
        nb = NotebookPage(self, page, f"{folder}/Untitled.ipynb")
        nb.wait_ready()
        return nb


# JavaScript run in the page. `P()` is the notebook panel; both front ends expose the app as
# window.jupyterapp with --expose_app_in_browser, and in both the current widget is the panel.
_PANEL = "const P = () => window.jupyterapp && window.jupyterapp.shell.currentWidget;"


class NotebookPage:
    """One notebook open in a browser page: cells, outputs, widgets, save and close."""

    def __init__(self, server: JupyterServer, page: Any, name: str) -> None:
        self.server, self.page, self.name = server, page, name
        self.console: list[str] = []
        page.on("console", lambda m: self.console.append(m.text))

    def js(self, body: str, arg: Any = None) -> Any:
        return self.page.evaluate(f"(arg) => {{ {_PANEL} {body} }}", arg)

    def wait_js(self, what: str, body: str, arg: Any = None, timeout: float = TIMEOUT) -> None:
        """Until `body` (JavaScript, with `P()` the notebook panel) is true; `what` names that state."""
        with waiting_for(f"Chromium to show {what}"):
            try:
                self.page.wait_for_function(f"(arg) => {{ {_PANEL} {body} }}", arg=arg, timeout=timeout * 1000)
            except Exception as e:
                raise timed_out(
                    f"Chromium did not show {what}",
                    timeout,
                    f"{e}\nconsole: {self.console[-10:]}\nserver log:\n{self.server.log()[-2000:]}",
                ) from None

    def wait_ready(self, timeout: float = TIMEOUT) -> None:
        self.wait_js(
            f"{self.name} open with an idle kernel",
            "const w = P(); const k = w && w.sessionContext && w.sessionContext.session "
            "&& w.sessionContext.session.kernel; return !!(k && k.status === 'idle' && w.content "
            "&& w.content.widgets.length > 0 && w.context.isReady);",
            timeout=timeout,
        )

    # --- cells -----------------------------------------------------------------------------
    def cell_count(self) -> int:
        return int(self.js("return P().content.widgets.length;"))

    def add_cell(self, source: str) -> int:
        """Put `source` in a new code cell at the end (or in the first cell when it is empty)."""
        return int(
            self.js(
                "const m = P().content.model.sharedModel; const n = m.cells.length;"
                "if (n === 1 && m.cells[0].getSource() === '' && m.cells[0].cell_type === 'code') {"
                "  m.cells[0].setSource(arg); return 0; }"
                "m.insertCell(n, {cell_type: 'code', source: arg}); return n;",
                source,
            )
        )

    def run(self, index: int) -> None:
        """Run cell `index` as Shift+Enter would (the notebook's own run command)."""
        self.js(
            "const p = P(); p.content.activeCellIndex = arg; "
            "void window.jupyterapp.commands.execute('notebook:run-cell'); return true;",
            index,
        )

    def wait_done(self, index: int, timeout: float = TIMEOUT) -> None:
        """Until cell `index` has finished (its execution count is set) and the kernel is idle."""
        self.wait_js(
            f"cell {index} finished and the kernel idle (the cell showed {self.text(index)!r})",
            "const p = P(); const c = p.content.widgets[arg]; const k = p.sessionContext.session.kernel;"
            "return c.model.executionCount !== null && c.model.sharedModel.execution_state !== 'running'"
            " && k.status === 'idle';",
            index,
            timeout,
        )

    def run_and_wait(self, source: str, timeout: float = TIMEOUT) -> int:
        i = self.add_cell(source)
        self.run(i)
        self.wait_done(i, timeout)
        return i

    def cell(self, index: int) -> Any:
        return self.page.locator(".jp-Notebook .jp-Cell").nth(index)

    def output_area(self, index: int) -> Any:
        # An Output widget nests its own .jp-OutputArea: the cell's area is the unambiguous one.
        return self.cell(index).locator(".jp-Cell-outputArea").first

    def text(self, index: int) -> str:
        try:
            return str(self.output_area(index).inner_text(timeout=2000))
        except Exception:
            return "(no output area)"

    def wait_text(self, index: int, needle: str, timeout: float = TIMEOUT) -> str:
        deadline = Deadline(timeout)
        with waiting_for(f"Chromium to show {needle!r} in cell {index}"):
            while True:
                text = self.text(index)
                if needle in text:
                    return text
                if deadline.passed():
                    raise timed_out(
                        f"Chromium did not show {needle!r} in cell {index}",
                        timeout,
                        f"the cell shows:\n{text}\nconsole: {self.console[-10:]}",
                    )
                time.sleep(0.1)

    def outputs(self, index: int) -> list[dict[str, Any]]:
        """Cell `index`'s outputs as the notebook model holds them (what Save will write)."""
        return list(self.js("return P().content.model.cells.get(arg).outputs.toJSON();", index))

    # --- the model, as the live notebook bridge sees it ------------------------------------
    def cells(self) -> list[dict[str, Any]]:
        """Each cell as the notebook model holds it: id, type, source, execution count, outputs."""
        return list(
            self.js(
                "const m = P().content.model; const out = [];"
                "for (let i = 0; i < m.cells.length; i++) { const c = m.cells.get(i);"
                "  out.push({id: c.id, cell_type: c.type, source: c.sharedModel.getSource(),"
                "    execution_count: c.type === 'code' ? c.executionCount : null,"
                "    outputs: c.type === 'code' ? c.outputs.toJSON() : []}); }"
                "return out;"
            )
        )

    def dirty(self) -> bool:
        """Whether the model has changes the file on disk does not have."""
        return bool(self.js("return P().context.model.dirty;"))

    def index_of(self, cell_id: str) -> int:
        return int(self.js("return P().content.model.sharedModel.cells.findIndex(c => c.id === arg);", cell_id))

    def type_into(self, index: int, keys: str, delay_ms: int = 40) -> None:
        """Click into cell `index`'s editor, go to its end and type `keys` key by key, as a person does."""
        self.cell(index).locator(".cm-content").click()
        self.page.keyboard.press("Control+End")
        self.page.keyboard.type(keys, delay=delay_ms)

    # --- widgets ---------------------------------------------------------------------------
    def button(self, index: int, label: str, timeout: float = TIMEOUT) -> Any:
        """The enabled widget button of cell `index` whose text starts with `label`, once it is visible."""
        loc = (
            self.output_area(index)
            .locator("button.jupyter-button:not([disabled])", has_text=re.compile(f"^\\s*{re.escape(label)}"))
            .first
        )
        with waiting_for(f"Chromium to show an enabled {label!r} button in cell {index}"):
            try:
                loc.wait_for(state="visible", timeout=timeout * 1000)
            except Exception:
                raise timed_out(
                    f"Chromium did not show an enabled {label!r} button in cell {index}",
                    timeout,
                    f"the cell shows:\n{self.text(index)}",
                ) from None
        return loc

    def prompt(self, index: int, timeout: float = TIMEOUT) -> Any:
        """Wait for an open approval prompt (its Deny button) in cell `index`; return the prompt's box."""
        deny = self.button(index, "Deny", timeout)
        return deny.locator("xpath=ancestor::div[contains(@class,'widget-vbox')][1]")

    def reason_box(self, index: int) -> Any:
        return self.output_area(index).locator("input[placeholder^='Reason']:not([disabled])").first

    def type_reason(self, index: int, text: str, delay_ms: int = 60) -> None:
        """Click into the Deny reason box and type `text` key by key, as a person does."""
        box = self.reason_box(index)
        box.click()
        box.press_sequentially(text, delay=delay_ms)

    def in_viewport(self, locator: Any) -> bool:
        """Whether the element is (at least partly) inside the visible part of the notebook."""
        return bool(
            locator.evaluate(
                "el => { const r = el.getBoundingClientRect(); const h = window.innerHeight;"
                " return r.bottom > 0 && r.top < h && r.height > 0; }"
            )
        )

    # --- files -----------------------------------------------------------------------------
    def save(self) -> None:
        """Ctrl+S in the notebook, then wait until the file on disk matches the model."""
        self.cell(0).click(position={"x": 2, "y": 2})  # focus the notebook (command mode is fine)
        self.page.keyboard.press("Control+s")
        self.wait_js(f"{self.name} saved", "const p = P(); return p.context.model.dirty === false;")

    def close(self) -> None:
        self.page.close()

    def screenshot(self, locator: Any, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        locator.screenshot(path=str(path))
