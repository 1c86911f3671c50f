"""A person's Claude Code setup in an agent: plugins, slash commands and agent files.

`ClaudeSetup.load(cwd, plugins)` finds, in the order that wins a name:
- slash commands: the project's `.claude/commands/`, the person's `~/.claude/commands/`, then each
  plugin's (also reachable as `/PLUGIN:NAME`, which never clashes);
- agent files: the project's `.claude/agents/`, the person's `~/.claude/agents/`, then each plugin's;
  each becomes a Task `subagent_type` (`subagent_types`), with the tools it names of the parent's
  (never more: loop/subagent.py), the parent's rules, hooks, policy and meter;
- skills: each plugin's `skills/` folder, given to the Skill tool.

A prompt `/NAME args` (`expand`) becomes the command's body with its arguments; while its run
lasts, the command's `allowed-tools` narrows the tools offered (a tool it does not name is not
offered, and a call of it is refused as unknown), and its `model` is used. Neither grants
anything: every call still passes the rules, the mode and the policy. A prompt whose first word
names no command is sent as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ipy_agent.config.markdown_definitions import AgentFile, DefinitionProblem, SlashCommand, read_folder
from ipy_agent.config.plugins import Plugin, PluginTrust, load_plugins, plugins_from_settings
from ipy_agent.contract.tool import Tool
from ipy_agent.models.base import Model
from ipy_agent.models.platforms import PLATFORMS
from ipy_agent.models.providers import model_from_spec
from ipy_agent.tools.skills.tool import SkillTool

from .subagent import SubagentType, TaskTool

__all__ = ["MODEL_ALIASES", "ClaudeSetup", "CommandRun", "command_model", "session_setup", "split_command"]

# Claude Code's model aliases in a command's or an agent file's `model`.
MODEL_ALIASES = {"sonnet": "claude-sonnet-4-5", "opus": "claude-opus-4-1", "haiku": "claude-haiku-4-5"}


def split_command(prompt: str) -> tuple[str, str] | None:
    """(name, arguments) of a prompt `/name arguments`; None for any other prompt."""
    if not prompt.startswith("/") or prompt.startswith("//"):
        return None
    head, _, rest = prompt[1:].partition(" ")
    name = head.strip()
    if not name or "/" in name:
        return None  # a path (`/tmp/x ...`), not a command
    return name, rest.strip()


def command_model(spec: str, current: Model) -> Model | str:
    """The model a command's or agent file's `model` names, or why it is not used (the current
    one is). An alias (`sonnet`) is Claude's on the current model's platform."""
    provider = str(getattr(current, "provider", "") or "anthropic")
    name = MODEL_ALIASES.get(spec, spec)
    if ":" not in name:
        if provider not in PLATFORMS:
            return f"model {spec!r} is a Claude model, and this agent talks to {provider}"
        name = f"{provider}:{name}"
    try:
        return model_from_spec(name)
    except Exception as e:  # no key, a package missing: the current model answers
        return f"model {spec!r} could not be made ({type(e).__name__}: {e})"


@dataclass(frozen=True, kw_only=True)
class CommandRun:
    """A prompt that named a command: what is sent, and what its run narrows or changes."""

    command: SlashCommand
    prompt: str
    allowed_tools: tuple[str, ...] | None
    model: str | None


@dataclass(kw_only=True)
class ClaudeSetup:
    plugins: list[Plugin] = field(default_factory=list)
    commands: dict[str, SlashCommand] = field(default_factory=dict)  # by name and by plugin:name
    agent_files: list[AgentFile] = field(default_factory=list)
    problems: list[DefinitionProblem] = field(default_factory=list)

    @classmethod
    def load(
        cls, cwd: Path, plugins: Sequence[Path] = (), *, untrusted: Sequence[Path] = (), home: Path | None = None
    ) -> ClaudeSetup:
        """`plugins` are trusted (given in code or by the person); `untrusted` (named by a project
        file, not yet trusted) contribute text only: no hook, no MCP server. A plugin named more
        than once (by two settings files, in code and by a file) is loaded once, trusted if any
        naming trusts it."""
        home = home if home is not None else Path.home()
        loaded = load_plugins(tuple(plugins)) + load_plugins(tuple(untrusted), source="a project file", trusted=False)
        once = {(p.root, p.name): p for p in reversed(loaded)}  # the first naming wins: trusted come first
        setup = cls(plugins=[p for p in loaded if once[(p.root, p.name)] is p])
        places = [(cwd / ".claude", "project")]
        if home.resolve() != cwd.resolve():
            places.append((home / ".claude", "personal"))
        for folder, source in places:
            setup._add(*read_folder(folder / "commands", "command", source=source))
            setup._add(*read_folder(folder / "agents", "agent", source=source))
        for plugin in setup.plugins:
            if plugin.problem is None:
                setup._add([*plugin.commands, *plugin.agents], list(plugin.problems))
        return setup

    def _add(self, found: Sequence[SlashCommand | AgentFile], problems: Sequence[DefinitionProblem]) -> None:
        self.problems.extend(problems)
        for item in found:
            if isinstance(item, SlashCommand):
                self.commands.setdefault(item.name, item)
                if item.plugin:
                    self.commands.setdefault(item.qualified_name, item)
            elif all(a.name != item.name for a in self.agent_files):
                self.agent_files.append(item)

    def listed_commands(self) -> list[SlashCommand]:
        """Each command once (a plugin's by `plugin:name`)."""
        seen: dict[Path, SlashCommand] = {c.path: c for c in self.commands.values()}
        return sorted(seen.values(), key=lambda c: c.qualified_name)

    def skill_dirs(self) -> tuple[Path, ...]:
        return tuple(d for p in self.plugins if p.problem is None for d in p.skill_dirs)

    @staticmethod
    def give_subagent_types(
        tools: Sequence[Tool], types: Sequence[SubagentType], before: Sequence[SubagentType]
    ) -> None:
        """Each Task among `tools` offers `types` instead of `before` (the previous setup's); a
        type given in code keeps its name."""
        for tool in tools:
            if isinstance(tool, TaskTool):
                for old in before:
                    if tool.types.get(old.name) is old:
                        del tool.types[old.name]
                for kind in types:
                    tool.types.setdefault(kind.name, kind)

    def give_skills(self, tools: Sequence[Tool]) -> None:
        """The Skill tool among `tools` finds the plugins' skills too."""
        for tool in tools:
            if isinstance(tool, SkillTool):
                tool.plugin_dirs = self.skill_dirs()

    def hook_files(self) -> list[tuple[Plugin, Path]]:
        """(plugin, its hooks/hooks.json) of each trusted plugin: what the command-hook runner
        reads, expanding `${CLAUDE_PLUGIN_ROOT}` to `plugin.root` (`config/plugins.py:
        expand_plugin_root`). An untrusted or malformed plugin's hooks are not among them."""
        return [(p, p.hooks_file) for p in self.plugins if p.problem is None and p.trusted and p.hooks_file]

    def mcp_servers(self) -> dict[str, object]:
        """The MCP servers of the trusted plugins, each named `plugin_PLUGIN_SERVER` (a name MCP's
        tool names `mcp__SERVER__TOOL` accept)."""
        out: dict[str, object] = {}
        for p in self.plugins:
            if p.problem is None and p.trusted:
                out.update({f"plugin_{p.name}_{name}": spec for name, spec in p.mcp_servers.items()})
        return out

    def subagent_types(
        self, parent_tools: Sequence[str], model: Model, warn: Callable[[str], None]
    ) -> list[SubagentType]:
        """Each agent file as a Task type: its tools (none named: the parent's), its model."""
        out: list[SubagentType] = []
        for a in self.agent_files:
            chosen: Model | None = None
            if a.model:
                made = command_model(a.model, model)
                if isinstance(made, str):
                    warn(f"Agent {a.name} ({a.path}): {made}; it uses the parent's model.")
                else:
                    chosen = made
            tools = a.tools if a.tools is not None else tuple(parent_tools)
            out.append(
                SubagentType(
                    name=a.name,
                    description=f"{a.description} (from {a.source})",
                    system_prompt=a.system_prompt,
                    tools=tools,
                    model=chosen,
                    may_delegate="Task" in tools,
                )
            )
        return out

    def expand(self, prompt: str) -> CommandRun | None:
        """The run of `/name args` when `name` is a command, else None."""
        split = split_command(prompt)
        command = self.commands.get(split[0]) if split else None
        if split is None or command is None:
            return None
        return CommandRun(
            command=command,
            prompt=command.expand(split[1]),
            allowed_tools=command.allowed_tools,
            model=command.model,
        )

    def describe(self) -> str:
        """The plugins, commands, agents and problems, for `%agent_plugins` and `%agent?`."""
        lines: list[str] = []
        for p in self.plugins:
            if p.problem:
                lines.append(f"plugin {p.name} ({p.root}): NOT LOADED: {p.problem}")
                continue
            trust = "" if p.trusted or not p.runs_code() else " (untrusted: its hooks and MCP servers do not run)"
            lines.append(f"plugin {p.name} {p.version} ({p.root}){trust}: {p.description}".rstrip(": "))
            if p.skill_dirs:
                lines.append(f"  skills: {', '.join(p.skill_names)}")
            if p.hooks_file:
                lines.append(f"  hooks: {p.hooks_file}")
        if commands := self.listed_commands():
            lines.append("Slash commands:")
            for c in commands:
                hint = f" {c.argument_hint}" if c.argument_hint else ""
                lines.append(f"  /{c.qualified_name}{hint}: {c.description} ({c.source})")
        if self.agent_files:
            lines.append("Subagent types from agent files:")
            lines += [f"  {a.name}: {a.description} ({a.source})" for a in self.agent_files]
        lines += [f"not used: {p.path}: {p.problem}" for p in self.problems]
        return "\n".join(lines) or "No plugins, slash commands or agent files."


def session_setup(
    cwd: Path, given: Sequence[Path], added: Sequence[Path], trust: PluginTrust | None = None
) -> tuple[ClaudeSetup, list[str]]:
    """The setup of a magics' session: the plugins given in code (`given`), those the person
    added (`%agent_plugins add`) and those of the settings files' `plugins` key; a project file's
    plugin is trusted only as the person trusted its files (`PluginTrust`), else it runs nothing.
    Returns the setup and a warning for each plugin whose hooks or MCP servers wait for trust."""
    trust = trust or PluginTrust()
    trusted: list[Path] = [*given, *added]
    untrusted: list[Path] = []
    for path, _label, own in plugins_from_settings(cwd):
        (trusted if own or trust.is_trusted(path) else untrusted).append(path)
    setup = ClaudeSetup.load(cwd, trusted, untrusted=untrusted)
    warnings = [
        f"Plugin {p.name} ({p.root}) is named by a project file: its hooks and MCP servers do not run until "
        f"you trust it (%agent_plugins trust {p.name}; a change to its files asks again)."
        for p in setup.plugins
        if not p.trusted and p.problem is None and p.runs_code()
    ]
    return setup, warnings
