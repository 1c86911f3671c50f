"""Claude Code itself as the peer for tokens: its CLI run against the same caching server.

The `@anthropic-ai/claude-code` npm package's native binary is pointed at the local Messages API
with `ANTHROPIC_BASE_URL` and answered by the same scripted replies as our agent (its search is
Bash, so the script's Glob and Grep calls become `ls` and `grep` for it). What it sends is billed
by the same simulated prompt cache, so the figures compare like with like. Requests for other
models (a small model Claude Code may ask on the side) are answered without taking a scripted
reply and left out of the figures.

Where the binary is: `CLAUDE_CODE_BIN`, else `claude` on PATH. Install it with
`npm install @anthropic-ai/claude-code` (then `node_modules/@anthropic-ai/claude-code-<platform>/claude`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from tests.support.prompt_cache import CachingServer
from tests.support.sse_server import Recorded, Reply, message_events

__all__ = ["binary", "run_claude_code"]


def binary() -> str | None:
    """The Claude Code executable, or None when it is not installed here."""
    found = os.environ.get("CLAUDE_CODE_BIN") or shutil.which("claude")
    return found if found and Path(found).is_file() else None


class _Server(CachingServer):
    def __init__(self, model: str) -> None:
        super().__init__()
        self.model = model
        self.main: list[int] = []  # numbers of the requests for the scripted model

    def _take(self, recorded: Recorded) -> tuple[int, Reply]:
        if recorded.body.get("model") != self.model:
            with self._lock:
                self._replies.insert(0, Reply(events=message_events([{"type": "text", "text": "none"}])))
            return super()._take(recorded)
        number, reply = super()._take(recorded)
        self.main.append(len(self.usages) - 1)
        return number, reply


def run_claude_code(
    exe: str, root: Path, prompt: str, replies: list[list[dict[str, Any]]], *, model: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Claude Code's run of `prompt` in `root`, answered by `replies`: the usage and the body of
    each request to `model`, in order."""
    with _Server(model) as server, tempfile.TemporaryDirectory(prefix="ipy_agent_cc_home_") as home:
        server.add(*(message_events(r, model=model) for r in replies))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_"))}
        env.update(
            ANTHROPIC_BASE_URL=server.url,
            ANTHROPIC_API_KEY="sk-ant-bench",
            HOME=home,
            DISABLE_TELEMETRY="1",
            DISABLE_AUTOUPDATER="1",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        )
        subprocess.run(
            [exe, "-p", prompt, "--model", model, "--allowedTools", "Read Edit Write Bash", "--max-turns", "30"],
            env=env,
            cwd=root,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        bodies = [r.body for r in server.requests if r.body.get("model") == model]
        return [server.usages[i] for i in server.main], bodies
