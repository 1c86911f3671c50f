"""`%agent`: the magics class that holds the configuration and runs requests.

This is the edge where IPython meets the runtime. Traitlets configure the magics
(`%config AgentMagics.permission_mode = "acceptEdits"`, `c.AgentMagics.allow = [...]` in
ipython_config.py); the session (session.py) receives them as plain values at each request, and
the Agent receives plain values from the session. The options of the `%agent` line are declared
once, in config/options.py. How a run waits depends on where it runs: awaited by the cell in a
kernel (cell_runner.py), `asyncio.run` in the foreground in terminal IPython, where no loop is
running while a magic executes (text output, `input()` approvals, Ctrl-C interrupts).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any

from IPython.core.magic import Magics, line_cell_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments
from traitlets import Bool, Dict, Enum, Float, Int, List, Unicode

from ipy_agent.config.options import AGENT_OPTIONS
from ipy_agent.contract.decision import PERMISSION_MODES
from ipy_agent.contract.limits import MESSAGE_RESULT_CHARS
from ipy_agent.contract.tool_context import SANDBOX_SETTINGS

from .cell_runner import current_session
from .plugins import help_with_commands
from .run_settings import SessionSettings
from .session import AgentSession

__all__ = ["AgentMagics"]

_F = Callable[..., Any]


def add_arguments(fn: _F) -> _F:
    """Decorate a magic with an `argument(...)` per option, in table order, then the prompt, so
    `%agent?` lists the options (the line itself is parsed by config/options.py: parse_line)."""
    # magic_arguments builds the parser from the last-applied decorator to the first.
    fn = argument("prompt", nargs="*", help="The request; with %%%%agent, the cell body.")(fn)
    for option in reversed(AGENT_OPTIONS):
        fn = argument(option.flag, **option.argparse_kwargs())(fn)
    return fn


@magics_class
class AgentMagics(Magics):
    """`%agent` and the configuration. The kernel's conversation lives in `session`, which the
    companion magics share."""

    model = Unicode(
        "",
        help="Model of each run: a Claude name or PROVIDER:NAME (bedrock:, vertex:, foundry:, openai:, ollama:, ...; "
        "`%agent --model ?` lists them); empty: IPY_AGENT_MODEL or the newest Sonnet.",
    ).tag(config=True)
    providers = Dict(
        help="Options per provider, passed to its model: e.g. {'ollama': {'base_url': 'http://gpu:11434/v1', "
        "'context_window': 32768}, 'openai': {'prices': (0.15, 0.6)}, 'bedrock': {'aws_region': 'eu-west-1'}}.",
    ).tag(config=True)
    permission_mode = Enum(list(PERMISSION_MODES), default_value="default", help="Permission mode of each run.").tag(
        config=True
    )
    sandbox = Enum(
        list(SANDBOX_SETTINGS),
        default_value="auto",
        help="Bash sandbox: 'auto' sandboxes commands no one approved, 'always' approved ones too "
        "(writes limited to the working directories), 'off' none (then only core commands run unasked).",
    ).tag(config=True)
    sandbox_limits = Dict(
        value_trait=Int(),
        help="What one sandboxed Bash command may use: {'memory': bytes, 'processes': n, 'tmp': bytes}; "
        "unset keys keep their defaults (2 GiB, 256, 1 GiB).",
    ).tag(config=True)
    allow = List(Unicode(), help="Allow rules, e.g. ['Bash(git status:*)'].").tag(config=True)
    ask = List(Unicode(), help="Ask rules: always prompt for these.").tag(config=True)
    deny = List(Unicode(), help="Deny rules, e.g. ['Read(**/.env)'].").tag(config=True)
    max_turns = Int(50, help="Model requests per run before it stops with max_turns.").tag(config=True)
    background = Bool(False, help="Run in the background by default (kernel only).").tag(config=True)
    verify_before_done = Bool(
        False, help="Every run that changed the notebook runs NotebookVerify before it ends (%agent --verify: one run)."
    ).tag(config=True)
    max_result_chars = Int(None, allow_none=True, help="Override every tool's result size limit.").tag(config=True)
    message_budget = Int(
        MESSAGE_RESULT_CHARS, help="Characters of tool results one message may carry before spilling."
    ).tag(config=True)
    widgets = Bool(True, help="Widget UI in a kernel; False: text output and a non-interactive approver.").tag(
        config=True
    )
    approval_timeout = Float(
        None, allow_none=True, help="Seconds before an unanswered widget prompt is denied; None: wait."
    ).tag(config=True)
    context_window = Int(
        None, allow_none=True, help="Tokens of context for new conversations; None: the model's own window."
    ).tag(config=True)
    subagents = Dict(
        help="Subagent types for Task, beside the built-in 'explore': {name: {'description': ..., 'prompt': "
        "..., 'tools': [...], 'max_turns': 20, 'permission_mode': 'plan', 'may_delegate': False, 'model': "
        "'PROVIDER:NAME'}}. Tools are a subset of the agent's; the mode is never looser than the run's."
    ).tag(config=True)

    def __init__(self, shell: Any = None, **kwargs: Any) -> None:
        super().__init__(shell=shell, **kwargs)
        self.session = AgentSession(shell, self.settings)

    def settings(self) -> SessionSettings:
        """The configuration in force now, as plain values."""
        return SessionSettings(
            model=self.model,
            permission_mode=self.permission_mode,
            sandbox=self.sandbox,
            sandbox_limits=tuple(sorted(self.sandbox_limits.items())),
            allow=tuple(self.allow),
            ask=tuple(self.ask),
            deny=tuple(self.deny),
            max_turns=self.max_turns,
            background=self.background,
            verify_before_done=self.verify_before_done,
            max_result_chars=self.max_result_chars,
            message_budget=self.message_budget,
            widgets=self.widgets,
            approval_timeout=self.approval_timeout,
            context_window=self.context_window,
            providers=dict(self.providers),
            subagents=dict(self.subagents),
        )

    # --- %agent ---------------------------------------------------------------------------
    @magic_arguments()
    @add_arguments
    @line_cell_magic
    def agent(self, line: str, cell: str | None = None) -> None:
        """Run the agent on a request; the conversation continues across cells.

            %agent fix the failing test in tests/test_io.py
            %%agent --mode acceptEdits --allow Bash(pytest:*)
            Rename load() to read_table() everywhere and run the tests.

        Options apply to this run only; --new and --resume change the conversation (the rules
        you granted with "Always allow" stay for the kernel session: see %agent_rules). Rules
        are Claude Code's syntax (`Tool` or `Tool(specifier)`) and also come from
        AgentMagics.allow/ask/deny, .ipy_agent/settings.json and .claude/settings*.json.
        Every request also carries the standing instructions (AGENTS.md, CLAUDE.md, the notebook's;
        see %agent_instructions) and the list of skills (%agent_skills).
        A request `/NAME args` runs a slash command (.claude/commands/NAME.md, a plugin's
        `/PLUGIN:NAME`): %agent_plugins lists them with their descriptions and argument hints.
        A run in the foreground is stopped with its Stop button or the kernel's interrupt;
        %agent_stop stops a --background run.
        See also %agent_stop, %agent_tools, %agent_rules, %agent_inspect, %agent_trace,
        %agent_history, %agent_context, %agent_compact, %agent_reset, %agent_save,
        %agent_mcp, %agent_instructions, %agent_skills, %agent_rewind, %agent_tasks, %agent_serve,
        %agent_plugins, %agent_verify.
        """
        session = self.session
        request = session.parse(line, cell)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            run = session.prepare(request, background=False)
            if run is not None:
                session.run_foreground(run)
            return
        # A loop is running (a kernel reached us without the transformer): never block it.
        run = session.prepare(request, background=True)
        if run is not None:
            session.start_background(run)


def _agent_help() -> str:
    """What `%agent?` shows (IPython asks a `getdoc` first): the help and the slash commands."""
    doc = inspect.getdoc(AgentMagics.agent) or ""
    try:
        return help_with_commands(doc, current_session())
    except Exception:  # help must show, whatever a command file holds
        return doc


AgentMagics.agent.getdoc = _agent_help
