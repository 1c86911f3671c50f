"""MCP server configuration: Claude Code's `.mcp.json` shape, read from files and from code.

One shape everywhere, `{"name": {...}}` under `mcpServers`: `type` "stdio" (`command`, `args`,
`env`) or "http" (`url`, `headers`); without `type`, a `command` means stdio and a `url` http.
Two keys of our own: `timeout` (seconds one tool call may take) and `startupTimeout`. `${VAR}`
and `${VAR:-default}` in strings expand from the environment, as Claude Code does, so a token
need not be written into a file that is committed.

Every server keeps where it was configured (`source`): servers from a project file are code
somebody else may have written, and start only once the person has approved them (trust.py);
servers given in code or in the person's own user settings start directly. A mistake names the
server and the field, since the person has to find it in a file.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypedDict
from urllib.parse import urlparse

from ipy_agent.base.paths import settings_dir
from ipy_agent.history.blocks import JsonObject

__all__ = [
    "DEFAULT_CALL_TIMEOUT",
    "DEFAULT_STARTUP_TIMEOUT",
    "PROJECT_FILES",
    "McpAuthorize",
    "McpConfigError",
    "OAuthSettings",
    "ServerConfig",
    "Source",
    "load_mcp_files",
    "parse_servers",
    "user_config_dir",
]

Transport = Literal["stdio", "http"]
# "code": Agent(mcp_servers=...); "user": the person's own settings; "project": files in the
# working directory, which need the person's approval before they start.
Source = Literal["code", "user", "project"]

# Agent(mcp_authorize=...): called with an HTTP server's authorization URL, returns the URL the
# browser was redirected to (its code and state), or an awaitable of it (mcp/oauth.py).
McpAuthorize = Callable[[str], "str | Awaitable[str]"]

DEFAULT_CALL_TIMEOUT = 120.0
DEFAULT_STARTUP_TIMEOUT = 30.0
PROJECT_FILES: tuple[str, ...] = (".mcp.json", ".ipy_agent/settings.json")
_NAME_RE = re.compile(r"^[A-Za-z0-9_-]+$")
_KNOWN = {"type", "command", "args", "env", "url", "headers", "timeout", "startupTimeout", "oauth"}
_OAUTH_KNOWN = {"clientId", "clientSecret", "tokenEndpointAuthMethod", "clientMetadataUrl", "scope"}
_AUTH_METHODS = ("client_secret_basic", "client_secret_post", "none")
_VAR_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class McpConfigError(ValueError):
    """A server's configuration cannot be used; the message names the server and the field."""


@dataclass(frozen=True, kw_only=True)
class OAuthSettings:
    """An HTTP server's `"oauth"` entry: a client registered beforehand with the authorization
    server (`clientId`, `clientSecret`, `tokenEndpointAuthMethod`: `client_secret_basic` by
    default with a secret, `none` without), or the HTTPS URL of this client's metadata document
    (`clientMetadataUrl`, used when the server supports client ID metadata documents), and the
    `scope` to ask for when the server does not say."""

    client_id: str = ""
    client_secret: str = ""
    token_endpoint_auth_method: str = ""
    client_metadata_url: str = ""
    scope: str = ""


