"""The names that make a file or folder a protected surface wherever it is.

A git hook, a `core.pager` in `.git/config`, an agent or Claude Code settings file that adds
allow rules, an MCP server list, a shell start-up file, IPython start-up scripts: each turns
one write into code that runs later without anyone being asked. These are the names that say so
by themselves; base/surfaces.py adds what the live environment says (sys.path, Jupyter, git's
hooks path, the person's own ipy_agent directories) and holds the one list every layer enforces.
"""

from __future__ import annotations

__all__ = ["PLACEHOLDER_NAMES", "PROTECTED_DIRS", "PROTECTED_FILES"]

# A directory anywhere on the path: everything below it is protected.
PROTECTED_DIRS = frozenset(
    {
        ".git",  # config (pager, fsmonitor, hooksPath, aliases) and hooks
        ".ipy_agent",
        ".claude",  # this agent's and Claude Code's settings: permission rules, hooks
        ".vscode",
        ".idea",  # editor tasks that run when a folder opens
        ".ipython",
        ".jupyter",  # start-up scripts and configuration run by the next kernel
        ".ssh",  # `ProxyCommand`, authorized keys
        ".husky",  # git hooks installed by husky
    }
)
# A file of this name anywhere.
PROTECTED_FILES = frozenset(
    {
        ".mcp.json",
        ".gitconfig",
        ".gitmodules",
        ".npmrc",
        ".envrc",
        ".bashrc",
        ".bash_profile",
        ".bash_login",
        ".bash_logout",
        ".profile",
        ".inputrc",
        ".zshrc",
        ".zshenv",
        ".zprofile",
        ".zlogin",
        ".zlogout",
        ".kshrc",
        ".cshrc",
        ".tcshrc",
        ".login",
        "config.fish",
        "sitecustomize.py",
        "usercustomize.py",
        # The configuration of git hook managers: the commands git runs at each commit.
        ".pre-commit-config.yaml",
        "lefthook.yml",
        "lefthook.yaml",
        ".lefthook.yml",
        ".lefthook.yaml",
        "lefthook-local.yml",
        ".lefthook-local.yml",
        ".overcommit.yml",
        ".simple-git-hooks.json",
        ".simple-git-hooks.js",
        ".simple-git-hooks.cjs",
        "simple-git-hooks.json",
        "simple-git-hooks.js",
        "simple-git-hooks.cjs",
    }
)
# In a working directory and the folders above it up to the project's root: the names the agent
# reads its settings, skills and MCP servers from. The writable sandbox keeps them from being
# made by a command (an empty read-only folder stands in for one that does not exist yet).
PLACEHOLDER_NAMES = (".ipy_agent", ".claude", ".mcp.json")
