"""The managed policy files the gateway enforces, read again when one of them changes.

The kernels re-read the policy before each run (config/policy.py); the gateway, which runs for
weeks, does the same before each request: it looks at each file's inode, size and modification
time (and whether it exists: a file replaced by a rename is seen too), and reads them all again
with the kernels' own reader (`load_policy`) when any differs. A file that appears is enforced from the next request; one that can no longer
be read stops every request (503, fail closed) until it is fixed, as it stops the kernels' runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ipy_agent.config.policy import PolicyError, load_policy

__all__ = ["PolicyFiles"]

_Signature = tuple[tuple[int, int, int] | None, ...]


class PolicyFiles:
    def __init__(self, paths: Sequence[Path]) -> None:
        """Read `paths` now (a PolicyError if one cannot be read, so the gateway does not start)."""
        self.paths = tuple(paths)
        self._signature = self._stat()
        self.policy = load_policy(self.paths)
        self.error: str | None = None

    def _stat(self) -> _Signature:
        out: list[tuple[int, int, int] | None] = []
        for path in self.paths:
            try:
                st = path.stat()
            except OSError:
                out.append(None)
            else:
                out.append((st.st_ino, st.st_mtime_ns, st.st_size))
        return tuple(out)

    def refresh(self) -> bool:
        """Read the files again if one changed; whether the policy in force can be read (else
        `error` says why)."""
        signature = self._stat()
        if signature != self._signature:
            self._signature = signature
            try:
                self.policy = load_policy(self.paths)
                self.error = None
            except PolicyError as e:
                self.error = str(e)
        return self.error is None