@dataclass(frozen=True, kw_only=True)
class ServerConfig:
    name: str
    transport: Transport
    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    url: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    oauth: OAuthSettings | None = None  # HTTP servers: a pre-registered client (OAuth itself needs no config)
    timeout: float = DEFAULT_CALL_TIMEOUT
    startup_timeout: float = DEFAULT_STARTUP_TIMEOUT
    source: Source = "code"
    origin: str = "Agent(mcp_servers=...)"  # where it was written, for messages

    def fingerprint(self, project: Path | None = None) -> str:
        """A hash of what the server runs; an approval holds for exactly this (a changed command
        asks again). Env and header values count too, without being stored anywhere. With
        `project`, so do the files in it that the command names (`python server.py`): an edit
        of the script is a change of what runs, and asks again like a changed command."""
        what: JsonObject = {
            "transport": self.transport,
            "command": self.command,
            "args": list(self.args),
            "env": dict(sorted(self.env.items())),
            "url": self.url,
            "headers": dict(sorted(self.headers.items())),
        }
        if self.oauth is not None:
            what["oauth"] = [self.oauth.client_id, self.oauth.client_secret, self.oauth.client_metadata_url]
        if project is not None:
            what["scripts"] = {os.path.relpath(p, project): _digest(p) for p in self.script_files(project)}
        return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:32]

    def script_files(self, project: Path) -> tuple[str, ...]:
        """The files and folders inside `project` (not the project itself) that the command
        runs: the command or an argument naming one (`server.py`, `--directory=srv`), and the
        module of `-m pkg.server`."""
        if self.transport != "stdio":
            return ()
        root = os.path.realpath(project)
        words = [self.command, *self.args]
        found: list[str] = []
        for i, word in enumerate(words):
            values = [word, word.split("=", 1)[1]] if word.startswith("-") and "=" in word else [word]
            if i > 0 and words[i - 1] == "-m":
                base = os.path.join(root, *word.split("."))
                values += [base + ".py", base]
            for value in values:
                if not value or value.startswith("-"):
                    continue
                path = os.path.realpath(os.path.join(root, os.path.expanduser(value)))
                if path != root and path.startswith(root + os.sep) and os.path.exists(path):
                    found.append(path)
        return tuple(dict.fromkeys(found))

    def describe(self) -> str:
        """What the person approves: the command line or the URL (never header values)."""
        if self.transport == "stdio":
            return " ".join([self.command, *self.args])
        return self.url


_DIGESTS: dict[str, tuple[tuple[int, ...], str]] = {}
_MAX_FILES = 2000


def _stamp(path: str) -> tuple[int, ...]:
    st = os.stat(path)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _digest(path: str) -> str:
    """What a script is now: its content's hash (kept while its stat stamp holds), or for a
    folder the names, sizes and change times of the files in it."""
    try:
        if os.path.isdir(path):
            h = hashlib.sha256()
            count = 0
            for top, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if d != "__pycache__")
                for name in sorted(files):
                    full = os.path.join(top, name)
                    h.update(f"{os.path.relpath(full, path)}:{_stamp(full)[2:]}\n".encode())
                    count += 1
                    if count >= _MAX_FILES:
                        return h.hexdigest()
            return h.hexdigest()
        stamp = _stamp(path)
        known = _DIGESTS.get(path)
        if known is not None and known[0] == stamp:
            return known[1]
        h = hashlib.sha256()
        with open(path, "rb") as f:
            while block := f.read(1 << 20):
                h.update(block)
        _DIGESTS[path] = (stamp, h.hexdigest())
        return h.hexdigest()
    except OSError as e:
        return f"unreadable: {e.strerror}"


def _expand(value: str, name: str, where: str) -> str:
    def repl(m: re.Match[str]) -> str:
        var, default = m.group(1), m.group(2)
        if var in os.environ:
            return os.environ[var]
        if default is not None:
            return default
        raise McpConfigError(
            f"MCP server {name!r}: {where} uses ${{{var}}}, which is not set in the environment. "
            f"Set it, or write ${{{var}:-default}} to give a default."
        )

    return _VAR_RE.sub(repl, value)


