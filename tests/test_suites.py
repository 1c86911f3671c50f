"""The suites: the default run is the fast one, `--full` runs everything, every test has a
timeout, and a timeout (or a harness deadline) says what it waited for.

The behaviour of tests/conftest.py is checked in a small project of its own, run by a real
pytest in a child process; the timeouts of this very session are checked on its items.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from pytest_timeout import _get_item_settings

from tests.conftest import COLLECTED, SUITE_TIMEOUTS
from tests.support import browser, kernel

ROOT = Path(__file__).resolve().parents[1]

PROJECT = {
    "pytest.ini": """
        [pytest]
        testpaths = .
        timeout = 120
        markers =
            kernel: k
            browser: b
            slow: s
    """,
    "test_mixed.py": """
        import pytest

        def test_fast(request):
            print("TIMEOUT fast", request.node.get_closest_marker("timeout"))

        @pytest.mark.kernel
        def test_kernel(request):
            print("TIMEOUT kernel", request.node.get_closest_marker("timeout").args)

        @pytest.mark.browser
        def test_browser():
            pass

        @pytest.mark.slow
        def test_slow():
            pass
    """,
    "test_hang.py": """
        import time
        import pytest
        from tests.support.waits import waiting_for

        @pytest.mark.timeout(1)
        def test_hangs_in_a_wait():
            with waiting_for("the kernel to finish cell 3"):
                time.sleep(30)

        @pytest.mark.timeout(1)
        def test_hangs_elsewhere():
            time.sleep(30)
    """,
    "test_unmarked.py": """
        from tests.support.browser import JupyterServer
        from tests.support.kernel import Kernel

        def test_starts_a_kernel(tmp_path):
            Kernel(tmp_path)

        def test_starts_a_server(tmp_path):
            JupyterServer("lab", tmp_path).start()
    """,
}
MIXED = {"test_fast", "test_kernel", "test_browser", "test_slow"}


def run_pytest(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.conftest", "-p", "no:cacheprovider", "-s", "-rA", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=100,
    )


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("suites")
    for name, text in PROJECT.items():
        (root / name).write_text(textwrap.dedent(text).lstrip())
    return root


def passed(out: subprocess.CompletedProcess[str]) -> set[str]:
    return {line.split("::")[-1].strip() for line in out.stdout.splitlines() if line.startswith("PASSED")}


def test_the_default_run_is_the_fast_suites_and_its_failures_say_what_they_waited_for(project: Path):
    """The default run leaves the heavy suites out and says so. In what it runs, a timeout names
    the wait it interrupted (or where the test was), and a test that starts a kernel or a Jupyter
    server without its suite's marker fails at once."""
    out = run_pytest(project)
    assert out.returncode == 1  # the hanging and unmarked tests fail, as they should
    assert passed(out) == {"test_fast"}
    assert "3 deselected" in out.stdout
    assert (
        "fast suites only: 3 kernel, browser, hub and slow tests were left out" in out.stdout and "--full" in out.stdout
    )
    assert "TIMEOUT fast None" in out.stdout  # the ini's default applies
    assert (
        "test_hang.py::test_hangs_in_a_wait did not finish within its 1 s timeout (pytest-timeout, the last "
        "resort); it was waiting for the kernel to finish cell 3"
    ) in out.stdout
    assert "it was at test_hang.py:12 in test_hangs_elsewhere" in out.stdout
    assert "test_starts_a_kernel starts a real kernel, so it belongs to the `kernel` suite" in out.stdout
    assert "starts a Jupyter lab server for Chromium, so it belongs to the `browser` suite" in out.stdout


def test_full_runs_every_suite_and_a_heavy_test_gets_its_suites_timeout(project: Path):
    out = run_pytest(project, "--full")
    assert passed(out) == MIXED, out.stdout + out.stderr
    assert f"TIMEOUT kernel ({SUITE_TIMEOUTS['kernel']},)" in out.stdout
    assert "fast suites only" not in out.stdout


def test_a_named_file_runs_whatever_its_suites(project: Path):
    assert passed(run_pytest(project, "test_mixed.py")) == MIXED


def test_every_collected_test_has_a_timeout(request: pytest.FixtureRequest):
    """Every item this session collected (in the default run, the left-out suites' too)."""
    items = request.config.stash[COLLECTED]
    assert request.node in items
    assert float(request.config.getini("timeout")) > 0
    for item in items:
        settings = _get_item_settings(item)
        assert settings.timeout and settings.timeout > 0, f"{item.nodeid} has no timeout"
        for marker, seconds in SUITE_TIMEOUTS.items():
            if item.get_closest_marker(marker):
                assert settings.timeout >= seconds or item.get_closest_marker("timeout").kwargs, item.nodeid


def test_harness_deadlines_are_shorter_than_their_suites_timeouts():
    assert SUITE_TIMEOUTS["kernel"] > kernel.TIMEOUT
    assert SUITE_TIMEOUTS["browser"] > browser.TIMEOUT


def test_the_shared_helpers_are_defined_once():
    """What tests/support provides (transcript builders, the ToolContext factory, the shared
    fixtures) is not defined again in a test file, and no test builds a ToolContext by hand."""
    import ast

    from tests.support import fixtures, transcript

    shared = {n for n in dir(transcript) if not n.startswith("_") and callable(getattr(transcript, n))}
    shared |= {"tool_ctx", "call_direct", "write_tree", "Recorder"}
    shared |= {n for n, f in vars(fixtures).items() if hasattr(f, "_fixture_function_marker") or "fixture" in repr(f)}
    shared -= {"Any", "Iterable"}
    support = ROOT / "tests" / "support"
    again = []
    for path in (ROOT / "tests").rglob("*.py"):
        if support in path.parents:
            continue
        source = path.read_text(encoding="utf-8")
        for node in ast.parse(source).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name in shared:
                again.append(f"{path.relative_to(ROOT)}:{node.lineno} defines {node.name} again")
        by_hand = "ToolContext" + "("  # not spelled out: this file would find itself
        if by_hand in source and path.name != "test_atomic_write_kill.py":  # that one's is a child script
            again.append(f"{path.relative_to(ROOT)} builds a ToolContext by hand (use tests.support.tools.tool_ctx)")
    assert {"use", "results_of", "rec", "ctx", "shell", "api_server"} <= shared
    assert again == []
