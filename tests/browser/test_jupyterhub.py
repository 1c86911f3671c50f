"""JupyterHub for a class, for real: two people log in through Chromium, each runs `%agent` in
their own single-user server, and neither one's agent can read the other's files.

The Hub runs as docs/deploy.md's recipe 2 configures it, on 127.0.0.1 with free ports: PAM
logins (two OS accounts the test creates with `useradd`, with passwords it sets, and removes
afterwards; homes `chmod 700`), the local process spawner (each server runs as its person),
`configurable-http-proxy` from tests/hub/package.json (`npm ci --prefix tests/hub`). Each person
types their name and password, clicks Sign in, opens a notebook in their JupyterLab, loads
ipy_agent, runs a scripted `%agent` (offline) with the live-notebook tools and clicks Allow; the
cell changes in that person's notebook. Then alice's agent is asked to read a file in bob's home,
with the Read tool and with Bash (inside the bubblewrap sandbox, as the managed policy requires):
alice allows it, the OS refuses it, and bob's secret appears nowhere in alice's notebook. Last,
the key gateway runs as a Hub service: alice's kernel holds no API key, her `%agent` is answered
through the gateway (in front of a local fake of the Messages API) and her usage is counted.
("alice" and "bob" are roles: the accounts are named ipya... and ipyb..., new for each run.)

It needs root (to create accounts and switch to them), PAM, bubblewrap and Node: where a piece is
missing it skips locally and FAILS in CI (CI=true), saying what to install. When a test fails,
screenshots of every person's page go to a temp folder (printed with the failure).
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
import pytest

from tests.support.browser import EXTENSION, PROJECT_ROOT, TIMEOUT, NotebookPage, browser_missing
from tests.support.sse_server import ReplayServer, message_events
from tests.support.transcript import use
from tests.support.waits import Deadline, free_port, timed_out, wait_for_http, waiting_for

pytestmark = [pytest.mark.browser, pytest.mark.hub]

PROXY = PROJECT_ROOT / "tests" / "hub" / "node_modules" / ".bin" / "configurable-http-proxy"
SECRET = "bob-only-" + secrets.token_hex(8)  # in bob's home; must never reach alice's notebook


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def hub_missing() -> str | None:
    """Why this suite cannot run on this machine, or None."""
    why = browser_missing(extension=True)
    if why:
        return why
    if os.geteuid() != 0:
        return "it creates OS accounts and spawns servers as them: run it as root (CI does)"
    try:
        import jupyterhub  # noqa: F401
        import pamela  # noqa: F401
    except ImportError:
        return "the jupyterhub package is missing: pip install -e '.[test,hub]'"
    if not PROXY.exists():
        return f"configurable-http-proxy is missing ({PROXY}): npm ci --prefix tests/hub"
    for tool in ("useradd", "userdel", "chpasswd", "bwrap", "node"):
        if shutil.which(tool) is None:
            return f"`{tool}` is missing (apt-get install passwd bubblewrap nodejs)"
    return None


def need_hub() -> None:
    why = hub_missing()
    if why is None:
        return
    if in_ci():
        pytest.fail(f"the JupyterHub tests cannot run in CI: {why}", pytrace=False)
    pytest.skip(f"the JupyterHub tests need: {why}")


def readable_dir(prefix: str) -> Path:
    """A fresh directory every account can read (pytest's tmp dirs are root's own, 0700)."""
    d = Path(tempfile.mkdtemp(prefix=prefix))
    d.chmod(0o755)
    return d


# --- the accounts -------------------------------------------------------------------------------


@dataclass
class Person:
    name: str
    password: str
    home: Path
    uid: int
    gid: int

    def write(self, relative: str, text: str, mode: int = 0o644) -> Path:
        """A file in this person's home, theirs (as if they had written it)."""
        path = self.home / relative
        path.write_text(text)
        os.chown(path, self.uid, self.gid)
        path.chmod(mode)
        return path

    def run(self, *argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """A command run as this person (what their server can do)."""
        return subprocess.run(
            argv,
            user=self.uid,
            group=self.gid,
            extra_groups=[],
            cwd=self.home,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )


def create_person(role: str) -> Person:
    name = f"ipy{role}{secrets.token_hex(3)}"  # unique per run: an old run's leftover never clashes
    password = secrets.token_urlsafe(12)
    subprocess.run(["useradd", "--create-home", "--shell", "/bin/bash", name], check=True, timeout=60)
    try:
        subprocess.run(["chpasswd"], input=f"{name}:{password}\n", text=True, check=True, timeout=60)
        entry = pwd.getpwnam(name)
        home = Path(entry.pw_dir)
        home.chmod(0o700)  # what docs/deploy.md asks of every home
    except BaseException:
        subprocess.run(["userdel", "--remove", name], capture_output=True, timeout=60)
        raise
    return Person(name, password, home, entry.pw_uid, entry.pw_gid)


def remove_person(person: Person) -> None:
    """End what still runs as this account (the Hub stops its servers first), then remove it."""
    import psutil

    for proc in psutil.process_iter(["uids"]):
        uids = proc.info["uids"]
        if uids is not None and person.uid in (uids.real, uids.effective):
            with contextlib.suppress(psutil.Error):
                proc.kill()  # by PID: only processes of the account this test created
    subprocess.run(["userdel", "--remove", person.name], capture_output=True, timeout=60)
    shutil.rmtree(person.home, ignore_errors=True)


@pytest.fixture(scope="module")
def people() -> Iterator[tuple[Person, Person]]:
    need_hub()
    made: list[Person] = []
    try:
        made.append(create_person("a"))
        made.append(create_person("b"))
        yield made[0], made[1]
    finally:
        for person in made:
            remove_person(person)


# --- a Python the people can run ----------------------------------------------------------------


def closed_to_others(path: Path) -> Path | None:
    """The first directory on `path`'s way that other accounts cannot enter (no o+x), or None."""
    for d in [*reversed(path.parents), path]:
        if d.is_dir() and not d.stat().st_mode & stat.S_IXOTH:
            return d
    return None


def users_python(person: Person, shared: Path) -> str:
    """The interpreter of the single-user servers: this environment's, when every account can
    reach it (a clone under /srv, /opt or /home/runner/work). Where the environment's base Python
    sits in a closed directory (pyenv under /root, 0700), a venv of the system's Python of the same
    version is made in `shared`, reading this environment's packages: the same code, from a place
    every account can reach. A closed checkout or environment fails with what to change."""
    packages = Path(sysconfig.get_paths()["purelib"])
    for needed in (PROJECT_ROOT, packages):
        closed = closed_to_others(needed)
        assert closed is None, (
            f"the test's accounts cannot reach {needed}: {closed} is mode {closed.stat().st_mode & 0o777:o} "
            "(others may not enter it). Clone the project and make its venv where every account can read "
            "them (e.g. under /srv or /opt), as docs/deploy.md asks of a single-user environment."
        )
    python = sys.executable
    if closed_to_others(Path(os.path.realpath(sys._base_executable))) is not None:
        version = f"{sys.version_info.major}.{sys.version_info.minor}"
        base = next(
            (p for p in (f"/usr/bin/python{version}", f"/usr/local/bin/python{version}") if Path(p).exists()), None
        )
        assert base is not None, (
            f"the test's accounts cannot run {sys._base_executable} (a directory on its way is closed to "
            f"them), and there is no /usr/bin/python{version} to stand in: make a venv over a Python every "
            "account can run, as docs/deploy.md asks of a single-user environment"
        )
        venv = shared / "users-venv"
        subprocess.run([base, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
        site = Path(sysconfig.get_paths(vars={"base": str(venv), "platbase": str(venv)})["purelib"])
        (site / "ipy_agent_test_env.pth").write_text(f"import site; site.addsitedir({str(packages)!r})\n")
        for shared_dir in ("share", "etc"):  # JupyterLab's files, the widgets; the server extensions enabled
            (venv / shared_dir).symlink_to(Path(sys.prefix) / shared_dir)
        python = str(venv / "bin" / "python")
    env = {"PYTHONPATH": str(PROJECT_ROOT), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    seen = person.run(python, "-c", "import ipy_agent, jupyterhub, jupyterlab; print('ok')", env=env)
    assert seen.stdout.strip() == "ok", f"{python} cannot import the packages as {person.name}: {seen.stderr}"
    return python


# --- the Hub ------------------------------------------------------------------------------------


@dataclass
class Hub:
    url: str
    home: Path
    proc: subprocess.Popen[bytes]
    api: ReplayServer  # the Messages API behind the key gateway (a local fake)
    usage_db: Path  # the key gateway's

    def log(self) -> str:
        try:
            return (self.home / "hub.log").read_text(errors="replace")[-6000:]
        except OSError:
            return "(no log)"


HUB_CONFIG = """\
# docs/deploy.md's recipe 2, on 127.0.0.1 with free ports (written by tests/browser/test_jupyterhub.py)
import sys

c.JupyterHub.bind_url = {bind_url!r}
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {hub_port}
c.ConfigurableHTTPProxy.api_url = {proxy_api!r}
c.ConfigurableHTTPProxy.command = [{proxy!r}]
c.JupyterHub.db_url = {db_url!r}
c.JupyterHub.cookie_secret_file = {cookie!r}
c.JupyterHub.authenticator_class = "pam"
c.Authenticator.allowed_users = {users!r}
c.JupyterHub.spawner_class = "localprocess"
c.Spawner.cmd = [{python!r}, "-m", "jupyterhub.singleuser"]
c.Spawner.args = ["--LabApp.expose_app_in_browser=True", "--LanguageServerManager.autodetect=False"]
c.Spawner.default_url = "/lab"
c.Spawner.environment = {environment!r}
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 120
c.JupyterHub.services = [
    {{
        "name": "ipy-agent-gateway",
        "url": "http://127.0.0.1:{gateway_port}",
        "command": [sys.executable, "-m", "ipy_agent.gateway", "--port", "{gateway_port}",
                    "--db", {usage_db!r}, "--per-day-usd", "2", "--upstream", {upstream!r}],
        "environment": {{"ANTHROPIC_API_KEY": open({key_file!r}).read().strip()}},
    }}
]
"""
REAL_KEY = "sk-ant-held-by-the-hub-" + secrets.token_hex(4)


def write_config(
    home: Path, shared: Path, people: tuple[Person, Person], python: str, upstream: str
) -> tuple[Path, str]:
    """The Hub's jupyterhub_config.py (and what it points to); returns its path and the Hub's URL."""
    policy = shared / "managed-settings.json"  # root's, readable by all: a person cannot loosen it
    policy.write_text(json.dumps({"sandbox": {"enabled": True}}))
    data = shared / "jupyter"  # the checkout's build of the extension, as tests/support/browser.py does
    (data / "labextensions").mkdir(parents=True)
    (data / "labextensions" / EXTENSION).symlink_to(PROJECT_ROOT / "ipy_agent" / "labextension")
    key_file = home / "anthropic.key"  # the Hub's only (home is 0700)
    key_file.write_text(REAL_KEY + "\n")
    port = free_port()
    config = home / "jupyterhub_config.py"
    config.write_text(
        HUB_CONFIG.format(
            bind_url=f"http://127.0.0.1:{port}",
            hub_port=free_port(),
            proxy_api=f"http://127.0.0.1:{free_port()}",
            proxy=str(PROXY),
            db_url=f"sqlite:///{home / 'jupyterhub.sqlite'}",
            cookie=str(home / "cookie_secret"),
            users={p.name for p in people},
            python=python,
            environment={
                "PYTHONPATH": str(PROJECT_ROOT),
                "JUPYTER_PATH": str(data),
                "IPY_AGENT_MANAGED_SETTINGS": str(policy),  # /etc/ipy_agent/managed-settings.json in production
                "IPY_AGENT_GATEWAY_URL": f"http://127.0.0.1:{port}/services/ipy-agent-gateway",
            },
            gateway_port=free_port(),
            usage_db=str(home / "ipy_agent_usage.sqlite"),
            upstream=upstream,
            key_file=str(key_file),
        )
    )
    return config, f"http://127.0.0.1:{port}"


def wait_for_hub(hub: Hub) -> None:
    wait_for_http(f"{hub.url}/hub/api", "JupyterHub", TIMEOUT, alive=lambda: hub.proc.poll() is None, log=hub.log)


@pytest.fixture(scope="module")
def hub(people: tuple[Person, Person]) -> Iterator[Hub]:
    shared = readable_dir("ipy_agent_hub_shared_")
    home = Path(tempfile.mkdtemp(prefix="ipy_agent_hub_"))  # the Hub's own: root only
    proc: subprocess.Popen[bytes] | None = None
    try:
        with ReplayServer() as api:
            config, url = write_config(home, shared, people, users_python(people[0], shared), api.url)
            env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "IPY_AGENT_", "JUPYTER"))}
            env["PYTHONPATH"] = str(PROJECT_ROOT)
            with (home / "hub.log").open("wb") as log:
                proc = subprocess.Popen(
                    [sys.executable, "-m", "jupyterhub", "-f", str(config)],
                    cwd=home,
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            hub = Hub(url, home, proc, api, home / "ipy_agent_usage.sqlite")
            wait_for_hub(hub)
            yield hub
    finally:
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)  # the Hub stops the people's servers, the gateway and its proxy
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(shared, ignore_errors=True)


# --- a person in Chromium -----------------------------------------------------------------------


class HubPage(NotebookPage):
    """A notebook in a person's JupyterLab, behind the Hub; its waits show the Hub's log."""

    def __init__(self, hub: Hub, page: Any, name: str) -> None:
        super().__init__(hub, page, name)  # type: ignore[arg-type]  # only .log() is used


@pytest.fixture(scope="module")
def screens() -> Iterator[Path]:
    """Where the screenshots of a failed test go (removed again when none was taken)."""
    d = Path(tempfile.mkdtemp(prefix="ipy_agent_hub_screens_"))
    yield d
    with contextlib.suppress(OSError):
        d.rmdir()


@pytest.fixture(scope="module")
def sessions(browser: Any) -> Iterator[dict[str, Any]]:
    """Each person's browser page (a context of its own: their own cookies), by name, once logged in."""
    pages: dict[str, Any] = {}
    yield pages
    for page in pages.values():
        with contextlib.suppress(Exception):
            page.context.close()


@pytest.fixture
def shots(sessions: dict[str, Any], screens: Path, request: pytest.FixtureRequest) -> Iterator[None]:
    """Screenshots of every person's page when the test fails."""
    failed_before = request.session.testsfailed
    yield
    if request.session.testsfailed > failed_before:  # the call's report is counted before teardown
        for name, page in sessions.items():
            with contextlib.suppress(Exception):
                page.screenshot(path=str(screens / f"{request.node.name}-{name}.png"), full_page=True)
        print(f"screenshots of the pages: {screens}")


def log_in(hub: Hub, browser: Any, person: Person) -> Any:
    """The Hub's login page: the person types their name and password and clicks Sign in; the Hub
    spawns their server and sends them to their JupyterLab."""
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    page.goto(f"{hub.url}/hub/login")
    with waiting_for(f"the Hub's login page for {person.name}"):
        page.locator("#username_input").press_sequentially(person.name, delay=20, timeout=TIMEOUT * 1000)
        page.locator("#password_input").press_sequentially(person.password, delay=20)
        page.get_by_role("button", name="Sign in").click()
    with waiting_for(f"{person.name}'s server to start and JupyterLab to open"):
        try:
            page.wait_for_url(f"**/user/{person.name}/lab**", timeout=2 * TIMEOUT * 1000)
        except Exception:
            raise timed_out(
                f"{person.name} did not reach their JupyterLab after Sign in",
                2 * TIMEOUT,
                f"the page is {page.url}:\n{page.inner_text('body')[:1500]}\nthe Hub's log:\n{hub.log()}",
            ) from None
    return page


def open_notebook(hub: Hub, browser: Any, sessions: dict[str, Any], person: Person, name: str) -> HubPage:
    """`name` in the person's JupyterLab (logged in through the login page the first time)."""
    page = sessions.get(person.name)
    if page is None:
        page = sessions[person.name] = log_in(hub, browser, person)
    page.goto(f"{hub.url}/user/{person.name}/lab/tree/{name}?reset")
    nb = HubPage(hub, page, name)
    nb.wait_ready()
    return nb


def write_notebook(person: Person, name: str, cells: list[str], ids: list[str]) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(src) for src in cells]
    for cell, cell_id in zip(nb.cells, ids):
        cell.id = cell_id
    person.write(name, nbformat.writes(nb))


