"""Where the person's own ipy_agent files live, and where a project's root is.

The person keeps two directories for every project (both are `$IPY_AGENT_CONFIG_DIR` when that
is set: tests and people who keep it elsewhere):
- `personal_dir()`: their `AGENTS.md` and their skills, `ipy_agent` under `$XDG_CONFIG_HOME`
  (`~/.config` by default);
- `settings_dir()`: their `settings.json` (permission rules, MCP servers), the MCP approvals
  (`mcp_trust.json`) and the spending record, `~/.ipy_agent`.
Both are read late, at each use, so a change of the variable applies to the next prompt.

A project's root is the nearest folder at or above the working directory that holds `.git` (a
folder, or a file in a worktree or submodule); without one the walk goes to the filesystem root.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = [
    "folders_down_to",
    "home_relative",
    "mcp_token_dir",
    "personal_dir",
    "personal_dirs",
    "repository_root",
    "settings_dir",
    "signing_key",
]


def personal_dir() -> Path:
    """The person's own ipy_agent directory (it need not exist)."""
    env = os.environ.get("IPY_AGENT_CONFIG_DIR", "").strip()
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CONFIG_HOME", "").strip()
    base = Path(xdg).expanduser() if xdg and os.path.isabs(os.path.expanduser(xdg)) else Path.home() / ".config"
    return base / "ipy_agent"


def settings_dir() -> Path:
    """The person's own settings directory (`settings.json`, MCP approvals, spending; it need
    not exist): `$IPY_AGENT_CONFIG_DIR`, or `~/.ipy_agent`."""
    env = os.environ.get("IPY_AGENT_CONFIG_DIR", "").strip()
    return Path(env).expanduser() if env else Path.home() / ".ipy_agent"


def signing_key() -> Path:
    """The person's signing key (`config/person_key.py`), in `settings_dir()`: a protected
    surface no command writes, and a built-in Read deny, so no tool or command reads it."""
    return settings_dir() / "signing.key"


def mcp_token_dir() -> Path:
    """Where the OAuth tokens of HTTP MCP servers are kept (mcp/oauth.py), one file per server
    in `settings_dir()`, mode 0600: a built-in Read deny, so no tool or command reads them."""
    return settings_dir() / "mcp-tokens"


def personal_dirs() -> list[Path]:
    """Every directory ipy_agent reads the person's own files from (settings, MCP servers,
    AGENTS.md, skills): what a write must never change without asking."""
    return list(dict.fromkeys([personal_dir(), settings_dir()]))


def repository_root(cwd: Path) -> Path | None:
    """The nearest folder at or above `cwd` with a `.git`, or None."""
    for folder in (cwd, *cwd.parents):
        if os.path.exists(folder / ".git"):  # never raises: an unreadable folder is not a root
            return folder
    return None


def folders_down_to(cwd: Path) -> list[Path]:
    """The folders from the project's root (or the filesystem root) down to `cwd`, root first."""
    root = repository_root(cwd)
    chain = [cwd]
    for folder in cwd.parents:
        if root is not None and chain[-1] == root:
            break
        chain.append(folder)
    return chain[::-1]


def home_relative(path: str | Path) -> str:
    """`path` as a person writes it: `~/...` inside their home folder, as it is elsewhere."""
    text, home = str(path), str(Path.home())
    return "~" + text[len(home) :] if text == home or text.startswith(home + os.sep) else text
