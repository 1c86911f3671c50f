"""Configuration: Claude Code's .mcp.json shape from files and code; mistakes name the server and
the field."""

from __future__ import annotations

import json

import pytest

from ipy_agent import Agent, ScriptedModel
from ipy_agent.mcp import McpConfigError, load_mcp_files, parse_servers


@pytest.mark.parametrize(
    "servers, message",
    [
        (
            {"db": {"args": ["x"]}},
            "MCP server 'db' (Agent(mcp_servers=...)): needs 'command' (a local server) or 'url'",
        ),
        ({"db": {"command": ""}}, "MCP server 'db': 'command' must be a non-empty string, not ''"),
        ({"db": {"command": "x", "args": "a b"}}, "MCP server 'db': 'args' must be a list of strings, not 'a b'"),
        ({"db": {"command": "x", "env": {"K": 1}}}, "MCP server 'db': 'env' must be an object of string values"),
        ({"db": {"type": "sse", "url": "http://h"}}, "'type' must be 'stdio' or 'http', not 'sse'"),
        ({"db": {"type": "http", "url": "ftp://h"}}, "'url' must start with http:// or https://, not 'ftp://h'"),
        ({"db": {"type": "http", "url": "http://h", "command": "x"}}, "'command' is for stdio servers"),
        ({"db": {"command": "x", "url": "http://h"}}, "'url' is for HTTP servers"),
        (
            {"db": {"command": "x", "timeout": 0}},
            "MCP server 'db': 'timeout' must be a positive number of seconds, not 0",
        ),
        ({"db": {"command": "x", "cmd": "y"}}, "MCP server 'db' (Agent(mcp_servers=...)): unknown field 'cmd'"),
        ({"a__b": {"command": "x"}}, "MCP server name 'a__b'"),
        ({"a b": {"command": "x"}}, "MCP server name 'a b'"),
        (
            {"db": {"command": "x", "args": ["${IPY_AGENT_TEST_UNSET}"]}},
            "args[0] uses ${IPY_AGENT_TEST_UNSET}, which is not set",
        ),
    ],
)
def test_bad_config_names_the_server_and_the_field(servers, message, tmp_path):
    with pytest.raises(McpConfigError) as err:
        parse_servers(servers)
    assert message in str(err.value)
    with pytest.raises(ValueError, match="MCP server"):
        Agent(model=ScriptedModel([]), cwd=tmp_path, mcp_servers=servers)


def test_header_values_never_appear_in_messages():
    with pytest.raises(McpConfigError) as err:
        parse_servers({"api": {"url": "https://h", "headers": {"Authorization": ["Bearer secret"]}}})
    assert "secret" not in str(err.value) and "'headers'" in str(err.value)


def test_shape_defaults_and_environment_expansion(monkeypatch):
    monkeypatch.setenv("TOKEN", "s3cret")
    servers = parse_servers(
        {
            "local": {"command": "srv", "args": ["--root", "${ROOT:-/data}"], "env": {"K": "v"}},
            "remote": {
                "type": "http",
                "url": "https://example.test/mcp",
                "headers": {"Authorization": "Bearer ${TOKEN}"},
                "timeout": 5,
            },
        }
    )
    assert servers["local"].transport == "stdio" and servers["local"].args == ("--root", "/data")
    assert servers["remote"].headers == {"Authorization": "Bearer s3cret"} and servers["remote"].timeout == 5.0
    # An approval holds for exactly one configuration.
    again = parse_servers({"local": {"command": "srv", "args": ["--root", "/data"], "env": {"K": "v"}}})["local"]
    other = parse_servers({"local": {"command": "srv", "args": ["--root", "/other"], "env": {"K": "v"}}})["local"]
    assert servers["local"].fingerprint() == again.fingerprint() != other.fingerprint()


def test_files_project_and_user(tmp_path, config_dir):
    project = tmp_path / "p"
    (project / ".ipy_agent").mkdir(parents=True)
    (project / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"good": {"command": "a"}, "bad": {"command": "b", "args": 3}}})
    )
    (project / ".ipy_agent" / "settings.json").write_text(
        json.dumps({"mcpServers": {"other": {"url": "http://h/mcp"}}})
    )
    config_dir.mkdir(parents=True)
    (config_dir / "settings.json").write_text(
        json.dumps({"mcpServers": {"mine": {"command": "m"}, "good": {"command": "u"}}})
    )
    servers, warnings = load_mcp_files(project)
    assert {n: (s.source, s.origin) for n, s in servers.items()} == {
        "mine": ("user", str(config_dir / "settings.json")),
        "good": ("project", ".mcp.json"),
        "other": ("project", ".ipy_agent/settings.json"),
    }
    assert servers["good"].command == "a"  # the project's entry wins a name clash (and needs approval)
    assert warnings == [
        ".mcp.json: MCP server 'bad': 'args' must be a list of strings, not 3; this server was not started."
    ]


def test_a_broken_file_is_a_warning_naming_it(tmp_path):
    (tmp_path / ".mcp.json").write_text("{not json")
    servers, warnings = load_mcp_files(tmp_path)
    assert servers == {} and warnings[0].startswith(".mcp.json: not valid JSON")
