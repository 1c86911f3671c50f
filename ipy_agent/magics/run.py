"""`%agent`: the magics class, its configuration, and how one request is prepared and run.

This is the edge where IPython meets the runtime. Traitlets configure the magics
(`%config AgentMagics.permission_mode = "acceptEdits"`, `c.AgentMagics.allow = [...]` in
ipython_config.py); the Agent itself receives plain values. The options of the `%agent` line
are declared once, in config/options.py. How a run waits depends on where it runs (magics/cell_runner.py):
awaited by the cell in a kernel, `asyncio.run` in the foreground in terminal IPython, where no
loop is running while a magic executes (text output, `input()` approvals, Ctrl-C interrupts).
The magics beside `%agent` (`%agent_inspect`, `%agent_reset`, ...) are in companions.py, the
base class of `AgentMagics`.
"""

from __future__ import annotations

import asyncio
import html
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import line_cell_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments
from traitlets import Bool, Dict, Enum, Float, Int, List, Unicode

from ipy_agent.config.conversation_file import load_conversation
from ipy_agent.config.grants import SessionGrants
from ipy_agent.config.options import AGENT_OPTIONS, option_rules, split_options
from ipy_agent.config.settings import RuleSpec, SettingsError, load_settings_rules, replace_rules, rules_from_lists
from ipy_agent.contract.limits import MESSAGE_RESULT_CHARS
from ipy_agent.history.messages import repair_history
from ipy_agent.loop.agent import Agent, RunResult
from ipy_agent.permissions.decide import PERMISSION_MODES
from ipy_agent.ui.announce import cell_number
from ipy_agent.ui.run_ui import RunUI, choose_ui

from .companions import CompanionMagics

__all__ = ["AgentMagics"]


def add_arguments(fn: Any) -> Any:
    """Decorate a magic with an `argument(...)` per option, in table order, then the prompt."""
    # magic_arguments builds the parser from the last-applied decorator to the first.
    fn = argument("prompt", nargs="*", help="The request; with %%%%agent, the cell body.")(fn)
    for option in reversed(AGENT_OPTIONS):
        fn = argument(option.flag, **option.argparse_kwargs())(fn)
    return fn


@dataclass(kw_only=True)
class _Run:
    """One prepared run: the agent, the prompt, and how this setting shows it and asks."""

    agent: Agent
    prompt: str
    ui: RunUI
    cell: int | None = None  # the execution count of the cell that started it


