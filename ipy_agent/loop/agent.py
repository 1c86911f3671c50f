"""Agent: the conversation and the loop. run -> turn -> stream the model -> execute tools.

The loop reads in one screen; the complexity lives in `runtime/`, a turn (from its request to its
end) in turn.py, rewind in rewind.py. Whatever happens (a tool or hook raises, the model errors,
the person interrupts) the loop ends with `self.messages` a valid conversation, so the next
`run()` goes on."""

from __future__ import annotations

import asyncio
import copy
import uuid
from collections.abc import Callable, Collection, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

from ipy_agent.base.threads import run_to_end
from ipy_agent.config.agent_config import (
    FIXED_SETTINGS,
    KEEP,
    AgentChanges,
    AgentConfig,
    AgentSettings,
    FromConfig,
    Keep,
    given_rules,
    setting_names,
)
from ipy_agent.context import ContextManager
from ipy_agent.contract.decision import PermissionMode
from ipy_agent.contract.hooks import NOTIFY_PERSON, HookEvent, Hooks
from ipy_agent.contract.read_state import ReadState
from ipy_agent.contract.tool import Tool
from ipy_agent.contract.tool_context import SandboxLimits, ToolContext
from ipy_agent.history.blocks import ContentBlock, Message, ToolSpec
from ipy_agent.history.messages import append_user, last_text
from ipy_agent.history.tool_ids import HistoryIds
from ipy_agent.mcp import McpManager
from ipy_agent.mcp.prompts import PromptError, expand_prompt, wants_expansion
from ipy_agent.models.base import Model, Usage
from ipy_agent.models.recording import RecordingModel, recording_into, swap_model
from ipy_agent.permissions.decide import Approver
from ipy_agent.permissions.rules import PermissionRules, RuleSpec
from ipy_agent.runtime.budget import ResultBudget
from ipy_agent.runtime.meter import Meter
from ipy_agent.runtime.registry import Exposure, ToolRegistry
from ipy_agent.runtime.trace import (
    AgentEvent,
    CallRecord,
    Listeners,
    NoticeEvent,
    RunEndEvent,
    RunResult,
    TurnRecord,
)

from . import spill
from .ask_person import notifying
from .claude_setup import ClaudeSetup, CommandRun, command_model
from .rewind import Rewinding
from .spend import Managed
from .standing import Standing
from .subagent import SubagentType, current_agent, default_tools
from .tool_session import begin_run, end_session
from .turn import interrupted, offer_tools, run_turn, sync_mcp
from .verify_gate import VerifyGate

if TYPE_CHECKING:
    from ipy_agent.notebook.bridge import NotebookBridge

    from .mcp_serve import McpServeHandle

__all__ = ["Agent"]


Messages = list[Message]
Emit = Callable[[AgentEvent], None]


