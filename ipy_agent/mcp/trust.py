"""Which project MCP servers the person has approved, remembered per project.

A `.mcp.json` arrives with a clone: starting its servers runs somebody else's command as the
person. So a project server starts only once the person approved exactly that configuration;
the approval is kept in the person's config directory (not in the project, where it could be
committed along with the servers), keyed by the project's path and the server's fingerprint, so
a changed command or URL asks again, and so does a changed script the command runs (a file in
the project that the command or its arguments name: see `ServerConfig.fingerprint`). A file
that cannot be read counts as no approvals.
"""

from __future__ import annotations

from pathlib import Path

from ipy_agent.base.json_store import read_object, section, update_object
from ipy_agent.history.blocks import JsonObject

from .config import ServerConfig, user_config_dir

__all__ = ["TrustStore"]


class TrustStore:
    def __init__(self, path: Path | None = None) -> None:
        self._path = path

    @property
    def path(self) -> Path:
        # Resolved late: tests and people may point IPY_AGENT_CONFIG_DIR elsewhere after import.
        return self._path or user_config_dir() / "mcp_trust.json"

    def _load(self) -> JsonObject:
        return read_object(self.path)

    def is_trusted(self, project: Path, server: ServerConfig) -> bool:
        projects = self._load().get("projects")
        entry = projects.get(str(project)) if isinstance(projects, dict) else None
        return isinstance(entry, dict) and entry.get(server.name) == server.fingerprint(project)

    def remember(self, project: Path, server: ServerConfig) -> None:
        """Record the approval; an OSError (read-only home) is the caller's to report."""
        fingerprint = server.fingerprint(project)

        def change(data: JsonObject) -> None:
            section(section(data, "projects"), str(project))[server.name] = fingerprint

        update_object(self.path, change)