def write_edit_script(person: Person, notebook: str) -> None:
    person.write(
        "edit.json",
        json.dumps(
            {
                "provenance": {"kind": "hand-written", "note": "tests/browser/test_jupyterhub.py"},
                "turns": [
                    [use("NotebookRead", "r1")],
                    [
                        use(
                            "NotebookEdit",
                            "e1",
                            notebook_path=notebook,
                            cell_id="c1",
                            new_source=f"who = {person.name!r}",
                        )
                    ],
                    f"Changed the cell in {person.name}'s notebook.",
                ],
            }
        ),
    )


# --- the tests ----------------------------------------------------------------------------------


def test_each_person_logs_in_and_approves_a_live_edit_in_their_own_notebook(hub, people, browser, sessions, shots):
    for person in people:
        write_edit_script(person, "agent.ipynb")
        write_notebook(
            person,
            "agent.ipynb",
            [
                "%load_ext ipy_agent",
                "import getpass, os; print('runs as', getpass.getuser(), 'in', os.getcwd())",
                "%agent --script edit.json change the cell",
                "who = None",
            ],
            ["load", "where", "agent", "c1"],
        )
    for person in people:
        nb = open_notebook(hub, browser, sessions, person, "agent.ipynb")
        nb.run(0)
        nb.wait_done(0)
        nb.run(1)
        nb.wait_done(1)
        assert nb.wait_text(1, "runs as").strip() == f"runs as {person.name} in {person.home}"
        nb.run(2)
        nb.button(2, "Accept").click()  # the live edit, accepted with the mouse
        nb.wait_done(2)
        nb.wait_text(2, f"Changed the cell in {person.name}'s notebook.")
        assert nb.cells()[3]["source"] == f"who = {person.name!r}"  # in this person's open notebook
    for person in people:  # and nothing was saved behind either person's back
        on_disk = json.loads((person.home / "agent.ipynb").read_text())
        assert "".join(on_disk["cells"][3]["source"]) == "who = None"