class Agent(Rewinding, Listeners):
    """One conversation with a model through tools: `run(prompt)` (or `await arun(prompt)`) goes on
    from the history, `rewind(n)` back to before prompt n. Its settings are `agent.config` (an
    `AgentConfig`, config/agent_config.py: what each setting is), its state the rest."""

    # Settings read from `self.config` (setting one makes a new config: config/agent_config.py).
    cwd = FromConfig[Path]()
    working_dirs = FromConfig[tuple[Path, ...]]()
    permission_mode = FromConfig[PermissionMode]()
    approver = FromConfig[Approver | None]()
    max_turns = FromConfig[int]()
    system_prompt = FromConfig[str | None]()
    append_system_prompt = FromConfig[str | None]()
    output_style = FromConfig[str | None]()
    simple = FromConfig[bool]()
    max_concurrency = FromConfig[int]()
    streaming_tools = FromConfig[bool]()
    verify_before_done = FromConfig[bool]()
    notebook = FromConfig["NotebookBridge | None"]()
    notebook_path = FromConfig[str | None]()
    instructions = FromConfig[bool]()
    sandbox_limits = FromConfig[SandboxLimits]()

    def __init__(
        self, model: Model | None = None, *, config: AgentConfig | None = None, **settings: Unpack[AgentSettings]
    ) -> None:
        """`Agent(model, max_turns=5, ...)` or `Agent(config=AgentConfig(model=..., ...))`."""
        if config is None:
            config = AgentConfig.build(model, **settings)
        elif model is not None or settings:
            raise TypeError("give Agent either config= or the model and settings, not both (config.replace(...))")
        self._config = config
        self.managed = Managed(config.policy, config.max_budget_usd, config.permission_mode)  # the policy, the meter
        self._model: Model = recording_into(config.model, config.record) if config.record else config.model
        self.rules = PermissionRules.with_builtin(list(config.allow), list(config.ask), list(config.deny))
        self._given_rules = [
            r for kind in ("allow", "ask", "deny") for r in self.rules.of(kind) if r.source == "argument"
        ]
        tools = default_tools() if config.tools is None else config.tools  # Task among the defaults
        self.registry = ToolRegistry(list(tools))
        self.registry.result_limit_override = config.result_limit
        self.standing = Standing()  # AGENTS.md...; read once per prompt
        self.claude = ClaudeSetup.load(self.cwd, config.plugins)  # plugins, slash commands, agent files
        # MCP servers (.mcp.json's shape); given in code, so trusted. Nothing starts until a run.
        self.mcp = McpManager(
            self.cwd, {**self.claude.mcp_servers(), **(config.mcp_servers or {})}, authorize=config.mcp_authorize
        )
        self.sandbox = self.managed.apply(self.rules, config.sandbox, self.mcp)  # the policy may require it
        self.conversation_id = uuid.uuid4().hex[:12]
        # Our own spill directory goes away on reset and at exit; one a person chose stays.
        self.spill_dir, self._owns_spill_dir = spill.choose_dir(config.spill_dir, self.conversation_id)
        self.budget = ResultBudget(self.spill_dir, message_limit=config.message_budget)
        self.messages: list[Message] = []
        self._history_ids = HistoryIds()  # tool_use ids in the history, counted once each
        self.read_state = ReadState()
        self.trace: list[CallRecord] = []
        self.turns: list[TurnRecord] = []
        self.hooks = Hooks()
        self.usage = Usage()
        self.session: dict[str, object] = {}
        Listeners.__init__(self)  # on_event, remove_listener, emit
        self._batches = [0]
        self.stop_hook_active = False  # a Stop hook sent the agent on in this run (loop/turn.py)
        self.verify_gate = VerifyGate()  # a run that changed the notebook verifies before it ends
        self._task: asyncio.Task[Any] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        # Sizes each request and clears or compacts the history to fit the window (ipy_agent/context).
        self.context_manager = ContextManager(self, window=config.context_window, threshold=config.context_threshold)
        self._configured_rules = self.rules.replace([], config.rules)  # what the config's `rules` added
        self.served: McpServeHandle | None = None  # the notebook served to outside agents (serve_mcp)
        self.file_subagent_types: list[SubagentType] = []  # the agent files' Task types
        self._plugin_hooks: list[Callable[[HookEvent], object]] = []  # the trusted plugins' command hooks
        self.setup_problems: list[str] = []  # the Claude setup's problems, in the person's words
        self._untold: list[str] = []  # those not yet told: the next run starts with them
        self.use_claude_setup(self.claude)

    @property
    def config(self) -> AgentConfig:
        """Every setting of this agent (config/agent_config.py); `configure` puts a new one in force."""
        return self._config

    @config.setter
    def config(self, new: AgentConfig) -> None:
        self._put(new, forced=())

    @property
    def model(self) -> Model:
        """The model in use: the config's, recording when the conversation is recorded."""
        return self._model

    @model.setter
    def model(self, model: Model) -> None:
        self._model = model
        inner = model.model if isinstance(model, RecordingModel) else model
        self._config = self._config.replace(model=inner)

    @property
    def tools(self) -> list[Tool]:
        return self.registry.all()

    def tool(self, name: str) -> Tool | None:
        return self.registry.get(name)

    @property
    def context_window(self) -> int:
        return self.context_manager.window

    @property
    def meter(self) -> Meter:  # the run's (runtime/meter.py): every model request passes it
        return self.managed.meter

    def configure(
        self,
        config: AgentConfig | None = None,
        /,
        *,
        model: Model | None = None,
        permission_mode: PermissionMode | None = None,
        max_turns: int | None = None,
        rules: Sequence[RuleSpec] | None = None,
        message_budget: int | None = None,
        result_limit: int | Keep | None = KEEP,
        notebook: NotebookBridge | Keep | None = KEEP,
        approver: Approver | Keep | None = KEEP,
        instructions: bool | None = None,
    ) -> None:
        """Change how the next run goes (the magics call this before each run): put `config` in
        force (a `self.config.replace(...)`), or change the settings given; what is not given
        stays. `rules` replace those the previous config added, never the constructor's or the
        person's grants; `result_limit` caps every tool's result (None: each tool's own);
        `instructions`: whether requests carry the standing instructions (config/instructions.py);
        `notebook` sets the notebook's path too."""
        if self.running:
            raise RuntimeError("cannot configure the agent while it runs; wait for it or interrupt it")
        changes: AgentChanges = {}
        if model is not None:
            changes["model"] = model
        if permission_mode is not None:
            changes["permission_mode"] = permission_mode
        if max_turns is not None:
            changes["max_turns"] = max_turns
        if rules is not None:
            changes["rules"] = rules
        if message_budget is not None:
            changes["message_budget"] = message_budget
        if instructions is not None:
            changes["instructions"] = instructions
        if not isinstance(result_limit, Keep):
            changes["result_limit"] = result_limit
        if not isinstance(notebook, Keep):
            changes["notebook"] = notebook
            changes["notebook_path"] = notebook.display_path if notebook is not None else None
        if not isinstance(approver, Keep):
            changes["approver"] = approver
        if config is not None:
            self._put(config.replace(**changes), forced=setting_names())  # all of it in force again
        else:
            self._put(self._config.replace(**changes), forced=set(changes))

    def _put(self, new: AgentConfig, forced: Collection[str]) -> None:
        """Make `new` the config, and the state made from a setting follow it: the settings that
        changed, and those in `forced` (a rule the person revoked comes back when configured)."""
        changed = self._config.changed(new)
        if fixed := sorted(changed & FIXED_SETTINGS):
            raise ValueError(f"{', '.join(fixed)} cannot change once the agent is made: make a new Agent(config=...)")
        self._config = new
        again = changed | set(forced)
        if "model" in again:
            self._model = swap_model(self._model, new.model)  # a recorded conversation goes on being recorded
        if "rules" in again:
            self._configured_rules = self.rules.replace(self._configured_rules, new.rules)
        if changed & {"allow", "ask", "deny"}:
            self._given_rules = self.rules.replace(self._given_rules, given_rules(new))
        if "message_budget" in again:
            self.budget.message_limit = new.message_budget
        if "result_limit" in again:
            self.registry.result_limit_override = new.result_limit
        if "max_budget_usd" in again:
            self.managed.max_budget_usd = self.managed.check_budget(new.max_budget_usd)
        if "sandbox" in changed:
            self.sandbox = self.managed.apply(self.rules, new.sandbox, self.mcp)
        if "plugins" in changed:
            self.use_claude_setup(ClaudeSetup.load(self.cwd, new.plugins))

    def use_claude_setup(self, setup: ClaudeSetup) -> None:
        """Put a Claude Code setup in force (loop/claude_setup.py): its agent files become Task
        types, its plugins' skills the Skill tool's, its trusted plugins' `hooks/hooks.json` command
        hooks. (A plugin's MCP servers start with the agent: those of a plugin added later start
        in a new Agent.)

        Its problems (a plugin not loaded, a hooks file's entries skipped, an agent file's model
        that cannot be made) are found here, usually before anyone listens (`Agent(plugins=...)`):
        they are kept in `setup_problems` and told as warnings when the next run starts, unless a
        caller tells them first (`take_setup_problems`: the magics, with their other warnings)."""
        self.claude = setup
        problems = [f"Plugin {p.name} ({p.root}) was not loaded: {p.problem}." for p in setup.plugins if p.problem]
        problems += self.install_plugin_hooks()
        names = [t.name for t in self.tools]
        before = self.file_subagent_types
        self.file_subagent_types = setup.subagent_types(names, self._config.model, problems.append)
        setup.give_subagent_types(self.tools, self.file_subagent_types, before)
        setup.give_skills(self.tools)
        self.setup_problems, self._untold = problems, list(problems)

    def take_setup_problems(self) -> list[str]:
        """The setup's problems not yet told to the person, which the caller now tells; the next
        run no longer starts with them."""
        told, self._untold = self._untold, []
        return told

    def install_plugin_hooks(self) -> list[str]:
        """The trusted plugins' command hooks (config/command_hooks.py) onto `self.hooks`, in place
        of those put there before, after every hook there now (the settings files' come first);
        returns the problems of their files. An untrusted plugin's hooks do not run."""
        from ipy_agent.config.command_hooks import install_command_hooks, read_hooks_file

        for fn in self._plugin_hooks:
            self.hooks.remove(fn)
        files = [read_hooks_file(path, trusted=True, plugin_root=p.root) for p, path in self.claude.hook_files()]
        policy = self.managed.policy
        self._plugin_hooks = install_command_hooks(
            self.hooks,
            files,
            cwd=self.cwd,
            session_id=lambda: self.conversation_id,
            sandbox=lambda: self.tool_context() if policy.sandbox_required else None,
        )
        return [problem for f in files for problem in f.problems]

    async def notify_person(self, message: str, notification_type: str) -> None:
        """Run the Notification hooks: the run waits for the person (loop/ask_person.py). A hook
        that fails is said in a notice; what they answer is ignored."""
        if not self.hooks.has("Notification"):
            return
        event = HookEvent(event="Notification", message=message, notification_type=notification_type)
        result = await self.hooks.run(event)
        if result.errors:
            self.emit(NoticeEvent(text="A Notification hook failed: " + "; ".join(result.errors), level="warning"))

    @property
    def ask_person(self) -> Approver | None:
        """`approver` as a run uses it: each question it asks fires the Notification hooks first."""
        return notifying(self.approver, self.notify_person)

    def check_policy(self) -> None:
        """Re-read the managed policy and check the next run (PolicyError, PolicyViolation: spend.py)."""
        self.sandbox = self.managed.enforce(self.rules, self.sandbox, self.mcp, self.permission_mode, self.model)

    def record(self, path: str | Path, *, how: str = "") -> RecordingModel:
        """Record the conversation from here on into the transcript `path` (models/recording.py)."""
        self._model = recorder = recording_into(self._model, path, how=how)
        self._config = self._config.replace(record=path)
        return recorder

    def tool_context(self, tool_use_id: str | None = None) -> ToolContext:
        return ToolContext(
            cwd=self.cwd,
            read_state=self.read_state,
            working_dirs=self.working_dirs,
            spill_dir=self.spill_dir,
            permission_mode=self.permission_mode,
            tool_use_id=tool_use_id,
            session=self.session,
            notebook=self.notebook,
            sandbox=self.sandbox,
            sandbox_limits=self.sandbox_limits,
            read_deny=self.rules.read_deny(self.cwd, (self.cwd, *self.working_dirs)),  # rules change: read now
            protected_files=self.mcp.protected_files(),
            checkpoints=self.checkpoints,
        )

    def exposure(self) -> Exposure:
        return self.registry.exposed(self.tool_context(), self.rules, simple=self.simple)

    def request_parts(self) -> tuple[str, list[ToolSpec]]:
        """The system prompt and the tool list the next request would carry."""
        exposure, tools = offer_tools(self.registry, self.rules, self.tool_context(), simple=self.simple, emit=None)
        return self.system(exposure), tools

    def system(self, exposure: Exposure | None = None) -> str:
        """The system prompt: ours (or the one given to the constructor), then its sections: the
        standing instructions, the offered tools' own (the skills), MCP servers', the appended."""
        return self.standing.system_prompt(self, (exposure or self.exposure()).names)

    def instruction_text(self) -> str:
        """The standing instructions' section of the system prompt ("" when there are none)."""
        return self.standing.text(self).instructions.prompt_text()

    def interrupt(self) -> None:
        """Stop the current run as soon as possible; safe to call from any thread."""
        task, loop = self._task, self._loop
        if task is not None and loop is not None and not task.done():
            loop.call_soon_threadsafe(task.cancel)

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def run(self, prompt: str | list[ContentBlock]) -> RunResult:
        """Run to the end of the turn. From code with a running event loop, use `await arun()`.

        Called from inside a running loop (a notebook cell), it runs on a private loop in a
        thread; every Ctrl-C asks the run to stop, and it returns once the history is closed."""
        return run_to_end(lambda: self.arun(prompt), interrupt=self.interrupt)

    async def arun(self, prompt: str | list[ContentBlock]) -> RunResult:
        if self.running:
            raise RuntimeError("this agent is already running; wait for it, or call agent.interrupt() first")
        self.check_policy()  # before anything runs: a broken or violated policy stops it here
        self._task = asyncio.current_task()
        self._loop = asyncio.get_running_loop()
        start_usage = copy.copy(self.usage)
        token = current_agent.set(self)  # a Task's call finds the agent that runs it (loop/subagent.py)
        self.managed.begin_run()  # the run's meter (runtime/meter.py); a subagent's is its parent's
        self.session[NOTIFY_PERSON] = self.notify_person  # for a tool that waits for the person (TodoHuman)
        for problem in self.take_setup_problems():  # found before anyone listened (use_claude_setup)
            self.emit(NoticeEvent(text=problem, level="warning"))
        command = self.claude.expand(prompt) if isinstance(prompt, str) else None  # `/name args`
        undo = self._begin_command(command) if command is not None else None
        try:
            result = await self._run(command.prompt if command is not None else prompt)
        finally:
            self._task = None
            current_agent.reset(token)
            if undo is not None:
                undo()
        result = replace(result, usage=usage_delta(self.usage, start_usage), budget=self.managed.describe())
        self.emit(RunEndEvent(result=result))
        return result

    def _begin_command(self, run: CommandRun) -> Callable[[], None]:
        """A slash command's run: its allowed-tools narrow what is offered, its model answers;
        returns what puts both back."""
        before_model, before_only = self._model, self.registry.offered_only
        self.registry.offered_only = run.allowed_tools
        if run.model is not None:
            made = command_model(run.model, self._config.model)
            if isinstance(made, str):
                self.emit(NoticeEvent(text=f"/{run.command.qualified_name}: {made}; the current model answers."))
            else:
                self._model = swap_model(self._model, made)

        def undo() -> None:
            self.registry.offered_only = before_only
            if self._model is not before_model:
                self._model = swap_model(self._model, self._config.model)

        return undo

    # --- the loop --------------------------------------------------------------------------
    async def _run(self, prompt: str | list[ContentBlock]) -> RunResult:
        self.stop_hook_active = False
        try:
            if wants_expansion(prompt):  # /mcp__server__prompt args, @server:uri (mcp/prompts.py)
                expanded = await self._mcp_prompt(str(prompt))
                if isinstance(expanded, RunResult):
                    return expanded
                prompt = expanded
            blocks = await prompt_blocks(prompt, self.hooks, self.emit, first=not self.messages)
            if not isinstance(blocks, RunResult):  # the standing text, read once for this prompt
                blocks = await self.standing.refresh(self, blocks, self.emit)
        except asyncio.CancelledError:
            if (task := asyncio.current_task()) is not None:
                task.uncancel()
            return interrupted(self.messages, self.emit, 0)
        if isinstance(blocks, RunResult):
            return blocks  # a UserPromptSubmit hook blocked it
        # The history as it was: a run the model never answered (no API key, network down) leaves no
        # trace, or its prompt would merge into the next request. append_user never edits a message.
        before = list(self.messages)
        blocks = self.checkpoint(prompt, blocks)  # loop/rewind.py: what a rewind returns to
        append_user(self.messages, blocks)
        begin_run(self.tools, self.tool_context(), self.emit)
        self.mcp.begin_run()
        self.verify_gate.begin(len(self.turns))

        turns = 0
        while True:
            if turns >= self.max_turns:
                self.emit(NoticeEvent(text=f"Stopped after {self.max_turns} turns (max_turns).", level="warning"))
                return RunResult(stop_reason="max_turns", text=last_text(self.messages), turns=turns)
            if (outcome := self.managed.stop(turns)) is not None:
                self.emit(NoticeEvent(text=outcome.text, level="warning"))
            else:
                turns += 1
                outcome = await run_turn(self)
            failed = outcome is not None and outcome.stop_reason in ("error", "budget_exceeded")
            if failed and forget_unanswered(self.messages, before, self.emit):
                self.standing.undo()
                self.forget_checkpoint()
            if outcome is not None:
                return replace(outcome, turns=turns, verified=self.verify_gate.verdict)

    def serve_mcp(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        approver: Approver | None = None,
        listener: Callable[[AgentEvent], None] | None = None,
    ) -> McpServeHandle:
        """Serve this conversation's notebook tools to outside agents (Claude Code, Codex) over
        MCP's streamable HTTP, bearer token required; every call goes through this agent's rules,
        modes, cell policies and prompts (loop/mcp_serve.py). Serving again stops the previous
        server. `approver`: who answers calls that ask (None: `self.approver` at the time)."""
        from .mcp_serve import serve_mcp

        if self.served is not None:
            self.served.stop()
        self.served = serve_mcp(self, host, port, approver=approver, listener=listener)
        return self.served

    async def _mcp_prompt(self, prompt: str) -> list[ContentBlock] | RunResult:
        """The prompt with an MCP server's prompt run and `@server:uri` resources attached; the
        servers start first (asking about project ones). A prompt that cannot be sent ends the run."""
        await sync_mcp(self.mcp, self.registry, self.ask_person, self.emit, roots=self.tool_context().all_dirs())
        try:
            blocks, warnings = await expand_prompt(self.mcp, prompt)
        except PromptError as e:
            self.emit(NoticeEvent(text=f"The prompt was not sent: {e}", level="error"))
            return RunResult(stop_reason="error", text=str(e))
        for text in warnings:
            self.emit(NoticeEvent(text=text, level="warning"))
        return blocks

    def close(self) -> None:
        """Stop the MCP servers (their processes too; they start again at the next run) and the
        notebook served to outside agents."""
        self.mcp.close()
        self.registry.set_group("mcp", [])
        if self.served is not None:
            self.served.stop()
            self.served = None

    def reset(self) -> None:
        """Forget the conversation, read state, trace and spilled results; keep configuration and rules."""
        if self.running:
            raise RuntimeError("cannot reset while the agent is running; interrupt it first")
        end_session(self.session)  # background commands stop before their logs go
        if self._owns_spill_dir:
            spill.release(self.spill_dir)
        self.messages.clear()
        self.read_state = ReadState()
        for clear in (self.trace.clear, self.turns.clear, self.session.clear, self.checkpoints.close):
            clear()
        self.usage, self._batches = Usage(), [0]
        self.context_manager.reset()
        self.standing.reset()


