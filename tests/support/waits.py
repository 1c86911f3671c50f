"""Waits that say what they waited for, the suite marker a test that starts real software needs,
and a free port on 127.0.0.1 for a server a test starts.

The harnesses (a kernel's reply, a widget on screen, a browser's button, a server's port) bound
every wait with a deadline of their own, shorter than the test's pytest-timeout, and fail with a
sentence naming what did not happen: "the kernel did not finish cell 3 (execute_request 1a2b)
within 60 s". While a wait runs it is recorded here, so that a pytest-timeout that fires anyway
(the last resort, see tests/conftest.py) names it too.
"""

from __future__ import annotations

import socket
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = [
    "Deadline",
    "current_waits",
    "free_port",
    "require_marker",
    "set_current_test",
    "timed_out",
    "waiting_for",
]

_waits: list[str] = []
_current_test: Any = None  # the pytest item being run; None outside pytest (bench/)


@contextmanager
def waiting_for(what: str) -> Iterator[None]:
    """Record that the test is waiting for `what` (a phrase: "the kernel to start") meanwhile."""
    _waits.append(what)
    try:
        yield
    finally:
        _waits.pop()


def current_waits() -> list[str]:
    """What the test is waiting for now, outermost first."""
    return list(_waits)


class Deadline:
    """`seconds` from now; `passed()` says whether it is over, `left()` what remains."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.end = time.monotonic() + seconds

    def passed(self) -> bool:
        return time.monotonic() > self.end

    def left(self) -> float:
        return max(0.0, self.end - time.monotonic())


def timed_out(what_did_not_happen: str, seconds: float, seen: str = "") -> AssertionError:
    """The failure of a wait: "<what did not happen> within N s", then what was seen instead."""
    message = f"{what_did_not_happen} within {seconds:.0f} s"
    return AssertionError(f"{message}; seen meanwhile:\n{seen}" if seen else message)


def set_current_test(item: Any) -> None:
    global _current_test
    _current_test = item


def require_marker(marker: str, what: str) -> None:
    """Fail the current test unless it carries `marker` (a test that `what` belongs to that suite:
    the fast default run leaves it out, and its timeout is the suite's)."""
    item = _current_test
    if item is not None and item.get_closest_marker(marker) is None:
        raise AssertionError(
            f"{item.nodeid} {what}, so it belongs to the `{marker}` suite: mark it "
            f"(`pytestmark = pytest.mark.{marker}` in its module)"
        )


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (for a server the test starts)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_http(url: str, what: str, seconds: float, *, alive: Callable[[], bool], log: Callable[[], str]) -> None:
    """Wait until `url` (a server the test started on 127.0.0.1) answers 200; fail, with the
    server's `log()`, when it died (`alive()` false) or `seconds` passed."""
    deadline = Deadline(seconds)
    with waiting_for(f"{what} to answer {url}"):
        while True:
            try:
                with urllib.request.urlopen(url, timeout=5) as r:  # 127.0.0.1 only
                    if r.status == 200:
                        return
            except OSError:
                pass
            if not alive() or deadline.passed():
                raise timed_out(f"{what} did not start", seconds, log())
            time.sleep(0.2)
