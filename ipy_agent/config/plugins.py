"""Claude Code plugins and marketplaces, read from local folders.

A plugin is a folder with `.claude-plugin/plugin.json` (`{"name": ..., "description": ...,
"version": ...}`; `commands`, `agents`, `skills`, `hooks`, `mcpServers` may point elsewhere in
the folder). It contributes `commands/*.md` and `agents/*.md` (markdown_definitions.py),
`skills/*/SKILL.md` folders, `hooks/hooks.json` (`Plugin.hooks_file`; the hook runner expands
`${CLAUDE_PLUGIN_ROOT}` to `Plugin.root`, see `expand_plugin_root`) and `.mcp.json`
(`Plugin.mcp_servers`, with `${CLAUDE_PLUGIN_ROOT}` expanded). A marketplace is a folder with
`.claude-plugin/marketplace.json` listing plugins by `source` (a path inside it).

A plugin is named three ways: `Agent(plugins=[path, ...])` (code: trusted), the `plugins` key of
a settings file (a list of paths, relative to the file's project; a project file's plugins are
untrusted until the person trusts them), and `%agent_plugins add PATH` (the person: trusted).
An untrusted plugin contributes its commands, agents and skills (text, which grants nothing)
but runs no hook and starts no MCP server. Trust is kept per plugin folder with a fingerprint
of every file in it (`PluginTrust`): a changed script asks again.

A malformed plugin (no or broken plugin.json, a name that is not kebab-case, a path that leaves
the folder) is listed with its problem and contributes nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from ipy_agent.base.json_store import FingerprintStore, read_object
from ipy_agent.history.blocks import JsonObject
from ipy_agent.mcp.config import user_config_dir

from .markdown_definitions import AgentFile, DefinitionProblem, SlashCommand, read_folder
from .settings import SETTINGS_FILES

__all__ = [
    "PLUGIN_ROOT_VARIABLE",
    "Plugin",
    "PluginTrust",
    "expand_plugin_root",
    "load_plugin",
    "load_plugins",
    "plugin_fingerprint",
    "plugins_from_settings",
    "read_marketplace",
]

PLUGIN_ROOT_VARIABLE = "${CLAUDE_PLUGIN_ROOT}"
_NAME = re.compile(r"[a-z0-9]+(?:[-_.][a-z0-9]+)*")
MAX_FINGERPRINT_FILES = 5_000


@dataclass(frozen=True, kw_only=True)
class Plugin:
    """One plugin as loaded: what it contributes, or the problem that keeps it from contributing."""

    root: Path
    name: str
    source: str  # "code", "the person" or the settings file that named it
    description: str = ""
    version: str = ""
    trusted: bool = True  # False: its hooks do not run and its MCP servers do not start
    problem: str | None = None  # set: a malformed plugin, which contributes nothing
    commands: tuple[SlashCommand, ...] = ()
    agents: tuple[AgentFile, ...] = ()
    skill_dirs: tuple[Path, ...] = ()  # folders holding skill folders (`skills/`)
    hooks_file: Path | None = None  # hooks/hooks.json (Claude Code's hooks format), when present
    mcp_servers: JsonObject = field(default_factory=dict)  # .mcp.json's servers, the root expanded
    problems: tuple[DefinitionProblem, ...] = ()  # its command or agent files that are not used

    @property
    def skill_names(self) -> list[str]:
        return sorted(p.name for d in self.skill_dirs for p in d.iterdir() if (p / "SKILL.md").is_file())

    def runs_code(self) -> bool:
        """Whether it has anything that runs (hooks or MCP servers), which needs trust."""
        return self.hooks_file is not None or bool(self.mcp_servers)


def expand_plugin_root(text: str, root: Path) -> str:
    """`text` (a hook's command, an MCP server's command or argument) with `${CLAUDE_PLUGIN_ROOT}`
    replaced by the plugin's folder."""
    return text.replace(PLUGIN_ROOT_VARIABLE, str(root))


