"""Agent: the conversation and the loop. run -> turn -> stream the model -> execute tools.

The loop reads in one screen; the complexity lives in `runtime/`, a turn (from its request to its
end) in turn.py, rewind in rewind.py. Whatever happens (a tool or hook raises, the model errors,
the person interrupts) the loop ends with `self.messages` a valid conversation, so the next
`run()` goes on."""

from __future__ import annotations

import asyncio
import copy
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ipy_agent.base.threads import run_to_end
from ipy_agent.config.policy import Policy
from ipy_agent.context import ContextManager
from ipy_agent.contract.decision import PERMISSION_MODES, PermissionMode
from ipy_agent.contract.hooks import HookEvent, Hooks
from ipy_agent.contract.limits import MESSAGE_RESULT_CHARS
from ipy_agent.contract.read_state import ReadState
from ipy_agent.contract.tool import Tool
from ipy_agent.contract.tool_context import SandboxLimits, SandboxSetting, ToolContext
from ipy_agent.history.blocks import ContentBlock, Message, ToolSpec
from ipy_agent.history.messages import append_user, last_text
from ipy_agent.history.tool_ids import HistoryIds
from ipy_agent.mcp import McpManager
from ipy_agent.models.base import Model, Usage
from ipy_agent.models.recording import RecordingModel, recording_into, swap_model
from ipy_agent.permissions.decide import Approver
from ipy_agent.permissions.rules import PermissionRules, Rule, RuleSpec
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
from .arguments import KEEP, Keep, check_choice, check_sandbox, check_turns
from .rewind import Rewinding
from .spend import Managed
from .standing import Standing
from .subagent import current_agent, default_tools
from .tool_session import begin_run, end_session
from .turn import interrupted, offer_tools, run_turn

if TYPE_CHECKING:
    from ipy_agent.notebook.bridge import NotebookBridge

__all__ = ["Agent"]


Messages = list[Message]
Emit = Callable[[AgentEvent], None]


