"""Claude Code's files read as they are: plugin folders (a malformed one contributes nothing),
marketplaces, command arguments, agent files, and the trust a project file's plugin needs."""

from __future__ import annotations

import json

import pytest

from ipy_agent.config.markdown_definitions import (
    DefinitionProblem,
    read_agent_file,
    read_command,
    substitute_arguments,
    tool_names,
)
from ipy_agent.config.plugins import PluginTrust, expand_plugin_root, load_plugin, read_marketplace
from ipy_agent.loop.claude_setup import ClaudeSetup, session_setup, split_command
from tests.support.npm_packages import PLUGIN_PACKAGE, npm_package
from tests.support.tools import write_tree

GOOD = {
    ".claude-plugin/plugin.json": json.dumps({"name": "tidy", "version": "0.1.0", "description": "Tidy data"}),
    "commands/clean.md": "---\ndescription: Clean a table\nargument-hint: TABLE\n---\nClean $1 now.\n",
    "agents/checker.md": "---\nname: checker\ndescription: Checks tables\ntools: [Read]\n---\nYou check.\n",
    "skills/tidy-rows/SKILL.md": "---\nname: tidy-rows\ndescription: Tidy the rows of a table\n---\nSteps.\n",
    "hooks/hooks.json": json.dumps(
        {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/scripts/done.sh"}]}]}}
    ),
    "scripts/done.sh": "#!/bin/sh\necho done\n",
    ".mcp.json": json.dumps({"mcpServers": {"tables": {"command": "${CLAUDE_PLUGIN_ROOT}/scripts/serve.sh"}}}),
}


@pytest.mark.parametrize(
    ("arguments", "body", "expected"),
    [
        ("a b", "$ARGUMENTS|$1|$2|$3", "a b|a|b|"),
        ('"New York" Ada', "$2 in $1", "Ada in New York"),
        ("", "all: [$ARGUMENTS] one: [$1]", "all: [] one: []"),
        ("it's", "[$1]", "[it's]"),  # an unbalanced quote: words split on spaces
        ("x", "costs $5 and $ARGUMENTSX", "costs  and xX"),  # $5 is an argument, missing
    ],
)
def test_argument_substitution(arguments, body, expected):
    assert substitute_arguments(body, arguments) == expected


def test_split_command_tells_a_command_from_a_path():
    assert split_command("/review src/app.py --fast") == ("review", "src/app.py --fast")
    assert split_command("/tidy:clean t") == ("tidy:clean", "t")
    assert split_command("/tmp/data.csv has bad rows") is None
    assert split_command("please /review") is None


def test_tool_names_keep_the_tool_and_drop_the_specifier():
    assert tool_names("Bash(git add:*), Read, Bash(git commit:*)") == ("Bash", "Read")
    assert tool_names(["Read", "Grep"]) == ("Read", "Grep")
    assert tool_names(None) is None


def test_a_good_plugin_contributes_everything_with_its_root_expanded(tmp_path):
    write_tree(tmp_path / "tidy", GOOD)
    plugin = load_plugin(tmp_path / "tidy")
    assert plugin.problem is None and plugin.name == "tidy"
    assert [c.qualified_name for c in plugin.commands] == ["tidy:clean"]
    assert [a.name for a in plugin.agents] == ["checker"] and plugin.agents[0].tools == ("Read",)
    assert plugin.skill_names == ["tidy-rows"]
    assert plugin.hooks_file == (tmp_path / "tidy" / "hooks" / "hooks.json").resolve()
    hook = json.loads(plugin.hooks_file.read_text())["hooks"]["Stop"][0]["hooks"][0]["command"]
    assert expand_plugin_root(hook, plugin.root) == f"{plugin.root}/scripts/done.sh"
    assert plugin.mcp_servers["tables"] == {"command": f"{plugin.root}/scripts/serve.sh"}
    setup = ClaudeSetup.load(tmp_path, [tmp_path / "tidy"])
    assert setup.expand("/clean orders").prompt == "Clean orders now.\n"  # also by its short name
    assert setup.expand("/tidy:clean orders").prompt == "Clean orders now.\n"
    assert "/tidy:clean TABLE: Clean a table (plugin tidy)" in setup.describe()
    assert "  skills: tidy-rows" in setup.describe()


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({".claude-plugin/plugin.json": None}, "it has no .claude-plugin/plugin.json"),
        ({".claude-plugin/plugin.json": "[1, 2]"}, "is not a JSON object"),
        ({".claude-plugin/plugin.json": '{"name": "Not Kebab"}'}, "needs a `name` in kebab-case"),
        ({".claude-plugin/plugin.json": '{"name": "tidy", "commands": "../../etc"}'}, "leaves the plugin's folder"),
        ({".mcp.json": "{oops"}, ".mcp.json is not valid JSON"),
    ],
)
def test_a_malformed_plugin_names_its_problem_and_contributes_nothing(tmp_path, change, problem):
    files = {k: v for k, v in {**GOOD, **change}.items() if v is not None}
    write_tree(tmp_path / "tidy", files)
    setup = ClaudeSetup.load(tmp_path, [tmp_path / "tidy"])
    plugin = setup.plugins[0]
    assert plugin.problem is not None and problem in plugin.problem
    assert not plugin.commands and not plugin.agents and plugin.hooks_file is None and not plugin.mcp_servers
    assert setup.commands == {} and setup.agent_files == [] and setup.skill_dirs() == () and setup.mcp_servers() == {}
    assert f"NOT LOADED: {plugin.problem}" in setup.describe()
    # control: the good plugin contributes
    write_tree(tmp_path / "good", GOOD)
    assert ClaudeSetup.load(tmp_path, [tmp_path / "good"]).commands


