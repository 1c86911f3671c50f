"""Which suites run, every test's timeout, the fixtures of tests/support for every test, and
the end of the session.

`python -m pytest -q` runs the fast suites: every test not marked `kernel` (starts a real
kernel), `browser` (Chromium against a real Jupyter server), `hub` (JupyterHub or a kernel
gateway, with Chromium) or `slow` (fuzzers, corpora, the teaching notebooks). `python -m pytest -q --full` runs everything; CI (`.ci/run`) runs that.
Naming paths or a `-m` expression selects as pytest always does (`python -m pytest tests/kernel`
runs the kernel tests there).

Both runs are spread over WORKERS processes (pytest-xdist, when installed): each test goes to
whichever worker is free, except the browser and hub tests, which run one after another on one
worker (the group HEAVY_GROUP), as a person's machine runs one JupyterLab at a time. A run that
names paths, or `-n`, or `-p no:xdist`, runs as pytest always does (one process, unless `-n` says).

Every test has a timeout (pytest-timeout; pyproject.toml sets the default): the suites below get
longer ones. The harnesses' own waits are shorter and say what did not happen; when the timeout
fires anyway, its message names what the test was waiting for (tests/support/waits.py).
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any

import pytest

from tests.support import waits

pytest_plugins = ["tests.support.fixtures"]

HEAVY = ("kernel", "browser", "hub", "slow")
# The suites whose tests drive the machine's heaviest things (Jupyter servers with Chromium,
# JupyterHub and its OS accounts): with xdist they run in one group, one test at a time, while the
# other worker runs the rest (a kernel test starts a kernel of its own, beside one browser test).
ONE_AT_A_TIME = ("browser", "hub")
HEAVY_GROUP = "one_at_a_time"
WORKERS = 2  # CI's machine has 2 cores; the fast tests spend much of their time waiting on children
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Seconds for a whole test (setup and teardown included) in each heavy suite; the rest get the
# `timeout` of pyproject.toml. A test's own `@pytest.mark.timeout(n)` wins over both.
SUITE_TIMEOUTS = {"kernel": 300, "browser": 300, "hub": 600, "slow": 900}
LEFT_OUT = pytest.StashKey[int]()
COLLECTED = pytest.StashKey[list[pytest.Item]]()  # every item collected, the left-out ones too


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--full",
        action="store_true",
        help="run every suite: the kernel, browser, hub and slow tests too (what CI runs)",
    )


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """The default run and `--full` of this repository use WORKERS xdist workers (before xdist's
    own hook turns `numprocesses` into workers); anything else is left as it was asked for."""
    if (
        not config.pluginmanager.has_plugin("xdist")
        or hasattr(config, "workerinput")  # a worker itself
        or str(config.rootpath) != ROOT  # another project that loads this file (tests/test_suites.py)
        or config.args_source != pytest.Config.ArgsSource.TESTPATHS
        or config.getoption("markexpr")
        or config.getoption("numprocesses", None) is not None
        or config.getoption("dist", "no") != "no"
        or config.getoption("collectonly")
        or config.getoption("usepdb")
    ):
        return
    config.option.numprocesses = WORKERS
    config.option.dist = "loadgroup"


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist's controller, for each worker: a worker parses the command line again, which names no
    `--dist`; it is told to mark the grouped tests, as `--dist loadgroup` would tell it."""
    if node.config.getoption("dist", "no") == "loadgroup":
        node.workerinput["loadgroup"] = True


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None and workerinput.get("loadgroup"):
        config.option.loadgroup = True  # read by xdist's worker when it names each grouped test


def fast_only(config: pytest.Config) -> bool:
    """No --full, no -m and no paths named: the default run, of the fast suites."""
    return (
        not config.getoption("--full")
        and not config.getoption("markexpr")
        and config.args_source == pytest.Config.ArgsSource.TESTPATHS
    )