def _string(raw: Mapping[str, Any], key: str, name: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or not value.strip():
        raise McpConfigError(f"MCP server {name!r}: {key!r} must be a non-empty string, not {value!r}")
    return _expand(value, name, key)


def _str_list(raw: Mapping[str, Any], key: str, name: str) -> tuple[str, ...]:
    value = raw.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise McpConfigError(f"MCP server {name!r}: {key!r} must be a list of strings, not {value!r}")
    return tuple(_expand(v, name, f"{key}[{i}]") for i, v in enumerate(value))


def _str_map(raw: Mapping[str, Any], key: str, name: str) -> dict[str, str]:
    value = raw.get(key, {})
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        shown = {k: "..." for k in value} if isinstance(value, dict) else value  # values may be secrets
        raise McpConfigError(f"MCP server {name!r}: {key!r} must be an object of string values, not {shown!r}")
    return {k: _expand(v, name, f"{key}.{k}") for k, v in value.items()}


def _seconds(raw: Mapping[str, Any], key: str, name: str, default: float) -> float:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise McpConfigError(f"MCP server {name!r}: {key!r} must be a positive number of seconds, not {value!r}")
    return float(value)


class _Common(TypedDict):
    """The fields every server's config has."""

    name: str
    transport: Transport
    source: Source
    origin: str
    timeout: float
    startup_timeout: float


def parse_server(
    name: Any, raw: Any, *, source: Source = "code", origin: str = "Agent(mcp_servers=...)"
) -> ServerConfig:
    """One server's entry, checked; raises McpConfigError naming the server and the field."""
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise McpConfigError(
            f"MCP server name {name!r} ({origin}) must be letters, digits, '_' or '-': "
            "it becomes part of tool names (mcp__<server>__<tool>)"
        )
    if "__" in name:
        raise McpConfigError(
            f"MCP server name {name!r} ({origin}) must not contain '__', which separates "
            "the server from the tool in mcp__<server>__<tool>"
        )
    if not isinstance(raw, Mapping):
        raise McpConfigError(
            f"MCP server {name!r} ({origin}) must be an object like "
            f'{{"command": "...", "args": [...]}} or {{"type": "http", "url": "..."}}, not {raw!r}'
        )
    unknown = sorted(set(raw) - _KNOWN)
    if unknown:
        raise McpConfigError(
            f"MCP server {name!r} ({origin}): unknown field {unknown[0]!r}; the fields are {', '.join(sorted(_KNOWN))}"
        )
    kind = raw.get("type")
    if kind is None:
        kind = "stdio" if "command" in raw else "http" if "url" in raw else None
        if kind is None:
            raise McpConfigError(
                f"MCP server {name!r} ({origin}): needs 'command' (a local server) or 'url' (an HTTP server)"
            )
    if kind == "streamable-http":
        kind = "http"
    if kind not in ("stdio", "http"):
        raise McpConfigError(
            f"MCP server {name!r} ({origin}): 'type' must be 'stdio' or 'http', not {kind!r}"
            + (" (SSE servers are not supported; most also serve streamable HTTP)" if kind == "sse" else "")
        )
    common: _Common = {
        "name": name,
        "transport": "stdio" if kind == "stdio" else "http",
        "source": source,
        "origin": origin,
        "timeout": _seconds(raw, "timeout", name, DEFAULT_CALL_TIMEOUT),
        "startup_timeout": _seconds(raw, "startupTimeout", name, DEFAULT_STARTUP_TIMEOUT),
    }
    if kind == "stdio":
        for wrong in ("url", "headers", "oauth"):
            if wrong in raw:
                raise McpConfigError(
                    f"MCP server {name!r} ({origin}): {wrong!r} is for HTTP servers; a stdio "
                    "server takes 'command', 'args' and 'env'"
                )
        return ServerConfig(
            command=_string(raw, "command", name),
            args=_str_list(raw, "args", name),
            env=_str_map(raw, "env", name),
            **common,
        )
    for wrong in ("command", "args", "env"):
        if wrong in raw:
            raise McpConfigError(
                f"MCP server {name!r} ({origin}): {wrong!r} is for stdio servers; an HTTP server "
                "takes 'url' and 'headers'"
            )
    url = _string(raw, "url", name)
    if not url.startswith(("http://", "https://")):
        raise McpConfigError(f"MCP server {name!r} ({origin}): 'url' must start with http:// or https://, not {url!r}")
    return ServerConfig(url=url, headers=_str_map(raw, "headers", name), oauth=_oauth(raw, name), **common)


def _oauth(raw: Mapping[str, Any], name: str) -> OAuthSettings | None:
    value = raw.get("oauth")
    if value is None:
        return None
    if not isinstance(value, Mapping) or not all(isinstance(v, str) for v in value.values()):
        raise McpConfigError(f"MCP server {name!r}: 'oauth' must be an object of string values")
    unknown = sorted(set(value) - _OAUTH_KNOWN)
    if unknown:
        raise McpConfigError(
            f"MCP server {name!r}: unknown field 'oauth.{unknown[0]}'; its fields are {', '.join(sorted(_OAUTH_KNOWN))}"
        )
    got = {k: _expand(v, name, f"oauth.{k}") for k, v in value.items()}
    method = got.get("tokenEndpointAuthMethod", "")
    if method and method not in _AUTH_METHODS:
        raise McpConfigError(
            f"MCP server {name!r}: 'oauth.tokenEndpointAuthMethod' must be one of {', '.join(_AUTH_METHODS)}, not {method!r}"
        )
    if got.get("clientSecret") and not got.get("clientId"):
        raise McpConfigError(f"MCP server {name!r}: 'oauth.clientSecret' needs 'oauth.clientId'")
    metadata_url = got.get("clientMetadataUrl", "")
    if metadata_url and (not metadata_url.startswith("https://") or urlparse(metadata_url).path in ("", "/")):
        raise McpConfigError(
            f"MCP server {name!r}: 'oauth.clientMetadataUrl' must be an https:// URL with a path, not {metadata_url!r}"
        )
    return OAuthSettings(
        client_id=got.get("clientId", ""),
        client_secret=got.get("clientSecret", ""),
        token_endpoint_auth_method=method,
        client_metadata_url=metadata_url,
        scope=got.get("scope", ""),
    )


def parse_servers(
    servers: Any, *, source: Source = "code", origin: str = "Agent(mcp_servers=...)"
) -> dict[str, ServerConfig]:
    """All servers of one mapping; raises McpConfigError at the first mistake."""
    if servers is None:
        return {}
    if not isinstance(servers, Mapping):
        raise McpConfigError(f"mcp_servers ({origin}) must map server names to their settings, not {servers!r}")
    return {name: parse_server(name, raw, source=source, origin=origin) for name, raw in servers.items()}


def user_config_dir() -> Path:
    """The person's own settings directory: $IPY_AGENT_CONFIG_DIR, or ~/.ipy_agent
    (`base/paths.py: settings_dir`; AGENTS.md and skills are read from `personal_dir`)."""
    return settings_dir()


def _read_section(path: Path, label: str) -> tuple[Any, list[str]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        return None, [
            f"{label}: not valid JSON ({e.msg} at line {e.lineno}, column {e.colno}); its MCP servers were skipped."
        ]
    except (OSError, UnicodeDecodeError) as e:
        return None, [f"{label}: could not be read ({e}); its MCP servers were skipped."]
    if not isinstance(data, dict):
        return None, [f'{label}: expected a JSON object with "mcpServers", found {type(data).__name__}; skipped.']
    section = data.get("mcpServers")
    if section is not None and not isinstance(section, dict):
        return None, [
            f'{label}: "mcpServers" must be an object mapping names to servers, not {type(section).__name__}; skipped.'
        ]
    return section, []


def load_mcp_files(cwd: str | Path, *, user_dir: Path | None = None) -> tuple[dict[str, ServerConfig], list[str]]:
    """Servers from the user's settings and the project's files, and a warning per problem.

    A broken entry costs only that server (it is not started), so problems are warnings that
    name the file, the server and the field; the other servers still load. Later files win a
    name clash: user settings, then `.ipy_agent/settings.json`, then `.mcp.json`."""
    cwd = Path(cwd)
    user_file = (user_dir or user_config_dir()) / "settings.json"
    files: list[tuple[Path, str, Source]] = [(user_file, str(user_file), "user")]
    for rel in reversed(PROJECT_FILES):
        path = cwd / rel
        # The home directory as a project: its .ipy_agent/settings.json is the user's own file.
        if path.exists() and user_file.exists() and path.resolve() == user_file.resolve():
            continue
        files.append((path, rel, "project"))
    found: dict[str, ServerConfig] = {}
    warnings: list[str] = []
    for path, label, source in files:
        if not path.is_file():
            continue
        section, problems = _read_section(path, label)
        warnings += problems
        for name, raw in (section or {}).items():
            try:
                found[name] = parse_server(name, raw, source=source, origin=label)
            except McpConfigError as e:
                warnings.append(f"{label}: {e}; this server was not started.")
    return found, warnings