def test_one_persons_agent_cannot_read_anothers_home(hub, people, browser, sessions, shots):
    alice, bob = people
    secret = bob.write("secret.txt", SECRET + "\n", mode=0o644)  # readable by all: bob's home guards it
    assert bob.run("cat", str(secret)).stdout.strip() == SECRET  # bob himself can read it
    alice.write(
        "peek.json",
        json.dumps(
            {
                "provenance": {"kind": "hand-written", "note": "tests/browser/test_jupyterhub.py"},
                "turns": [
                    [use("Read", "t1", file_path=str(secret))],
                    [use("Bash", "t2", command=f"cat {secret}", description="Show bob's secret")],
                    "I could not read it.",
                ],
            }
        ),
    )
    write_notebook(
        alice,
        "peek.ipynb",
        ["%load_ext ipy_agent", "%agent --script peek.json show me bob's secret"],
        ["load", "agent"],
    )
    nb = open_notebook(hub, browser, sessions, alice, "peek.ipynb")
    nb.run(0)
    nb.wait_done(0)
    nb.run(1)
    deadline = Deadline(2 * TIMEOUT)
    with waiting_for("alice's agent to finish, alice allowing what it asks"):
        while "I could not read it." not in nb.text(1):
            allow = nb.output_area(1).locator("button.jupyter-button:not([disabled])", has_text="Allow").first
            if allow.is_visible():
                allow.click()  # alice allows it: the OS still refuses
            if deadline.passed():
                raise timed_out("alice's agent did not finish", 2 * TIMEOUT, nb.text(1))
            time.sleep(0.3)
    nb.wait_done(1)
    details = nb.output_area(1).locator("summary", has_text="Details")
    for i in range(details.count()):
        details.nth(i).click()  # the Bash row's output, as alice opens it
    shown = nb.text(1)
    assert "Bash sandbox: always" in shown  # the policy's sandbox holds for what alice approves too
    assert shown.count("Permission denied") >= 2, shown  # the Read row and the Bash row say why
    everything = json.dumps(nb.cells()) + nb.page.content()
    assert SECRET not in everything  # not in the notebook model, not on the page


