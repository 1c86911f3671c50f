"""`AgentSession`: the one state every `%agent` magic shares, and how one request becomes a run.

A kernel has one session: the conversation's `Agent`, the rules granted with "Always allow",
the live-notebook bridge, the run in progress and the last result. `%agent` (run.py) and the
companion magics (companions.py) are separate IPython classes that hold the same session; the
cell runner (cell_runner.py) drives it in a kernel. A request goes through two steps:

- `prepare(line)`: the parsed line (parsed once, `config/options.py: parse_line`) finds or makes
  the agent, puts this run's config in force with one `Agent.configure(config)` (run_settings.py:
  model, mode, turns, rules from the configuration, settings files and the line, budgets and
  limits, the notebook, whether the standing instructions are read) and picks how the run is
  shown and who answers its prompts (`ui/run_ui.py: choose_ui`);
- `execute(run)`: runs it, with the view listening and the grants collected at the end.

Configuration comes from the magics' traitlets as a plain `SessionSettings` read at each request,
so `%config AgentMagics.x = ...` applies to the next run.
"""

from __future__ import annotations

import asyncio
import html
import os
import sys
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from IPython.core.error import UsageError

from ipy_agent.config.grants import SessionGrants
from ipy_agent.config.options import AgentLine, parse_line
from ipy_agent.config.policy import PolicyError, PolicyViolation
from ipy_agent.config.settings import SettingsError, load_settings_rules, rules_from_lists
from ipy_agent.config.settings_approvals import ask_on_stdin
from ipy_agent.contract.hooks import HookEvent
from ipy_agent.contract.tool import Tool
from ipy_agent.history.messages import repair_history
from ipy_agent.models.base import Model, model_label
from ipy_agent.permissions.rules import RuleSpec
from ipy_agent.ui.announce import cell_number

from .prompt_records import PromptRecords
from .run_settings import SessionSettings, new_config, run_config

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.display import DisplayHandle

    from ipy_agent.loop.agent import Agent
    from ipy_agent.notebook.bridge import NotebookBridge
    from ipy_agent.runtime.trace import RunResult
    from ipy_agent.ui.run_ui import RunUI
    from ipy_agent.ui.widgets import RunView

__all__ = ["AgentSession", "Run"]


@dataclass(kw_only=True)
class Run:
    """One prepared run: the agent, the request, and how this setting shows it and asks."""

    agent: Agent
    prompt: str
    ui: RunUI
    cell: int | None = None  # the execution count of the cell that started it
    background: bool = False  # the cell returns at once: the person can run other cells meanwhile


