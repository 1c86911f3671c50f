"""`%agent_plugins`: the Claude Code plugins, slash commands and agent files in force, and the
person's changes to them.

- `%agent_plugins` (or `list`): each plugin (a malformed one with its problem), its skills and
  hooks, every slash command with its argument hint and description, every agent file's
  subagent type, and the command or agent files that are not used;
- `%agent_plugins add PATH`: a plugin or marketplace folder, for this kernel session (trusted:
  the person named it);
- `%agent_plugins remove NAME`: one the person added (a name or its path);
- `%agent_plugins trust NAME`: a plugin a project's settings file names may run its hooks and
  MCP servers, as its files are now (a change asks again: config/plugins.py, `PluginTrust`).
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class

from .session import AgentSession

__all__ = ["PluginMagics", "help_with_commands"]

USAGE = "%agent_plugins [list | add PATH | remove NAME | trust NAME]"


def help_with_commands(doc: str, session: AgentSession) -> str:
    """`%agent?`: the magic's help, then the slash commands found now, with their descriptions."""
    from ipy_agent.loop.claude_setup import session_setup

    agent = session.agent
    cwd = agent.cwd if agent is not None else Path.cwd()
    setup, _ = session_setup(cwd, agent.config.plugins if agent is not None else (), session.plugins)
    lines = [
        f"  /{c.qualified_name}{' ' + c.argument_hint if c.argument_hint else ''}: {c.description}"
        for c in setup.listed_commands()
    ]
    return doc + ("\n\nSlash commands (%agent /NAME args):\n" + "\n".join(lines) if lines else "")


@magics_class
class PluginMagics(Magics):
    def __init__(self, shell: Any, session: AgentSession) -> None:
        super().__init__(shell=shell)
        self.session = session

    @line_magic
    def agent_plugins(self, line: str = "") -> None:
        """%agent_plugins [list | add PATH | remove NAME | trust NAME]: Claude Code plugins, slash
        commands and agent files (see the module's docstring)."""
        words = shlex.split(line)
        verb, args = (words[0], words[1:]) if words else ("list", [])
        if verb == "add" and len(args) == 1:
            path = Path(args[0]).expanduser().resolve()
            if not path.is_dir():
                raise UsageError(f"%agent_plugins add: {args[0]!r} is not a folder")
            if path not in self.session.plugins:
                self.session.plugins.append(path)
        elif verb == "remove" and len(args) == 1:
            self._remove(args[0])
        elif verb == "trust" and len(args) == 1:
            self._trust(args[0])
            return
        elif verb != "list" or args:
            raise UsageError(f"usage: {USAGE}")
        print(self.session.configured_agent().claude.describe())

    def _remove(self, name: str) -> None:
        agent = self.session.configured_agent()
        roots = {p.name: p.root for p in agent.claude.plugins}
        target = roots.get(name, Path(name).expanduser().resolve())
        kept = [p for p in self.session.plugins if p != target and target not in p.parents]
        if len(kept) == len(self.session.plugins):
            raise UsageError(
                f"%agent_plugins remove: {name!r} is not a plugin you added with %agent_plugins add "
                "(those of Agent(plugins=...) and of settings files stay; edit the file)"
            )
        self.session.plugins[:] = kept

    def _trust(self, name: str) -> None:
        from ipy_agent.config.plugins import PluginTrust, plugins_from_settings

        agent = self.session.configured_agent()
        plugin = next((p for p in agent.claude.plugins if p.name == name), None)
        if plugin is None:
            raise UsageError(f"%agent_plugins trust: no plugin named {name!r} (%agent_plugins lists them)")
        named = [path for path, _, _ in plugins_from_settings(agent.cwd)]
        folder = next((p for p in named if p == plugin.root or p in plugin.root.parents), plugin.root)
        try:
            PluginTrust().remember(folder)
        except OSError as e:
            raise UsageError(f"could not remember the trust ({e})") from None
        print(f"Trusted {folder} as its files are now; its hooks and MCP servers run from the next %agent.")
