"""The peer of `python -m bench --only sandbox`: Anthropic's sandbox runtime, configured as the
bench says, holds the same policy as the sandbox it is compared with (a comparison with a looser
peer would flatter it): reads work, the working directory is writable only in "write-workdirs",
and the network is denied in both, where the same command bare reaches it.

The pinned npm package is installed into ~/.cache/ipy_agent-bench on first use; without npm, the
registry or socat the test is skipped with the reason, except in CI (CI=true), where it fails.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.sandbox_peer import LibraryPeer, cli_seconds, install
from bench.sandbox_start import CWD

pytestmark = pytest.mark.usefixtures("need_bwrap")


@pytest.fixture(scope="module")
def package() -> Path:
    found = install()
    if isinstance(found, str):
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must measure the sandbox peer: {found}")
        pytest.skip(f"the sandbox peer is not installed: {found}")
    return found


@pytest.fixture(scope="module")
def listener() -> Iterator[int]:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(16)
        yield server.getsockname()[1]


@pytest.mark.parametrize("access", ["read-only", "write-workdirs"])
def test_the_peer_holds_the_policy_it_is_compared_under(package: Path, listener: int, access: str) -> None:
    connect = f"exec 3<>/dev/tcp/127.0.0.1/{listener}"
    write = f"echo {access} > written-{access}.txt"
    with LibraryPeer(package, access) as peer:
        assert peer.seconds("boxed", "cat notes.txt", 1) > 0
        assert peer.seconds("bare", connect, 1) > 0  # the control: the host's loopback answers
        with pytest.raises(RuntimeError, match=r"Connection refused|Network is unreachable"):
            peer.seconds("boxed", connect, 1)
        if access == "read-only":
            with pytest.raises(RuntimeError, match="Read-only file system"):
                peer.seconds("boxed", write, 1)
            assert not (CWD / f"written-{access}.txt").exists()
        else:
            peer.seconds("boxed", write, 1)
            assert (CWD / f"written-{access}.txt").read_text() == f"{access}\n"


def test_the_peer_cli_runs_a_command(package: Path) -> None:
    assert cli_seconds(package, "read-only", "cat notes.txt", 1) > 0