def test_the_key_gateway_as_a_hub_service_answers_with_the_hubs_key_and_counts_for_the_person(
    hub, people, browser, sessions, shots
):
    """docs/deploy.md's gateway service: alice's kernel has no API key, only the gateway's address
    and her Hub token; her `%agent` is answered through the Hub's proxy and the gateway, which adds
    the key the Hub holds and counts the tokens for her."""
    alice, _bob = people
    hub.api.add(message_events([{"type": "text", "text": "Hello alice, through the Hub's gateway."}], output_tokens=9))
    write_notebook(
        alice,
        "gateway.ipynb",
        [
            "%load_ext ipy_agent",
            "import os; print('key here:', 'ANTHROPIC_API_KEY' in os.environ, '| token:', 'JUPYTERHUB_API_TOKEN' in os.environ)",
            "%agent say hello",
        ],
        ["load", "env", "agent"],
    )
    nb = open_notebook(hub, browser, sessions, alice, "gateway.ipynb")
    for i in (0, 1):
        nb.run(i)
        nb.wait_done(i)
    assert nb.wait_text(1, "key here:").strip() == "key here: False | token: True"
    nb.run(2)
    nb.wait_done(2)
    nb.wait_text(2, "Hello alice, through the Hub's gateway.")
    (sent,) = hub.api.requests
    assert sent.headers.get("x-api-key") == REAL_KEY  # the gateway added the Hub's key
    assert "authorization" not in {k.lower() for k in sent.headers}  # alice's token went no further
    report = subprocess.run(
        [sys.executable, "-m", "ipy_agent.gateway", "--db", str(hub.usage_db), "--report"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)},
    )
    rows = [line.split("\t") for line in report.stdout.splitlines()]
    assert [(r[0], r[1]) for r in rows] == [(alice.name, "1 requests")], report.stdout + report.stderr
    assert "out 9" in rows[0][3]