@magics_class
class AgentMagics(CompanionMagics):
    """The `%agent` magics. One agent per kernel, kept here; the conversation continues."""

    model = Unicode("", help="Model name for AnthropicModel; empty: IPY_AGENT_MODEL or the newest Sonnet.").tag(
        config=True
    )
    permission_mode = Enum(list(PERMISSION_MODES), default_value="default", help="Permission mode of each run.").tag(
        config=True
    )
    sandbox = Enum(
        ["auto", "always", "off"],
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

    def __init__(self, shell: Any = None, **kwargs: Any) -> None:
        super().__init__(shell=shell, **kwargs)
        self.current: Agent | None = None
        self.last_result: RunResult | None = None
        self.tools_factory: Callable[[], list[Any]] | None = None  # None: the built-in tools
        # None: --script, --model or AnthropicModel. A function: the model of every run that
        # names neither --script nor --model (a notebook that runs offline without a key uses it).
        self.model_factory: Callable[[], Any] | None = None
        # The widget view of the latest run (None for text output). A notebook run by nbclient
        # has nobody to click: `view.prompts[tool_use_id].allow()` answers like the button does.
        self.view: Any = None
        self._managed: list[tuple[str, Any]] = []  # rules this class put on the agent (not "granted")
        self._background: asyncio.Task[Any] | None = None
        self._default_model: Any = None
        # The live-notebook bridge (kernel only): tools reach the open notebook through it.
        self.bridge: Any = None
        self.grants = SessionGrants()  # "Always allow" rules, kept across --new and %agent_reset

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
        See also %agent_stop, %agent_tools, %agent_rules, %agent_inspect, %agent_trace,
        %agent_history, %agent_context, %agent_compact, %agent_reset, %agent_save.
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            run = self._prepare(line, cell, background=False)
            if run is not None:
                self._run_foreground(run)
            return
        # A loop is running (a kernel reached us without the transformer): never block it.
        run = self._prepare(line, cell, background=True)
        if run is not None:
            self._start_background(run)

    def _run_foreground(self, run: _Run) -> None:
        try:
            asyncio.run(self._execute(run))
        except KeyboardInterrupt:
            # A second Ctrl-C while the agent was closing the turn: keep the history valid anyway.
            run.agent.messages[:] = repair_history(run.agent.messages)
            run.ui.show_error("Interrupted.")

    def _start_background(self, run: _Run) -> None:
        task = asyncio.get_running_loop().create_task(self._execute(run))
        self._background = task

        def done(t: asyncio.Task[Any]) -> None:
            # A background task's exception reaches no cell by itself; show it in its output.
            if not t.cancelled() and (exc := t.exception()) is not None:
                run.ui.show_crash(exc)

        task.add_done_callback(done)

    async def _execute(self, run: _Run) -> RunResult:
        run.agent.on_event(run.ui.listener)
        run.agent.approver = run.ui.approver
        try:
            self.last_result = await run.agent.arun(run.prompt)
            return self.last_result
        finally:
            run.agent.remove_listener(run.ui.listener)
            run.ui.close()
            where = f'"Always allow" in cell [{run.cell}]' if run.cell else '"Always allow"'
            self.grants.collect(run.agent, where)

    def _prepare(self, line: str, cell: str | None, *, background: bool | None, handle: Any = None) -> _Run | None:
        """Parse, find or make the agent, apply configuration; None when there is nothing to run.

        `background`: forced on or off by the caller, or None to follow the option and config.
        `handle`: the cell's start line (see `start_line`), which the run's view replaces."""
        try:
            tokens, prompt = split_options(line)
            args = AgentMagics.agent.parser.parse_args(tokens)
            extra = option_rules(allow=args.allow, deny=args.deny)
        except ValueError as e:
            raise UsageError(str(e)) from None
        if cell is not None:
            prompt = "\n".join(p for p in (prompt, cell.strip()) if p)
        if args.max_turns is not None and args.max_turns < 1:
            raise UsageError(f"--max-turns must be at least 1, not {args.max_turns!r}")
        if (self.current is not None and self.current.running) or (
            self._background is not None and not self._background.done()
        ):
            # A --background run started in this cell may not have begun yet: it is running all the same.
            raise UsageError("The agent is still running. Wait for it, or stop it with %agent_stop.")
        model = self._model_for(args)
        if args.resume:
            self._use_agent(self._resume(args.resume, self._new_agent(model)))
            self.grants.collect(self.current, f"restored from {args.resume}")
            print(f"Resumed {len(self.current.messages)} messages from {args.resume}.")  # type: ignore[union-attr]
        elif args.new or self.current is None:
            self._use_agent(self._new_agent(model))
            self.grants.apply(self.current)
        agent = self.current
        assert agent is not None
        if args.new and not args.resume:
            # Said even with a request on the same line: the person should know what carried over.
            print(
                " ".join(
                    p
                    for p in (
                        "New conversation" + ("; the next %agent starts it." if not prompt else "."),
                        self.grants.note(),
                    )
                    if p
                )
            )
        if not prompt:
            if args.resume or args.new:
                return None
            raise UsageError("%agent needs a request, e.g. `%agent list the notebooks here`, or a %%agent cell body.")
        agent.model = model
        agent.notebook = self.bridge
        agent.notebook_path = self.bridge.display_path if self.bridge is not None else None
        warnings = self._apply_settings(agent, extra)
        agent.permission_mode = args.mode or self.permission_mode
        agent.max_turns = args.max_turns or self.max_turns
        wanted = args.background or self.background
        kernel = getattr(self.shell, "kernel", None) is not None
        ui = choose_ui(
            agent,
            kernel=kernel,
            background=wanted if background is None else background,
            widgets=self.widgets and not args.no_widgets,
            approval_timeout=self.approval_timeout,
            handle=handle,
        )
        self.view = ui.view
        for w in warnings:
            ui.show_error(f"warning: {w}")
        if self.bridge is not None and not self.bridge.connected and not self.bridge.told_missing:
            self.bridge.told_missing = True  # said once per kernel: it stays true until a page connects
            ui.show_error(f"note: {self.bridge.status()}.")
        if wanted and background is False:
            ui.show_error("note: --background needs a kernel's event loop; running in the foreground.")
        return _Run(agent=agent, prompt=prompt, ui=ui, cell=cell_number(self.shell))

    def start_line(self, line: str, cell: str | None = None) -> Any:
        """Show at once what is starting and with which model, before the slow imports of a first
        run (the SDK, the tools, the widgets); returns the display handle the view replaces."""
        from IPython.display import display

        try:
            tokens, prompt = split_options(line)
            args = AgentMagics.agent.parser.parse_args(tokens)
        except (ValueError, UsageError):
            return None  # _prepare reports it
        if not prompt and not (cell or "").strip():
            return None  # nothing will run (--new, --resume alone, or a missing request)
        if args.script:
            model = f"the scripted model {os.path.basename(args.script)} (offline)"
        else:
            model = (
                args.model or self.model or os.environ.get("IPY_AGENT_MODEL", "").strip() or "the default Claude model"
            )
        text = f"ipy_agent: starting with {model}…"
        return display({"text/plain": text, "text/html": f"<i>{html.escape(text)}</i>"}, raw=True, display_id=True)

    @staticmethod
    def _resume(path: str, agent: Agent) -> Agent:
        try:
            repaired, skipped = load_conversation(path, agent)
        except ValueError as e:
            raise UsageError(f"--resume: {e}") from None
        if repaired:
            print(f"Note: {path} had an incomplete history (an interrupted run); it was repaired.")
        for w in skipped:
            print(f"warning: {path}: granted rule not restored: {w}", file=sys.stderr)
        restored = [r.text for r in agent.rules.allow if r.source == "granted"]
        if restored:
            print(
                f'Rules granted earlier with "always" are back: {", ".join(restored)} (%agent_tools lists every rule).'
            )
        return agent

    def _model_for(self, args: Any) -> Any:
        if args.script:
            from ipy_agent.models.scripted import ScriptedModel

            try:
                return ScriptedModel.from_file(args.script)
            except (OSError, ValueError) as e:
                raise UsageError(
                    f'--script: {e}. Give the path of a JSON transcript like {{"turns": ["Hello"]}}.'
                ) from None
        from ipy_agent.models.anthropic import AnthropicModel  # its module defers `import anthropic`

        if args.model:
            return AnthropicModel(model=args.model)
        if self.model_factory is not None:
            return self.model_factory()
        # One client per configured name, so HTTP connections are reused across cells.
        if self._default_model is None or self._default_model[0] != self.model:
            self._default_model = (self.model, AnthropicModel(model=self.model or None))
        return self._default_model[1]

    def _new_agent(self, model: Any) -> Agent:
        tools = self.tools_factory() if self.tools_factory is not None else None
        return Agent(
            model=model,
            cwd=os.getcwd(),
            permission_mode=self.permission_mode,
            max_turns=self.max_turns,
            tools=tools,
            message_budget=self.message_budget,
            context_window=self.context_window,
            sandbox=self.sandbox,
            sandbox_limits=dict(self.sandbox_limits),
        )

    def _use_agent(self, agent: Agent) -> None:
        if self.current is not None and self.current is not agent:
            self.current.close()  # its MCP servers: the new conversation starts its own
        self.current, self._managed = agent, []

    def _apply_settings(self, agent: Agent, extra: list[RuleSpec]) -> list[str]:
        """Put the configured rules on the agent afresh (granted ones stay); return warnings."""
        try:
            config = rules_from_lists("AgentMagics config", allow=self.allow, ask=self.ask, deny=self.deny)
        except ValueError as e:
            raise UsageError(f"AgentMagics.allow/ask/deny: {e}") from None
        try:
            files, warnings = load_settings_rules(agent.cwd)
        except SettingsError as e:
            raise UsageError(str(e)) from None
        self._managed = replace_rules(agent.rules, self._managed, [*config, *files, *extra])
        warnings += _apply_mcp_files(agent)
        agent.budget.message_limit = self.message_budget
        agent.registry.result_limit_override = self.max_result_chars
        return warnings

    def _configured_agent(self) -> Agent:
        agent = self.current or self._new_agent(model=None)
        for w in self._apply_settings(agent, []):
            print(f"warning: {w}", file=sys.stderr)
        return agent


# IPython's @magics_class registers the magics the decorated class defines, not inherited ones:
# the companions' magics are added to the table of %agent's class here.
AgentMagics.magics = {kind: {**CompanionMagics.magics[kind], **table} for kind, table in AgentMagics.magics.items()}


def _apply_mcp_files(agent: Agent) -> list[str]:
    """MCP servers from .mcp.json and the settings files onto the agent; warnings for bad entries."""
    from ipy_agent.mcp import load_mcp_files

    servers, warnings = load_mcp_files(agent.cwd)
    agent.mcp.set_file_servers(servers)
    return warnings
