"""Anthropic's sandbox runtime (`@anthropic-ai/sandbox-runtime`, Claude Code's) as the peer for a
sandboxed command's start-up cost.

The npm package is installed by the bench, pinned, into ~/.cache/ipy_agent-bench (outside every
directory a sandboxed command may write, as its README asks). On Linux it also runs bubblewrap,
with socat bridges to its network proxies and its own seccomp helper; it needs `bwrap`, `socat`
and ripgrep on the machine. It is configured with the same filesystem policy as ours, network
denied:

- "read-only": `allowWrite: []` (nothing writable but the package's own defaults: /dev/null and
  the like), reads as its defaults have them (everything), no domain allowed.
- "write-workdirs": `allowWrite: ["."]`, the working directory, with the package's mandatory
  write denies in it (shell and git config, hooks), no domain allowed.

Measured two ways, each against the same command bare in the same runtime:

- the library, as Claude Code uses it (`LibraryPeer`): one long-lived Node process that ran
  `SandboxManager.initialize` once (its proxies and bridges), then per command
  `wrapWithSandbox`, the wrapped string spawned in bash, and `cleanupAfterCommand`; against
  spawning the bare command in bash from the same process (bench/sandbox_peer.mjs).
- the CLI, `srt -s SETTINGS -c COMMAND`, through our own Bash runner: a Node start, initialize,
  wrap, run and cleanup, every command.
"""

from __future__ import annotations

import atexit
import json
import os
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from bench.sandbox_start import CWD, bare_seconds

__all__ = ["PACKAGE", "VERSION", "LibraryPeer", "cli_seconds", "install", "node_version", "rotated", "settings_file"]

PACKAGE = "@anthropic-ai/sandbox-runtime"
VERSION = "0.0.83"
CACHE = (
    Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ipy_agent-bench" / f"sandbox-runtime-{VERSION}"
)
DRIVER = Path(__file__).with_name("sandbox_peer.mjs")
_SETTINGS = Path(tempfile.mkdtemp(prefix="ipy-agent-bench-srt-"))
atexit.register(shutil.rmtree, _SETTINGS, True)


def package_dir() -> Path:
    return CACHE / "node_modules" / "@anthropic-ai" / "sandbox-runtime"


def _ripgrep() -> str | None:
    """The ripgrep binary itself (a pyenv shim on PATH would add a bash and a pyenv start to
    each of the peer's scans)."""
    from ipy_agent.contract.tool import ToolError
    from ipy_agent.tools.search.ripgrep import find_rg

    try:
        return find_rg()
    except ToolError:
        return None


def install() -> Path | str:
    """The installed package's directory, or why it cannot be measured here."""
    for program, why in (
        ("node", "Node.js is not installed"),
        ("npm", "npm is not installed"),
        ("bwrap", "bubblewrap is not installed"),
        ("socat", "socat is not installed (the peer bridges its proxies with it: apt-get install socat)"),
    ):
        if shutil.which(program) is None:
            return why
    if _ripgrep() is None:
        return "ripgrep is not installed"
    if (package_dir() / "dist" / "cli.js").is_file():
        return package_dir()
    CACHE.mkdir(parents=True, exist_ok=True)
    try:
        proc = subprocess.run(
            ["npm", "install", "--prefix", str(CACHE), "--no-audit", "--no-fund", "--no-save", f"{PACKAGE}@{VERSION}"],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"npm install {PACKAGE}@{VERSION} took over 5 minutes (offline?)"
    if proc.returncode != 0 or not (package_dir() / "dist" / "cli.js").is_file():
        said = [line for line in proc.stderr.splitlines() if line.startswith("npm error code")]
        said += [line for line in proc.stderr.splitlines() if "Error" in line or "failed" in line][:1]
        return f"npm install {PACKAGE}@{VERSION} failed (offline?): {'; '.join(said) or proc.stderr[-300:]}"
    return package_dir()


def node_version() -> str:
    proc = subprocess.run(["node", "--version"], capture_output=True, text=True, check=False)
    return proc.stdout.strip().lstrip("v") or "?"


def settings_file(access: str) -> Path:
    """The peer's settings for one of our two sandboxes, network denied."""
    path = _SETTINGS / f"{access}.json"
    config = {
        "network": {"allowedDomains": [], "deniedDomains": []},
        "filesystem": {
            "denyRead": [],
            "allowRead": [],
            "allowWrite": [] if access == "read-only" else ["."],
            "denyWrite": [],
        },
        "ripgrep": {"command": _ripgrep()},
    }
    path.write_text(json.dumps(config))
    return path


class LibraryPeer:
    """The package's library in one Node process (bench/sandbox_peer.mjs), for one policy."""

    def __init__(self, package: Path, access: str) -> None:
        self.proc = subprocess.Popen(
            ["node", str(DRIVER), str(package), str(settings_file(access))],
            cwd=CWD,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        ready = self.proc.stdout.readline()
        if not ready:
            self.proc.wait(timeout=30)
            assert self.proc.stderr is not None
            raise RuntimeError(f"the sandbox runtime did not start: {self.proc.stderr.read()[-600:].strip()}")
        self.init_seconds: float = json.loads(ready)["ready"]

    def seconds(self, mode: str, command: str, calls: int) -> float:
        """Per call: `mode` "bare" (spawned in bash) or "boxed" (wrapped, spawned, cleaned up)."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"mode": mode, "command": command, "calls": calls}) + "\n")
        self.proc.stdin.flush()
        answer = json.loads(self.proc.stdout.readline() or '{"error": "the driver exited"}')
        if "error" in answer:
            raise RuntimeError(f"the sandbox runtime's {mode} `{command}` failed: {answer['error']}")
        return float(answer["seconds"])

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self) -> LibraryPeer:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()


def cli_seconds(package: Path, access: str, command: str, calls: int) -> float:
    """`srt -s SETTINGS -c COMMAND` per call, through our Bash runner as the bare command is."""
    cli = package / "dist" / "cli.js"
    line = f"node {shlex.quote(str(cli))} -s {shlex.quote(str(settings_file(access)))} -c {shlex.quote(command)}"
    return bare_seconds(calls, line)


def rotated(measures: dict[str, Callable[[], float]], reps: int) -> dict[str, list[float]]:
    """Each measure once as a warm-up, then `reps` rounds of all of them, the order turned by
    one every round, so drift in the machine's load hits each alike."""
    names = list(measures)
    for name in names:
        measures[name]()
    out: dict[str, list[float]] = {name: [] for name in names}
    for i in range(reps):
        for name in names[i % len(names) :] + names[: i % len(names)]:
            out[name].append(measures[name]())
    return out
