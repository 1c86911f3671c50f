"""The OAuth redirect through the Jupyter server: the channel between its handler and the kernel.

When the kernel runs under a Jupyter server that loaded this package's server extension
(mcp/server_extension.py), the authorization's redirect URI is the server's own address,
`<server url>/ipy-agent/oauth/callback`: the person's browser already reaches it (a remote
machine, JupyterHub's `/user/NAME/`), a loopback port on the kernel's machine it may not reach.
The kernel and the server are two processes; they meet in a folder of Jupyter's runtime
directory, `<runtime>/ipy-agent-oauth/` (mode 0700; the runtime directory is a built-in Read
deny, so no tool or command of the model reads it):

- the server, when it loads the extension, writes `server-<pid>.json` (`{"callback": URL}`):
  this server has the handler, and where the browser reaches it;
- a kernel finds its own server by `JPY_PARENT_PID` (set by the server that launched it); with
  no such file it keeps the loopback redirect;
- before showing the link, the kernel writes `<sha256(state)>.json` (mode 0600):
  `{"port": P, "path": "/callback/<random>"}`, a one-shot loopback listener of its own;
- the handler, authenticated like any page of the server (the person's browser has its
  cookie), claims the file of the redirect's `state` by renaming it (one request wins, a replay
  finds nothing), and forwards the redirect's query to that listener; the kernel's OAuth flow
  checks the state again and continues.

Plain Python (no Jupyter import): the server extension and the kernel both use it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "HANDLER_PATH",
    "Waiting",
    "announce",
    "claim",
    "expect",
    "server_callback",
    "withdraw",
]

HANDLER_PATH = "ipy-agent/oauth/callback"  # below the server's base_url
FOLDER = "ipy-agent-oauth"


@dataclass(frozen=True)
class Waiting:
    """Where one kernel listens for the redirect of one authorization."""

    port: int
    path: str


def folder(runtime: Path) -> Path:
    """The channel's folder in Jupyter's runtime directory, made private on first use."""
    path = runtime / FOLDER
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path, 0o700)
    return path


def runtime_dir() -> Path | None:
    """Jupyter's runtime directory (where the server writes `jpserver-<pid>.json`), or None."""
    try:
        from jupyter_core.paths import jupyter_runtime_dir
    except ImportError:
        return None
    try:
        return Path(jupyter_runtime_dir())
    except Exception:  # a broken Jupyter configuration: the loopback redirect still works
        return None


def _write_private(path: Path, data: dict[str, object]) -> None:
    """Write `data` as JSON, mode 0600, all at once (a reader never sees half a file)."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(data, f)
    os.replace(tmp, path)


def announce(runtime: Path, pid: int, callback: str) -> Path:
    """The server's side, at load: it has the handler, at `callback`."""
    path = folder(runtime) / f"server-{pid}.json"
    _write_private(path, {"callback": callback})
    return path


def server_callback(runtime: Path | None = None, environ: dict[str, str] | None = None) -> str | None:
    """The kernel's side: the redirect URI of the Jupyter server that launched this kernel, when
    it loaded the extension; None otherwise (no server, a kernel gateway, the extension off)."""
    env = os.environ if environ is None else environ
    pid = env.get("JPY_PARENT_PID", "")
    runtime = runtime or runtime_dir()
    if not pid.isdigit() or runtime is None:
        return None
    try:
        data = json.loads((runtime / FOLDER / f"server-{pid}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    callback = data.get("callback") if isinstance(data, dict) else None
    return callback if isinstance(callback, str) and callback.startswith(("http://", "https://")) else None


def _state_file(runtime: Path, state: str) -> Path:
    # The state comes from a URL: hashed, it names a file and nothing else.
    return folder(runtime) / f"{hashlib.sha256(state.encode('utf-8')).hexdigest()}.json"


def expect(runtime: Path, state: str, waiting: Waiting) -> None:
    """The kernel's side: the redirect carrying `state` goes to `waiting`."""
    _write_private(_state_file(runtime, state), {"port": waiting.port, "path": waiting.path})


def withdraw(runtime: Path, state: str) -> None:
    """The kernel's side, when it stops waiting: a late redirect finds nothing."""
    with contextlib.suppress(OSError):
        _state_file(runtime, state).unlink()


def claim(runtime: Path, state: str) -> Waiting | None:
    """The handler's side: who waits for `state`, once. The file is renamed away first, so of two
    requests with the same state only one gets it; None when nothing waits (a wrong state, a
    replayed redirect, a kernel that stopped waiting)."""
    if not state:
        return None
    path = _state_file(runtime, state)
    taken = path.with_name(f".{path.name}.{secrets.token_hex(4)}.taken")
    try:
        os.rename(path, taken)
    except OSError:
        return None
    try:
        data = json.loads(taken.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    finally:
        with contextlib.suppress(OSError):
            taken.unlink()
    if not isinstance(data, dict):
        return None
    port, where = data.get("port"), data.get("path")
    if not isinstance(port, int) or not isinstance(where, str) or not where.startswith("/callback/"):
        return None
    return Waiting(port, where)
