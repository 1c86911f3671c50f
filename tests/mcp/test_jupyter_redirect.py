"""The channel between the Jupyter server's OAuth handler and the waiting kernel
(mcp/jupyter_redirect.py): a kernel finds its own server's handler, a state is claimed once, and
the files are the person's alone. The whole flow, with a real server and kernel, is
tests/kernel/test_kernel_mcp_oauth_redirect.py."""

from __future__ import annotations

import threading
from pathlib import Path

from ipy_agent.mcp import jupyter_redirect as jr
from ipy_agent.permissions import rules


def test_a_kernel_uses_the_handler_of_the_server_that_launched_it(tmp_path: Path):
    jr.announce(tmp_path, 4242, "http://127.0.0.1:8888/user/ada/ipy-agent/oauth/callback")
    assert (
        jr.server_callback(tmp_path, {"JPY_PARENT_PID": "4242"})
        == "http://127.0.0.1:8888/user/ada/ipy-agent/oauth/callback"
    )
    # Control: another server (without the extension), or no server at all: the loopback redirect.
    assert jr.server_callback(tmp_path, {"JPY_PARENT_PID": "4243"}) is None
    assert jr.server_callback(tmp_path, {}) is None


def test_a_state_is_claimed_once_and_a_wrong_one_finds_nothing(tmp_path: Path):
    jr.expect(tmp_path, "s-123", jr.Waiting(5000, "/callback/abc"))
    assert jr.claim(tmp_path, "forged") is None
    assert jr.claim(tmp_path, "") is None
    assert jr.claim(tmp_path, "s-123") == jr.Waiting(5000, "/callback/abc")
    assert jr.claim(tmp_path, "s-123") is None  # a replay
    # A state is hashed before it names a file: a path in it goes nowhere.
    assert jr.claim(tmp_path, "../../etc/passwd") is None


def test_of_two_redirects_at_once_one_gets_it(tmp_path: Path):
    jr.expect(tmp_path, "s", jr.Waiting(1, "/callback/x"))
    got: list[object] = []
    start = threading.Barrier(8)

    def race() -> None:
        start.wait()
        got.append(jr.claim(tmp_path, "s"))

    threads = [threading.Thread(target=race) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert sorted(map(str, got)).count("None") == 7


def test_a_kernel_that_stops_waiting_withdraws(tmp_path: Path):
    jr.expect(tmp_path, "s", jr.Waiting(1, "/callback/x"))
    jr.withdraw(tmp_path, "s")
    assert jr.claim(tmp_path, "s") is None


def test_the_files_are_the_persons_alone(tmp_path: Path):
    jr.expect(tmp_path, "s", jr.Waiting(1, "/callback/x"))
    folder = tmp_path / "ipy-agent-oauth"
    assert folder.stat().st_mode & 0o777 == 0o700
    assert [p.stat().st_mode & 0o777 for p in folder.iterdir()] == [0o600]


def test_the_channel_is_in_a_folder_no_tool_reads(monkeypatch):
    # Jupyter's runtime directory is a built-in Read deny (with the kernels' connection files).
    runtime = jr.runtime_dir()
    assert runtime is not None
    assert "/" + str(runtime) in {r.specifier for r in rules.builtin_read_denies()}


def test_the_install_enables_the_server_extension():
    import importlib
    import json
    import tomllib

    root = Path(__file__).resolve().parents[2]
    shared = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["targets"]["wheel"][
        "shared-data"
    ]
    assert shared["jupyter-config/server-config"] == "etc/jupyter/jupyter_server_config.d"
    enabled = json.loads((root / "jupyter-config/server-config/ipy_agent.json").read_text())
    (name,) = enabled["ServerApp"]["jpserver_extensions"]
    module = importlib.import_module(name)
    assert module._jupyter_server_extension_points() == [{"module": name}]
    assert callable(module._load_jupyter_server_extension)
