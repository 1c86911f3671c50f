"""`%agent_plugins` (list, add, remove, trust) and `%agent /command args` on a plain shell; a project
plugin's MCP server starts once the person trusts the plugin."""

from __future__ import annotations

import json
import sys

import pytest
from IPython.core.error import UsageError

from tests.support.mcp import TOOLBOX
from tests.support.tools import write_tree
from tests.support.transcript import all_results, result_text, use

PLUGIN = {
    ".claude-plugin/plugin.json": json.dumps({"name": "tidy", "version": "0.1.0"}),
    "commands/clean.md": "---\ndescription: Clean a table\nargument-hint: TABLE\n---\nClean the table $1.\n",
    "agents/checker.md": "---\nname: checker\ndescription: Checks tables\ntools: Read\n---\nYou check.\n",
    "hooks/hooks.json": '{"hooks": {}}',
}


def test_add_list_run_and_remove_a_plugin(shell, magics, script, tmp_path, capsys):
    write_tree(tmp_path / "tidy", PLUGIN)
    shell.run_line_magic("agent_plugins", f"add {tmp_path / 'tidy'}")
    out = capsys.readouterr().out
    assert "plugin tidy 0.1.0" in out
    assert "/tidy:clean TABLE: Clean a table (plugin tidy)" in out
    assert "checker: Checks tables (plugin tidy)" in out
    shell.run_line_magic("agent", f"--script {script('Cleaned.')} /tidy:clean orders")
    sent = magics.session.agent.model.requests[0]["messages"][0]["content"][0]["text"]
    assert sent == "Clean the table orders.\n"
    assert "checker" in magics.session.agent.tool("Task").types
    shell.run_line_magic("agent_plugins", "remove tidy")
    out = capsys.readouterr().out
    assert "tidy" not in out
    assert "checker" not in magics.session.agent.tool("Task").types
    with pytest.raises(UsageError, match="not a plugin you added"):
        shell.run_line_magic("agent_plugins", "remove tidy")
    with pytest.raises(UsageError, match="usage"):
        shell.run_line_magic("agent_plugins", "frobnicate")


def test_a_project_s_plugin_waits_for_trust_then_runs(shell, magics, tmp_path, capsys):
    write_tree(tmp_path / "vendor/tidy", PLUGIN)
    write_tree(tmp_path, {".ipy_agent/settings.json": json.dumps({"plugins": ["vendor/tidy"]})})
    shell.run_line_magic("agent_plugins", "")
    captured = capsys.readouterr()
    assert "untrusted: its hooks and MCP servers do not run" in captured.out
    assert "%agent_plugins trust tidy" in captured.err
    assert not magics.session.configured_agent().claude.plugins[0].trusted
    capsys.readouterr()
    shell.run_line_magic("agent_plugins", "trust tidy")
    assert "Trusted" in capsys.readouterr().out
    assert magics.session.configured_agent().claude.plugins[0].trusted


def test_agent_help_lists_the_slash_commands_with_their_descriptions(shell, tmp_path):
    write_tree(
        tmp_path, {".claude/commands/greet.md": "---\ndescription: Greet someone\nargument-hint: NAME\n---\nHi $1\n"}
    )
    info = shell.object_inspect("%agent")
    assert info["found"]
    assert "/greet NAME: Greet someone" in info["docstring"]
    assert "Run the agent on a request" in info["docstring"]


def test_a_project_plugin_s_mcp_server_starts_only_once_trusted(shell, magics, script, tmp_path, capsys):
    server = {"mcpServers": {"tb": {"command": sys.executable, "args": [TOOLBOX]}}}
    write_tree(tmp_path / "vendor/tidy", {**PLUGIN, ".mcp.json": json.dumps(server)})
    write_tree(tmp_path, {".ipy_agent/settings.json": json.dumps({"plugins": ["vendor/tidy"]})})
    line = "--allow mcp__plugin_tidy_tb --no-widgets --script {} add them"
    shell.run_line_magic("agent", line.format(script([use("mcp__plugin_tidy_tb__add", "a1", a=2, b=3)], "done")))
    untrusted = all_results(magics.session.agent.messages)["a1"]
    assert untrusted.get("is_error") and "No such tool" in result_text(untrusted)  # the server did not start
    shell.run_line_magic("agent_plugins", "trust tidy")
    shell.run_line_magic("agent", line.format(script([use("mcp__plugin_tidy_tb__add", "a2", a=2, b=3)], "done")))
    assert result_text(all_results(magics.session.agent.messages)["a2"]).strip() == "5"


def test_a_plugin_named_twice_is_loaded_listed_and_warned_about_once(shell, magics, script, tmp_path, capsys):
    write_tree(tmp_path / "vendor/tidy", PLUGIN)
    named = json.dumps({"plugins": ["vendor/tidy"]})
    write_tree(tmp_path, {".ipy_agent/settings.json": named, ".claude/settings.json": named})
    shell.run_line_magic("agent", f"--no-widgets --script {script('Hi.')} hello")
    assert capsys.readouterr().err.count("Plugin tidy") == 1
    assert [p.name for p in magics.session.agent.claude.plugins] == ["tidy"]
    shell.run_line_magic("agent_plugins", "")
    assert capsys.readouterr().out.count("plugin tidy 0.1.0") == 1
    # Added by the person too: the trusted one is the one loaded, and nothing waits for trust.
    shell.run_line_magic("agent_plugins", f"add {tmp_path / 'vendor/tidy'}")
    capsys.readouterr()
    shell.run_line_magic("agent", f"--no-widgets --script {script('Hi.')} hello")
    assert "Plugin tidy" not in capsys.readouterr().err
    assert [(p.name, p.trusted) for p in magics.session.agent.claude.plugins] == [("tidy", True)]


def test_a_plugin_s_hooks_file_problem_is_said_once_per_run(shell, magics, script, tmp_path, capsys):
    bad_hook = '{"hooks": {"Stop": [{"matcher": "", "hooks": [{"type": "prompt"}]}]}}'
    write_tree(tmp_path / "tidy", {**PLUGIN, "hooks/hooks.json": bad_hook})
    shell.run_line_magic("agent_plugins", f"add {tmp_path / 'tidy'}")
    capsys.readouterr()
    shell.run_line_magic("agent", f"--no-widgets --script {script('Hi.')} hello")
    shown = capsys.readouterr()
    assert (shown.out + shown.err).count('hooks.Stop: only {"type": "command"} hooks run here; skipped') == 1