# --- a run's prompt: in before the first turn, taken out when the model never answered ---


async def prompt_blocks(
    prompt: str | list[ContentBlock], hooks: Hooks, emit: Emit, *, first: bool = False
) -> list[ContentBlock] | RunResult:
    """The person's request as content blocks, with what SessionStart (the conversation's
    `first` prompt) and UserPromptSubmit hooks add; or the run's end when a hook blocks it."""
    blocks: list[ContentBlock] = [{"type": "text", "text": prompt}] if isinstance(prompt, str) else list(prompt)
    if first and hooks.has("SessionStart"):
        started = await hooks.run(HookEvent(event="SessionStart"))
        if started.errors:
            emit(NoticeEvent(text="A SessionStart hook failed: " + "; ".join(started.errors), level="error"))
        blocks += [{"type": "text", "text": c} for c in started.additional_context]
    text = "\n".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
    hr = await hooks.run(HookEvent(event="UserPromptSubmit", prompt=text))
    if hr.decision == "deny" or hr.stop:
        emit(NoticeEvent(text=f"Prompt blocked by a UserPromptSubmit hook: {hr.reason}", level="warning"))
        return RunResult(stop_reason="blocked_by_hook", text=hr.reason)
    return blocks + [{"type": "text", "text": c} for c in hr.additional_context]


def forget_unanswered(messages: Messages, before: Messages, emit: Emit) -> bool:
    """`forget_prompt` when no reply of the model reached the history since it looked like
    `before`; whether it did."""
    if any(m["role"] == "assistant" for m in messages[len(before) :]):
        return False
    forget_prompt(messages, before, emit)
    return True


def forget_prompt(messages: Messages, before: Messages, emit: Emit) -> None:
    """The model never answered: put the history back as it was before the prompt, or the prompt
    would be merged into the next request."""
    messages[:] = before
    emit(
        NoticeEvent(
            text="The model did not answer, so this request was not added to the "
            "conversation; run it again when the problem is fixed.",
            level="info",
        )
    )


def usage_delta(total: Usage, start: Usage) -> Usage:
    return Usage(
        input_tokens=total.input_tokens - start.input_tokens,
        output_tokens=total.output_tokens - start.output_tokens,
        cache_read_input_tokens=total.cache_read_input_tokens - start.cache_read_input_tokens,
        cache_creation_input_tokens=total.cache_creation_input_tokens - start.cache_creation_input_tokens,
    )