class Agent(Rewinding, Listeners):
    """One conversation with a model through tools: `run(prompt)` (or `await arun(prompt)`) goes on
    from the history, `rewind(n)` back to before prompt n. docs/ARCHITECTURE.md explains the arguments."""

    def __init__(
        self,
        model: Model,
        *,
        cwd: str | Path | None = None,
        permission_mode: PermissionMode = "default",
        allow: Sequence[str] | None = None,
        deny: Sequence[str] | None = None,
        ask: Sequence[str] | None = None,
        approver: Approver | None = None,
        tools: Sequence[Tool] | None = None,
        max_turns: int = 50,
        working_dirs: Sequence[str | Path] = (),
        system_prompt: str | None = None,
        append_system_prompt: str | None = None,
        simple: bool = False,
        max_concurrency: int = 10,
        streaming_tools: bool = True,
        message_budget: int = MESSAGE_RESULT_CHARS,
        spill_dir: str | Path | None = None,
        notebook: NotebookBridge | None = None,
        notebook_path: str | None = None,
        context_window: int | None = None,
        context_threshold: float = 0.8,
        sandbox: SandboxSetting = "auto",
        sandbox_limits: SandboxLimits | Mapping[str, int] | None = None,
        mcp_servers: Mapping[str, Mapping[str, Any]] | None = None,
        record: str | Path | None = None,
        instructions: bool = True,
        max_budget_usd: float | None = None,
        policy: Policy | None = None,
    ) -> None:
        check_choice("permission_mode", permission_mode, PERMISSION_MODES)
        check_turns(max_turns)
        self.managed = Managed(policy, max_budget_usd, permission_mode)  # the policy, the run's meter
        self.model: Model = recording_into(model, record) if record else model
        self.cwd = Path(cwd or Path.cwd()).expanduser().resolve()
        if not self.cwd.is_dir():
            raise ValueError(f"cwd {str(self.cwd)!r} is not a directory")
        self.working_dirs = tuple(Path(d).expanduser().resolve() for d in working_dirs)
        self.permission_mode = permission_mode
        self.rules = PermissionRules.with_builtin(list(allow or []), list(ask or []), list(deny or []))
        self.approver = approver
        self.registry = ToolRegistry(list(default_tools() if tools is None else tools))  # Task among them
        self.max_turns = max_turns
        self.system_prompt = system_prompt
        self.append_system_prompt = append_system_prompt
        self.simple = simple
        self.max_concurrency = max_concurrency
        self.streaming_tools = streaming_tools
        self.notebook = notebook
        self.notebook_path = notebook_path
        self.instructions, self.standing = instructions, Standing()  # AGENTS.md...; read once per prompt
        # MCP servers (.mcp.json's shape); given in code, so trusted. Nothing starts until a run.
        self.mcp = McpManager(self.cwd, mcp_servers)
        self.sandbox, self.sandbox_limits = check_sandbox(sandbox, sandbox_limits)
        self.sandbox = self.managed.apply(self.rules, self.sandbox, self.mcp)
        self.conversation_id = uuid.uuid4().hex[:12]
        # Our own spill directory goes away on reset and at exit; one a person chose stays.
        self.spill_dir, self._owns_spill_dir = spill.choose_dir(spill_dir, self.conversation_id)
        self.budget = ResultBudget(self.spill_dir, message_limit=message_budget)
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
        self._task: asyncio.Task[Any] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        # Sizes each request and clears or compacts the history to fit the window (ipy_agent/context).
        self.context_manager = ContextManager(self, window=context_window, threshold=context_threshold)
        self._configured_rules: list[Rule] = []  # what the last `configure(rules=...)` added

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
        """Change how the next run goes; what is not given stays (the magics call this before each
        run). `rules` replace those the previous `configure` added, never the constructor's or the
        person's grants; `result_limit` caps every tool's result (None: each tool's own);
        `instructions`: whether requests carry the standing instructions (config/instructions.py)."""
        if self.running:
            raise RuntimeError("cannot configure the agent while it runs; wait for it or interrupt it")
        if permission_mode is not None:
            self.permission_mode = check_choice("permission_mode", permission_mode, PERMISSION_MODES)
        if max_turns is not None:
            self.max_turns = check_turns(max_turns)
        if model is not None:
            self.model = swap_model(self.model, model)  # a recorded conversation goes on being recorded
        if rules is not None:
            self._configured_rules = self.rules.replace(self._configured_rules, rules)
        if message_budget is not None:
            self.budget.message_limit = message_budget
        if not isinstance(result_limit, Keep):
            self.registry.result_limit_override = result_limit
        if not isinstance(notebook, Keep):
            self.notebook = notebook
            self.notebook_path = notebook.display_path if notebook is not None else None
        if not isinstance(approver, Keep):
            self.approver = approver
        if instructions is not None:
            self.instructions = instructions

    def check_policy(self) -> None:
        """Re-read the managed policy and check the next run (PolicyError, PolicyViolation: spend.py)."""
        self.sandbox = self.managed.enforce(self.rules, self.sandbox, self.mcp, self.permission_mode, self.model)

    def record(self, path: str | Path, *, how: str = "") -> RecordingModel:
        """Record the conversation from here on into the transcript `path` (models/recording.py)."""
        self.model = recorder = recording_into(self.model, path, how=how)
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
            simple=self.simple,
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
        try:
            result = await self._run(prompt)
        finally:
            self._task = None
            current_agent.reset(token)
        result = replace(result, usage=usage_delta(self.usage, start_usage), budget=self.managed.describe())
        self.emit(RunEndEvent(result=result))
        return result

    # --- the loop --------------------------------------------------------------------------
    async def _run(self, prompt: str | list[ContentBlock]) -> RunResult:
        try:
            blocks = await prompt_blocks(prompt, self.hooks, self.emit)
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
                return replace(outcome, turns=turns)

    def close(self) -> None:
        """Stop the MCP servers (their processes too); they start again at the next run."""
        self.mcp.close()
        self.registry.set_group("mcp", [])

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


async def prompt_blocks(prompt: str | list[ContentBlock], hooks: Hooks, emit: Emit) -> list[ContentBlock] | RunResult:
    """The person's request as content blocks, with what UserPromptSubmit hooks add; or the
    run's end when a hook blocks it."""
    blocks: list[ContentBlock] = [{"type": "text", "text": prompt}] if isinstance(prompt, str) else list(prompt)
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
