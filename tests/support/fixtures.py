"""The fixtures any test may use; tests/conftest.py loads this module as a plugin.

`rec` builds recording tools; `ctx` is a ToolContext in tmp_path for calling one tool directly;
`api_server` is a local Messages API replaying scripted streams;
`make_shell`, `shell` and `magics` are a fresh InteractiveShell (no kernel) with ipy_agent
loaded, in tmp_path; `script` writes a ScriptedModel transcript for `%agent --script`;
`need_bwrap` skips (or in CI fails) where bubblewrap cannot sandbox; `need_root` skips where
the test does not run as root (or in CI fails, except in its unprivileged pass).
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # imported when a fixture is used: a pytest that runs none starts quicker
    from ipy_agent.contract.tool_context import ToolContext

    from .tools import Recorder


@pytest.fixture
def rec() -> Recorder:
    from .tools import Recorder

    return Recorder()


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    from .tools import tool_ctx

    return tool_ctx(tmp_path)


@pytest.fixture
def api_server() -> Iterator[Any]:
    """A local Messages API (tests/support/sse_server.py) for the real anthropic client."""
    from .sse_server import ReplayServer

    with ReplayServer() as server:
        yield server


@pytest.fixture
def need_bwrap() -> None:
    """Skip where bubblewrap cannot sandbox (a developer's Mac); in CI, fail and say why."""
    from ipy_agent.tools.bash.sandbox import sandbox_status

    status = sandbox_status()
    if status.available:
        return
    message = f"the OS sandbox is unavailable: {status.reason}. .ci/run installs bubblewrap; run it as root, or apt-get install bubblewrap"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


UNPRIVILEGED_PASS = "IPY_AGENT_CI_UNPRIVILEGED"  # set by .ci/run for its run of tests/security as nobody


def require_root(what: str = "the test proves what happens when the kernel runs as root") -> None:
    """Skip where the test does not run as root; in CI, fail, unless this is CI's second run of
    the security suite, as an unprivileged user (where the root-only tests are expected to skip)."""
    if os.geteuid() == 0:
        return
    message = f"{what}: run it as root (CI's first pass does)"
    if os.environ.get("CI") == "true" and not os.environ.get(UNPRIVILEGED_PASS):
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture
def need_root() -> None:
    require_root()


@pytest.fixture
def make_shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Any]]:
    """Fresh InteractiveShells in tmp_path (no history file); `load=False` skips %load_ext."""
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("IPY_AGENT_NONINTERACTIVE", raising=False)
    shells: list[Any] = []

    def make(config: Any = None, load: bool = True) -> Any:
        InteractiveShell.clear_instance()
        cfg = config or Config()
        cfg.HistoryManager.enabled = False  # no sqlite history file in the person's home
        sh = InteractiveShell.instance(config=cfg)
        shells.append(sh)
        if load:
            sh.run_line_magic("load_ext", "ipy_agent")
        return sh

    yield make
    InteractiveShell.clear_instance()
    for sh in shells:
        # Each shell registered its exit cleanup (a namespace reset, about a second each, which
        # made pytest take a minute to exit): its temporary files go now, the reset not at all.
        atexit.unregister(sh.atexit_operations)
        for path in sh.tempfiles:
            path.unlink(missing_ok=True)
        for folder in sh.tempdirs:
            shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def shell(make_shell: Callable[..., Any]) -> Any:
    return make_shell()


@pytest.fixture
def magics(shell: Any) -> Any:
    return shell.magics_manager.registry["AgentMagics"]


@pytest.fixture
def script(tmp_path: Path) -> Callable[..., str]:
    """Write a ScriptedModel transcript; returns its path (relative names work too)."""
    count = [0]

    def write(*turns: Any, name: str | None = None) -> str:
        count[0] += 1
        path = tmp_path / (name or f"script{count[0]}.json")
        path.write_text(json.dumps({"turns": list(turns)}), encoding="utf-8")
        return str(path)

    return write