@pytest.fixture(autouse=True)
def _no_personal_files(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """The person's own ipy_agent directory (their AGENTS.md, skills, MCP settings) is an empty
    one: what a test sees does not depend on the machine it runs on. Tests that need one set
    IPY_AGENT_CONFIG_DIR themselves (the test kernels get an empty one of their own)."""
    monkeypatch.setenv("IPY_AGENT_CONFIG_DIR", str(tmp_path_factory.mktemp("personal")))
    monkeypatch.delenv("IPY_AGENT_MANAGED_SETTINGS", raising=False)  # tests that need a policy name one
    monkeypatch.delenv("IPY_AGENT_GATEWAY_URL", raising=False)  # models talk to the API they are given


def suite_timeout(item: pytest.Item) -> int | None:
    timeouts = [SUITE_TIMEOUTS[m] for m in HEAVY if item.get_closest_marker(m)]
    return max(timeouts) if timeouts else None


@pytest.hookimpl(tryfirst=True)  # before xdist's worker reads the xdist_group marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    config.stash[COLLECTED] = list(items)
    grouped = config.pluginmanager.has_plugin("xdist")  # its marker is known only with it
    for item in items:
        seconds = suite_timeout(item)
        if seconds is not None and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(seconds))
        if grouped and any(item.get_closest_marker(m) for m in ONE_AT_A_TIME):
            item.add_marker(pytest.mark.xdist_group(HEAVY_GROUP))
    if not fast_only(config):
        return
    heavy = [item for item in items if any(item.get_closest_marker(m) for m in HEAVY)]
    if heavy:
        config.hook.pytest_deselected(items=heavy)
        left_out = set(heavy)
        items[:] = [item for item in items if item not in left_out]
    config.stash[LEFT_OUT] = len(heavy)
    workeroutput = getattr(config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: the controller prints the summary
        workeroutput["left_out"] = len(heavy)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """xdist's controller: how many tests its workers left out (each collected the same)."""
    left_out = getattr(node, "workeroutput", {}).get("left_out")
    if left_out is not None:
        node.config.stash[LEFT_OUT] = left_out


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    left_out = config.stash.get(LEFT_OUT, 0)
    if left_out:
        terminalreporter.write_line(
            f"fast suites only: {left_out} kernel, browser, hub and slow tests were left out; "
            "`python -m pytest -q --full` runs everything"
        )
    from tests.test_layers import LONG_MODULE_LINES, long_modules

    if long := long_modules():
        terminalreporter.write_line(
            f"modules over {LONG_MODULE_LINES} lines (check each still holds one concept): "
            + ", ".join(f"{name} ({n})" for name, n in sorted(long.items()))
        )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    waits.set_current_test(item)
    try:
        return (yield)
    finally:
        waits.set_current_test(None)


def _where(frame: FrameType | None, roots: tuple[str, ...]) -> str:
    """The innermost line of the project's own code on the stack (the test, or what it called)."""
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        root = next((r for r in roots if path.startswith(r + os.sep)), None)
        if root is not None and f"{os.sep}site-packages{os.sep}" not in path:
            return f"{os.path.relpath(path, root)}:{frame.f_lineno} in {frame.f_code.co_name}"
        frame = frame.f_back
    return "(no line of the project's code on the stack)"


@pytest.hookimpl(tryfirst=True)
def pytest_timeout_set_timer(item: pytest.Item, settings: Any) -> bool | None:
    """pytest-timeout's signal method, with a message that says what the test waited for."""
    if settings.method != "signal" or threading.current_thread() is not threading.main_thread():
        return None  # pytest-timeout's own timer

    def fire(signum: int, frame: FrameType | None) -> None:
        __tracebackhide__ = True
        pending = waits.current_waits()
        roots = (str(item.config.rootpath), os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        doing = f"waiting for {pending[-1]}" if pending else f"at {_where(frame, roots)}"
        if threading.active_count() > 1:  # where the other threads were, as pytest-timeout shows it
            import pytest_timeout

            terminal = item.config.get_terminal_writer()
            terminal.sep("+", title="Timeout: the stacks of every thread")
            pytest_timeout.dump_stacks(terminal)
        pytest.fail(
            f"{item.nodeid} did not finish within its {settings.timeout:.0f} s timeout (pytest-timeout, "
            f"the last resort); it was {doing}",
            pytrace=True,
        )

    def cancel() -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)

    item.cancel_timeout = cancel  # type: ignore[attr-defined]  # pytest-timeout's cancel hook calls it
    signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, settings.timeout)
    return True


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # Widgets the tests made are closed while the interpreter is whole: left to `__del__` at
    # shutdown, each one prints a traceback (ipywidgets' registry is already gone by then).
    import sys

    widgets = sys.modules.get("ipywidgets")
    if widgets is not None:
        widgets.Widget.close_all()