def _inside(root: Path, value: object, default: str) -> Path | str:
    """The path a plugin.json entry names inside the plugin (or the default), or the problem."""
    rel = value if isinstance(value, str) and value else default
    path = (root / expand_plugin_root(rel, root)).resolve()
    if path != root and root not in path.parents:
        return f"{rel!r} leaves the plugin's folder"
    return path


def load_plugin(path: str | Path, *, source: str = "code", trusted: bool = True) -> Plugin:
    root = Path(path).expanduser().resolve()
    name = root.name

    def broken(problem: str) -> Plugin:
        return Plugin(root=root, name=name, source=source, trusted=trusted, problem=problem)

    manifest = root / ".claude-plugin" / "plugin.json"
    if not root.is_dir():
        return broken("no such folder")
    try:
        meta = json.loads(manifest.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return broken("it has no .claude-plugin/plugin.json")
    except (OSError, UnicodeDecodeError) as e:
        return broken(f".claude-plugin/plugin.json could not be read ({e})")
    except json.JSONDecodeError as e:
        return broken(f".claude-plugin/plugin.json is not valid JSON ({e.msg} at line {e.lineno})")
    if not isinstance(meta, dict):
        return broken(".claude-plugin/plugin.json is not a JSON object")
    given = meta.get("name")
    if not isinstance(given, str) or not _NAME.fullmatch(given):
        return broken("plugin.json needs a `name` in kebab-case (lowercase letters, digits, hyphens)")
    places: dict[str, Path] = {}
    for key, default in (("commands", "commands"), ("agents", "agents"), ("skills", "skills")):
        where = _inside(root, meta.get(key), default)
        if isinstance(where, str):
            return broken(f"plugin.json `{key}`: {where}")
        places[key] = where
    hooks = _inside(root, meta.get("hooks"), "hooks/hooks.json")
    if isinstance(hooks, str):
        return broken(f"plugin.json `hooks`: {hooks}")
    name = given
    mcp = _mcp_servers(root, meta.get("mcpServers"))
    if isinstance(mcp, str):
        return broken(mcp)
    origin = f"plugin {name}"
    commands, problems = read_folder(places["commands"], "command", source=origin, plugin=name)
    agents, agent_problems = read_folder(places["agents"], "agent", source=origin)
    return Plugin(
        root=root,
        name=name,
        source=source,
        description=str(meta.get("description") or ""),
        version=str(meta.get("version") or ""),
        trusted=trusted,
        commands=tuple(c for c in commands if isinstance(c, SlashCommand)),
        agents=tuple(a for a in agents if isinstance(a, AgentFile)),
        skill_dirs=(places["skills"],) if places["skills"].is_dir() else (),
        hooks_file=hooks if hooks.is_file() else None,
        mcp_servers=mcp,
        problems=(*problems, *agent_problems),
    )


def _mcp_servers(root: Path, given: object) -> JsonObject | str:
    """The plugin's MCP servers (plugin.json's `mcpServers`, an object or a file, else `.mcp.json`)."""
    data: object = given
    if not isinstance(given, dict):
        where = _inside(root, given, ".mcp.json")
        if isinstance(where, str):
            return f"plugin.json `mcpServers`: {where}"
        if not where.is_file():
            return {}
        try:
            data = json.loads(where.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            return f"{where.name} is not valid JSON ({e})"
    if isinstance(data, dict) and isinstance(data.get("mcpServers"), dict):
        data = data["mcpServers"]
    if not isinstance(data, dict):
        return "its MCP servers are not a JSON object"
    expanded = json.loads(json.dumps(data).replace(PLUGIN_ROOT_VARIABLE, json.dumps(str(root))[1:-1]))
    return expanded if isinstance(expanded, dict) else {}


def read_marketplace(path: str | Path, *, source: str = "code", trusted: bool = True) -> list[Plugin]:
    """The plugins of a marketplace folder (`.claude-plugin/marketplace.json`) whose `source` is
    a path inside it; a plugin from elsewhere (a git URL) is listed with that problem."""
    root = Path(path).expanduser().resolve()
    try:
        data = json.loads((root / ".claude-plugin" / "marketplace.json").read_text(encoding="utf-8"))
        entries = data["plugins"]
        assert isinstance(entries, list)
    except (OSError, ValueError, KeyError, TypeError, AssertionError) as e:
        return [Plugin(root=root, name=root.name, source=source, problem=f"not a readable marketplace ({e})")]
    out: list[Plugin] = []
    for entry in entries:
        name = str(entry.get("name", "?")) if isinstance(entry, dict) else "?"
        where = entry.get("source") if isinstance(entry, dict) else None
        if not isinstance(where, str):
            out.append(Plugin(root=root, name=name, source=source, problem="its source is not a local path"))
            continue
        place = _inside(root, where, ".")
        if isinstance(place, str):
            out.append(Plugin(root=root, name=name, source=source, problem=f"source {place}"))
        else:
            out.append(load_plugin(place, source=source, trusted=trusted))
    return out


def load_plugins(paths: list[Path] | tuple[Path, ...], *, source: str = "code", trusted: bool = True) -> list[Plugin]:
    """Each path as a plugin, or as a marketplace's plugins when it is a marketplace folder."""
    out: list[Plugin] = []
    for path in paths:
        is_plugin = (Path(path) / ".claude-plugin" / "plugin.json").is_file()
        if not is_plugin and (Path(path) / ".claude-plugin" / "marketplace.json").is_file():
            out.extend(read_marketplace(path, source=source, trusted=trusted))
        else:
            out.append(load_plugin(path, source=source, trusted=trusted))
    return out


def plugins_from_settings(cwd: Path) -> list[tuple[Path, str, bool]]:
    """(path, the file that names it, whether the file is the person's own) for each entry of the
    `plugins` key of the settings files (the person's, then the project's); a relative path is
    relative to the file's project (the person's: their settings folder)."""
    user = user_config_dir() / "settings.json"
    out: list[tuple[Path, str, bool]] = []
    for file, label, own, base in [
        (user, str(user), True, user.parent),
        *[(cwd / rel, rel, False, cwd) for rel in SETTINGS_FILES],
    ]:
        data = read_object(file) if file.is_file() else {}
        entries = data.get("plugins")
        if isinstance(entries, list):
            out.extend(((base / str(p)).resolve(), label, own) for p in entries if isinstance(p, str))
    return out


def plugin_fingerprint(root: Path) -> str:
    """A hash of every file in the plugin folder (names and contents): any change asks again."""
    digest = hashlib.sha256()
    count = 0
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in (".git", "node_modules"))
        for name in sorted(files):
            path = Path(folder) / name
            count += 1
            if count > MAX_FINGERPRINT_FILES:
                break
            digest.update(os.path.relpath(path, root).encode() + b"\0")
            try:
                digest.update(hashlib.sha256(path.read_bytes()).digest())
            except OSError:
                digest.update(b"unreadable")
    return digest.hexdigest()[:32]


class PluginTrust:
    """The plugin (or marketplace) folders the person trusted, each with the fingerprint of its
    files, in their config directory (not in the project, where it could be committed)."""

    def __init__(self, path: Path | None = None) -> None:
        self._path = path

    @property
    def path(self) -> Path:
        return self._path or user_config_dir() / "plugin_trust.json"

    def is_trusted(self, folder: Path) -> bool:
        real = folder.resolve()
        return FingerprintStore(self.path, "plugins").holds(str(real), plugin_fingerprint(real))

    def remember(self, folder: Path) -> None:
        """Trust `folder` as it is now; an OSError (read-only home) is the caller's to report."""
        real = folder.resolve()
        FingerprintStore(self.path, "plugins").keep(str(real), plugin_fingerprint(real))