class AgentSession:
    """One kernel's conversation and everything the magics share about it."""

    def __init__(self, shell: InteractiveShell | None, settings: Callable[[], SessionSettings]) -> None:
        self.shell = shell
        self.settings = settings
        self.agent: Agent | None = None
        self.last_result: RunResult | None = None
        self.tools_factory: Callable[[], list[Tool]] | None = None  # None: the built-in tools
        # None: --script, --model or AnthropicModel. A function: the model of every run that
        # names neither --script nor --model (a notebook that runs offline without a key uses it).
        self.model_factory: Callable[[], Model] | None = None
        # The widget view of the latest run (None for text output). A notebook run by nbclient
        # has nobody to click: `view.prompts[tool_use_id].allow()` answers like the button does.
        self.view: RunView | None = None
        self.prompt_records = PromptRecords()  # a rewind marks the records of the prompts it undid
        self.background: asyncio.Task[RunResult] | None = None
        # The live-notebook bridge (kernel only): tools reach the open notebook through it.
        self.bridge: NotebookBridge | None = None
        self.grants = SessionGrants()  # "Always allow" rules, kept across --new and %agent_reset
        self.plugins: list[Path] = []  # plugin folders added with %agent_plugins add (magics/plugins.py)
        self.last_request: AgentLine | None = None  # the line of the latest run (magics/todo_human.py goes on with it)
        self._default_model: tuple[str, Model] | None = None

    # --- state -------------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        """A run is in progress (a --background run counts from the moment it was started)."""
        return (self.agent is not None and self.agent.running) or (
            self.background is not None and not self.background.done()
        )

    def need_agent(self) -> Agent:
        if self.agent is None:
            raise UsageError("No conversation yet: start one with `%agent <request>`.")
        return self.agent

    def configured_agent(self) -> Agent:
        """The conversation's agent, or a new one, with the configured rules and MCP servers on it
        (warnings go to stderr): what `%agent_tools` and `%agent_mcp` describe."""
        settings = self.settings()
        agent = self.agent or self._new_agent(self._model_for(AgentLine(prompt=""), settings))
        for w in self._configure(agent, settings, ()):
            print(f"warning: {w}", file=sys.stderr)
        return agent

    # --- a request ---------------------------------------------------------------------------
    @staticmethod
    def parse(line: str, cell: str | None = None) -> AgentLine:
        try:
            return parse_line(line, cell)
        except ValueError as e:
            raise UsageError(str(e)) from None

    def start_line(self, request: AgentLine) -> DisplayHandle | None:
        """Show at once what is starting and with which model, before the slow imports of a first
        run (the SDK, the tools, the widgets); returns the display handle the view replaces."""
        from IPython.display import display

        if not request.prompt:
            return None  # nothing will run (--new, --resume alone, or a missing request)
        if request.script:
            model = f"the scripted model {os.path.basename(request.script)} (offline)"
        elif self.model_factory is not None and not request.model:
            model = "the notebook's model"
        else:
            configured = request.model or self.settings().model or os.environ.get("IPY_AGENT_MODEL", "").strip()
            model = configured or "the default Claude model"
        text = f"ipy_agent: starting with {model}…"
        bundle = {"text/plain": text, "text/html": f"<i>{html.escape(text)}</i>"}
        handle: DisplayHandle | None = display(bundle, raw=True, display_id=True)
        return handle

    def prepare(
        self,
        request: AgentLine,
        *,
        background: bool | None,
        handle: DisplayHandle | None = None,
        same_model: bool = False,
    ) -> Run | None:
        """Find or make the agent and configure it for `request`; None when nothing is to run.

        `background`: forced on or off by the caller, or None to follow the option and config.
        `handle`: the cell's start line (see `start_line`), which the run's view replaces.
        `same_model`: the conversation goes on with the model it has (the line names none)."""
        if self.running:
            raise UsageError("The agent is still running. Wait for it, or stop it with %agent_stop.")
        settings = self.settings()
        if request.model == "?":
            from ipy_agent.models.providers import providers_text

            current = model_label(self.agent.model) if self.agent is not None else settings.model
            print(providers_text(current or os.environ.get("IPY_AGENT_MODEL", ""), settings.providers))
            return None
        kept = self.agent.model if same_model and self.agent is not None else None
        model = kept if kept is not None else self._model_for(request, settings)
        agent = self._conversation_for(request, model)
        if request.record:
            agent.record(request.record, how=f"%agent --record {request.record}")
        if not request.prompt:
            if request.resume or request.new or request.record:
                return None
            raise UsageError("%agent needs a request, e.g. `%agent list the notebooks here`, or a %%agent cell body.")
        warnings = self._configure(
            agent, settings, request.rules(), model=None if kept is not None else model, request=request
        )
        try:
            agent.check_policy()  # a broken policy, or a mode or model it forbids, stops here
        except ValueError as e:  # PolicyError, PolicyViolation
            raise UsageError(str(e)) from None
        from ipy_agent.ui.run_ui import choose_ui  # the loop and the UI load with the first run, not %load_ext

        wanted = request.background or settings.background
        ui = choose_ui(
            agent,
            kernel=getattr(self.shell, "kernel", None) is not None,
            background=wanted if background is None else background,
            widgets=settings.widgets and not request.no_widgets,
            approval_timeout=settings.approval_timeout,
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
        in_background = wanted if background is None else background
        self.last_request = request
        return Run(agent=agent, prompt=request.prompt, ui=ui, cell=cell_number(self.shell), background=in_background)

    async def execute(self, run: Run) -> RunResult:
        from ipy_agent.notebook.runlog import PERSON_RUNS_CELLS, PERSON_TO_RUN

        run.agent.session[PERSON_RUNS_CELLS] = run.background  # TodoHuman waits for the person's run
        run.agent.session.pop(PERSON_TO_RUN, None)  # a new run: a TODO(human) cell left before no longer goes on
        run.agent.on_event(run.ui.listener)
        run.agent.configure(approver=run.ui.approver)
        prompts = len(run.agent.checkpoints.list)
        try:
            self.last_result = await run.agent.arun(run.prompt)
            return self.last_result
        finally:
            run.agent.remove_listener(run.ui.listener)
            run.ui.close()
            if run.ui.view is not None and len(run.agent.checkpoints.list) > prompts:  # the prompt kept its checkpoint
                self.prompt_records.add(run.agent, len(run.agent.checkpoints.list), run.ui.view)
            where = f'"Always allow" in cell [{run.cell}]' if run.cell else '"Always allow"'
            self.grants.collect(run.agent.rules, where)

    def run_foreground(self, run: Run) -> None:
        """Terminal IPython: no loop runs while a magic executes, so the run gets its own."""
        try:
            asyncio.run(self.execute(run))
        except KeyboardInterrupt:
            # A second Ctrl-C while the agent was closing the turn: keep the history valid anyway.
            run.agent.messages[:] = repair_history(run.agent.messages)
            run.ui.show_error("Interrupted.")

    def start_background(self, run: Run) -> None:
        task = asyncio.get_running_loop().create_task(self.execute(run))
        self.background = task

        def done(t: asyncio.Task[RunResult]) -> None:
            # A background task's exception reaches no cell by itself; show it in its output.
            if not t.cancelled() and (exc := t.exception()) is not None:
                run.ui.show_crash(exc)

        task.add_done_callback(done)

    def stop(self) -> bool:
        """Ask the run in progress to stop; False when nothing runs."""
        if self.agent is not None and self.agent.running:
            self.agent.interrupt()
        elif self.background is not None and not self.background.done():
            self.background.cancel()
        else:
            return False
        return True

    def close(self) -> None:
        """The extension is unloaded: stop the run and the conversation's MCP servers."""
        if self.agent is not None:
            if self.agent.running:
                self.agent.interrupt()
            self.agent.close()

    # --- helpers -----------------------------------------------------------------------------
    def _conversation_for(self, request: AgentLine, model: Model) -> Agent:
        """The agent of this request: the current one, a new one (--new), or a resumed one."""
        if request.resume:
            agent = self._resume(request.resume, self._new_agent(model))
            self._use(agent)
            self.grants.collect(agent.rules, f"restored from {request.resume}")
            print(f"Resumed {len(agent.messages)} messages from {request.resume}.")
        elif request.new or self.agent is None:
            self._use(self._new_agent(model))
            self.grants.apply(self.need_agent().rules)
        if request.new and not request.resume:
            # Said even with a request on the same line: the person should know what carried over.
            starts = "; the next %agent starts it." if not request.prompt else "."
            print(" ".join(p for p in (f"New conversation{starts}", self.grants.note()) if p))
        return self.need_agent()

    def _configure(
        self,
        agent: Agent,
        settings: SessionSettings,
        extra: Sequence[RuleSpec],
        *,
        model: Model | None = None,
        request: AgentLine | None = None,
    ) -> list[str]:
        """Put the configuration in force on `agent` for the next run (run_settings.py: its
        config, with the rules of the magics' configuration, the settings files and `extra`;
        the MCP servers of the files; the subagent types); return warnings."""
        try:
            configured = rules_from_lists(
                "AgentMagics config", allow=settings.allow, ask=settings.ask, deny=settings.deny
            )
        except ValueError as e:
            raise UsageError(f"AgentMagics.allow/ask/deny: {e}") from None
        try:
            # A run asks the person about a project file's new allow rules; a listing only says so.
            files, warnings = load_settings_rules(agent.cwd, approve=ask_on_stdin if request else None)
        except SettingsError as e:
            raise UsageError(str(e)) from None
        from ipy_agent.loop.claude_setup import session_setup  # plugins, slash commands, agent files
        from ipy_agent.loop.subagent import set_subagent_types, types_from_settings

        setup, plugin_warnings = session_setup(agent.cwd, agent.config.plugins, self.plugins)
        agent.use_claude_setup(setup)
        warnings += plugin_warnings + _apply_mcp_files(agent)
        warnings += _apply_command_hooks(agent, ask=request is not None)
        try:
            set_subagent_types(agent.tools, [*agent.file_subagent_types, *types_from_settings(settings.subagents)])
        except (ValueError, TypeError) as e:
            raise UsageError(f"AgentMagics.subagents: {e}") from None
        try:
            agent.managed.policy.check_mode(settings.mode(request), "%agent --mode / AgentMagics")
            config = run_config(
                agent.config, settings, request, rules=[*configured, *files, *extra], model=model, notebook=self.bridge
            )
            agent.configure(config)
        except ValueError as e:  # PolicyViolation; a configured value that is not allowed (the budget...)
            raise UsageError(str(e)) from None
        return warnings

    def _model_for(self, request: AgentLine, settings: SessionSettings) -> Model:
        if request.script:
            from ipy_agent.models.scripted import ScriptedModel

            try:
                return ScriptedModel.from_file(request.script)
            except (OSError, ValueError) as e:
                raise UsageError(
                    f'--script: {e}. Give the path of a JSON transcript like {{"turns": ["Hello"]}}.'
                ) from None
        from ipy_agent.models.providers import model_from_spec  # each model defers its SDK's import

        try:
            if request.model:
                return model_from_spec(request.model, settings.providers)
            if self.model_factory is not None:
                return self.model_factory()
            # One client per configured name, so HTTP connections are reused across cells.
            spec = settings.model or os.environ.get("IPY_AGENT_MODEL", "").strip()
            if self._default_model is None or self._default_model[0] != spec:
                self._default_model = (spec, model_from_spec(spec, settings.providers))
        except (OSError, ValueError) as e:
            raise UsageError(f"--model: {e} (%agent --model ? lists the providers)") from None
        return self._default_model[1]

    def _new_agent(self, model: Model) -> Agent:
        settings = self.settings()
        tools = self.tools_factory() if self.tools_factory is not None else None
        try:
            return self._make_agent(model, settings, tools)
        except (PolicyError, PolicyViolation) as e:
            raise UsageError(str(e)) from None

    @staticmethod
    def _make_agent(model: Model, settings: SessionSettings, tools: list[Tool] | None) -> Agent:
        from ipy_agent.loop.agent import Agent

        return Agent(config=new_config(model, settings, cwd=os.getcwd(), tools=tools))

    def _use(self, agent: Agent) -> None:
        if self.agent is not None and self.agent is not agent:
            self.agent.close()  # its MCP servers: the new conversation starts its own
        self.agent = agent

    @staticmethod
    def _resume(path: str, agent: Agent) -> Agent:
        from ipy_agent.config.conversation_file import load_conversation

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


_COMMAND_HOOKS: weakref.WeakKeyDictionary[Agent, list[Callable[[HookEvent], object]]] = weakref.WeakKeyDictionary()


def _apply_command_hooks(agent: Agent, *, ask: bool) -> list[str]:
    """The settings files' command hooks onto the agent (config/command_hooks.py), in place of
    those the previous run put there; a run asks the person to trust a project file's new hooks."""
    from ipy_agent.config.command_hooks import ask_hooks_on_stdin, install_command_hooks, load_settings_hooks

    for fn in _COMMAND_HOOKS.pop(agent, []):
        agent.hooks.remove(fn)
    files, warnings = load_settings_hooks(agent.cwd, approve=ask_hooks_on_stdin if ask else None)
    policy = agent.managed.policy
    _COMMAND_HOOKS[agent] = install_command_hooks(
        agent.hooks,
        files,
        cwd=agent.cwd,
        session_id=lambda: agent.conversation_id,
        sandbox=lambda: agent.tool_context() if policy.sandbox_required else None,
    )
    # The trusted plugins' hooks/hooks.json after the settings files' (loop/agent.py); the setup's
    # problems (its hooks files' among them) are said with the other warnings, not again at the run.
    agent.install_plugin_hooks()
    return warnings + agent.take_setup_problems()


def _apply_mcp_files(agent: Agent) -> list[str]:
    """MCP servers from .mcp.json and the settings files onto the agent; warnings for bad entries."""
    from ipy_agent.mcp import load_mcp_files
    from ipy_agent.mcp.config import McpConfigError, parse_servers

    servers, warnings = load_mcp_files(agent.cwd)
    try:  # the trusted plugins' servers (an untrusted plugin's start only once trusted)
        servers = {**parse_servers(agent.claude.mcp_servers(), origin="a plugin's .mcp.json"), **servers}
    except McpConfigError as e:
        warnings.append(f"a plugin's MCP servers were not started: {e}")
    agent.mcp.set_file_servers(servers)
    return warnings