def test_broken_command_and_agent_files_are_listed_and_the_rest_used(tmp_path):
    write_tree(
        tmp_path,
        {
            ".claude/commands/ok.md": "Do it.\n",
            ".claude/commands/broken.md": "---\ndescription: [unclosed\n---\nBody\n",
            ".claude/agents/nameless.md": "---\ndescription: no name\n---\nPrompt.\n",
        },
    )
    setup = ClaudeSetup.load(tmp_path, home=tmp_path / "nohome")
    assert list(setup.commands) == ["ok"]
    text = setup.describe()
    assert "broken.md: the front matter is not valid YAML" in text
    assert "nameless.md: the front matter needs a `name`" in text
    assert isinstance(read_agent_file(tmp_path / ".claude/agents/nameless.md", source="project"), DefinitionProblem)
    assert read_command(tmp_path / ".claude/commands/ok.md", source="project").description == "Do it."


def test_the_project_s_command_wins_its_name_over_a_plugin_s(tmp_path):
    write_tree(tmp_path / "tidy", GOOD)
    write_tree(tmp_path, {".claude/commands/clean.md": "The project's own clean.\n"})
    setup = ClaudeSetup.load(tmp_path, [tmp_path / "tidy"], home=tmp_path / "nohome")
    assert setup.expand("/clean").prompt == "The project's own clean.\n"
    assert setup.expand("/tidy:clean x").prompt == "Clean x now.\n"


def test_the_real_plugin_s_marketplace_is_read_from_its_folder(tmp_path):
    root = npm_package(*PLUGIN_PACKAGE)
    plugins = read_marketplace(root)
    assert [p.name for p in plugins] == ["selfish"] and plugins[0].problem is None
    assert len(plugins[0].commands) == len(list((root / "commands").glob("*.md")))
    # a marketplace entry whose source leaves the folder (or is a URL) is listed, not loaded
    write_tree(
        tmp_path / "market",
        {
            ".claude-plugin/marketplace.json": json.dumps(
                {"name": "m", "plugins": [{"name": "away", "source": "../x"}, {"name": "git", "source": {"url": "u"}}]}
            )
        },
    )
    bad = read_marketplace(tmp_path / "market")
    assert [(p.name, p.problem is not None) for p in bad] == [("away", True), ("git", True)]


def test_a_project_file_s_plugin_runs_nothing_until_trusted_and_a_changed_script_asks_again(tmp_path):
    write_tree(tmp_path / "vendor/tidy", GOOD)
    write_tree(tmp_path, {".claude/settings.json": json.dumps({"plugins": ["vendor/tidy"]})})
    trust = PluginTrust(tmp_path / "trust.json")

    def loaded():
        setup, warnings = session_setup(tmp_path, (), (), trust)
        return setup, setup.plugins[0], warnings

    setup, plugin, warnings = loaded()
    assert not plugin.trusted and setup.mcp_servers() == {} and setup.hook_files() == []
    assert "its hooks and MCP servers do not run until you trust it" in warnings[0]
    assert "untrusted" in setup.describe()
    assert setup.expand("/tidy:clean t") is not None  # text contributes: it grants nothing

    trust.remember(tmp_path / "vendor/tidy")
    setup, plugin, warnings = loaded()
    assert plugin.trusted and warnings == [] and "plugin_tidy_tables" in setup.mcp_servers()
    assert setup.hook_files() == [(plugin, plugin.root / "hooks" / "hooks.json")]

    (tmp_path / "vendor/tidy/scripts/done.sh").write_text("#!/bin/sh\ncurl evil\n")  # the hook's script changed
    setup, plugin, warnings = loaded()
    assert not plugin.trusted and setup.mcp_servers() == {} and setup.hook_files() == [] and warnings


def test_the_person_s_own_settings_and_added_plugins_are_trusted(tmp_path, monkeypatch):
    write_tree(tmp_path / "mine", GOOD)
    personal = tmp_path / "personal"
    write_tree(personal, {"settings.json": json.dumps({"plugins": [str(tmp_path / "mine")]})})
    monkeypatch.setenv("IPY_AGENT_CONFIG_DIR", str(personal))
    project = tmp_path / "project"
    project.mkdir()
    setup, warnings = session_setup(project, (), (), PluginTrust(tmp_path / "trust.json"))
    assert setup.plugins[0].trusted and warnings == []
    write_tree(tmp_path / "added", {**GOOD, ".claude-plugin/plugin.json": '{"name": "added"}'})
    setup, _ = session_setup(project, (), (tmp_path / "added",), PluginTrust(tmp_path / "trust.json"))
    assert [p.trusted for p in setup.plugins] == [True, True]
