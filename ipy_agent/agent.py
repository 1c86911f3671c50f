"""Agent: the conversation and the loop. run -> turn -> stream the model -> execute tools.

The loop reads in one screen; the complexity lives in `runtime/`. Whatever happens (a tool
raises, a hook raises, the model errors, the person interrupts) the loop ends with
`self.messages` a valid Messages API conversation, so the next `run()` can go on from it.
"""

from __future__ import annotations

import asyncio
import copy
import tempfile
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from collections.abc import Callable, Sequence

from .models.base import BlockComplete, MessageComplete, Model, ModelError, ModelRequest, TextDelta, ThinkingDelta, Usage
from .runtime.budget import SELF_LIMITING, ResultBudget
from .runtime.executor import INTERRUPTED_TEXT, ToolExecutor
from .runtime.hooks import HookEvent, Hooks
from .runtime.lifecycle import RunEnv
from .runtime.permissions import PERMISSION_MODES, PermissionRequest, PermissionRules
from .runtime.read_state import ReadState
from .runtime.registry import Exposure, ToolRegistry
from .runtime.tool import Tool, ToolContext
from .runtime.trace import AgentEvent, CallRecord, NoticeEvent, RunEndEvent, TextEvent, ThinkingEvent, TurnEvent, now
from .system_prompt import build_system_prompt

__all__ = ["Agent", "RunResult", "TurnRecord"]

INTERRUPT_NOTE = "[The person interrupted this request.]"
INTERRUPTED_NOTICE = "Interrupted."  # the notice of an interrupted run (UIs that show the outcome skip it)


@dataclass(frozen=True, kw_only=True)
class RunResult:
    stop_reason: str  # end_turn | max_turns | interrupted | stopped_by_hook | blocked_by_hook | error | refusal | max_tokens
    text: str = ""
    turns: int = 0
    usage: Usage = field(default_factory=Usage)
    error: str | None = None
    error_kind: str | None = None


@dataclass
class _TurnState:
    """What one turn has put into the history so far, so an early end can close it validly."""

    completed: list[dict[str, Any]] = field(default_factory=list)  # whole blocks streamed so far
    appended: bool = False  # the assistant message of this turn is in the history
    answered: bool = False  # and its tool results are too


@dataclass(kw_only=True)
class TurnRecord:
    turn: int
    offered: list[str]
    hidden: dict[str, str]
    usage: Usage = field(default_factory=Usage)
    stop_reason: str | None = None
    start: float = field(default_factory=now)
    end: float | None = None


class Agent:
    def __init__(
        self,
        model: Model,
        *,
        cwd: str | Path | None = None,
        permission_mode: str = "default",
        allow: Sequence[str] | None = None,
        deny: Sequence[str] | None = None,
        ask: Sequence[str] | None = None,
        approver: Callable[[PermissionRequest], Any] | None = None,
        tools: Sequence[Tool] | None = None,
        max_turns: int = 50,
        working_dirs: Sequence[str | Path] = (),
        system_prompt: str | None = None,
        append_system_prompt: str | None = None,
        simple: bool = False,
        max_concurrency: int = 10,
        streaming_tools: bool = True,
        message_budget: int = 200_000,
        spill_dir: str | Path | None = None,
        notebook: Any = None,
        notebook_path: str | None = None,
    ) -> None:
        if permission_mode not in PERMISSION_MODES:
            raise ValueError(f"permission_mode {permission_mode!r} is not one of {', '.join(PERMISSION_MODES)}")
        if max_turns < 1:
            raise ValueError(f"max_turns must be at least 1, not {max_turns!r}")
        self.model = model
        self.cwd = Path(cwd or Path.cwd()).expanduser().resolve()
        if not self.cwd.is_dir():
            raise ValueError(f"cwd {str(self.cwd)!r} is not a directory")
        self.working_dirs = tuple(Path(d).expanduser().resolve() for d in working_dirs)
        self.permission_mode = permission_mode
        self.rules = PermissionRules.from_lists(list(allow or []), list(ask or []), list(deny or []))
        self.approver = approver
        if tools is None:
            from .tools import builtin_tools

            tools = builtin_tools()
        self.registry = ToolRegistry(list(tools))
        self.max_turns = max_turns
        self.system_prompt = system_prompt
        self.append_system_prompt = append_system_prompt
        self.simple = simple
        self.max_concurrency = max_concurrency
        self.streaming_tools = streaming_tools
        self.notebook = notebook
        self.notebook_path = notebook_path
        self.conversation_id = uuid.uuid4().hex[:12]
        self.spill_dir = Path(spill_dir) if spill_dir else Path(tempfile.gettempdir()) / "ipy-agent-results" / self.conversation_id
        self.budget = ResultBudget(self.spill_dir, message_limit=message_budget)
        self.messages: list[dict[str, Any]] = []
        self.read_state = ReadState()
        self.trace: list[CallRecord] = []
        self.turns: list[TurnRecord] = []
        self.hooks = Hooks()
        self.usage = Usage()
        self.session: dict[str, Any] = {}
        self._listeners: list[Callable[[AgentEvent], None]] = []
        self._batches = [0]
        self._task: asyncio.Task[Any] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    # --- public ----------------------------------------------------------------------------
    @property
    def tools(self) -> list[Tool]:
        return self.registry.all()

    def on_event(self, listener: Callable[[AgentEvent], None]) -> Callable[[AgentEvent], None]:
        self._listeners.append(listener)
        return listener

    def remove_listener(self, listener: Callable[[AgentEvent], None]) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)

    def context(self, tool_use_id: str | None = None) -> ToolContext:
        return ToolContext(
            cwd=self.cwd, read_state=self.read_state, working_dirs=self.working_dirs, spill_dir=self.spill_dir,
            permission_mode=self.permission_mode, tool_use_id=tool_use_id, session=self.session,
            notebook=self.notebook, simple=self.simple,
            # Rules come and go during a conversation (always-allow, %agent options): read them now.
            read_deny=tuple(r.specifier or "" for r in self.rules.deny if r.tool == "Read" and not r.whole_tool),
        )

    def exposure(self) -> Exposure:
        return self.registry.exposed(self.context(), self.rules, simple=self.simple)

    def system(self, exposure: Exposure | None = None) -> str:
        if self.system_prompt is not None:
            text = self.system_prompt
        else:
            exposure = exposure or self.exposure()
            text = build_system_prompt(
                cwd=self.cwd, working_dirs=self.working_dirs, tool_names=exposure.names,
                permission_mode=self.permission_mode, notebook=self.notebook_path,
            )
        return f"{text}\n\n{self.append_system_prompt}" if self.append_system_prompt else text

    def interrupt(self) -> None:
        """Stop the current run as soon as possible; safe to call from any thread."""
        task, loop = self._task, self._loop
        if task is not None and loop is not None and not task.done():
            loop.call_soon_threadsafe(task.cancel)

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def run(self, prompt: str | list[dict[str, Any]]) -> RunResult:
        """Run to the end of the turn. From code with a running event loop, use `await arun()`."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.arun(prompt))
        # Called from inside a running loop (a notebook cell): run on a private loop in a thread.
        box: dict[str, Any] = {}
        finished = threading.Event()

        def target() -> None:
            try:
                box["result"] = asyncio.run(self.arun(prompt))
            except BaseException as e:  # re-raised in the caller's thread below
                box["error"] = e
            finally:
                finished.set()

        threading.Thread(target=target, name="ipy_agent-run", daemon=True).start()
        while True:
            try:
                if finished.wait(0.1):
                    break
            except KeyboardInterrupt:
                # Every Ctrl-C asks the run to stop; return only once its history is closed.
                self.interrupt()
        if "error" in box:
            raise box["error"]
        return box["result"]

    async def arun(self, prompt: str | list[dict[str, Any]]) -> RunResult:
        if self.running:
            raise RuntimeError("this agent is already running; wait for it, or call agent.interrupt() first")
        self._task = asyncio.current_task()
        self._loop = asyncio.get_running_loop()
        start_usage = copy.copy(self.usage)
        try:
            result = await self._run(prompt)
        finally:
            self._task = None
        result = RunResult(
            stop_reason=result.stop_reason, text=result.text, turns=result.turns, error=result.error,
            error_kind=result.error_kind, usage=_usage_delta(self.usage, start_usage),
        )
        self._emit(RunEndEvent(result=result))
        return result

    # --- the loop --------------------------------------------------------------------------
    async def _run(self, prompt: str | list[dict[str, Any]]) -> RunResult:
        blocks = [{"type": "text", "text": prompt}] if isinstance(prompt, str) else list(prompt)
        try:
            hr = await self.hooks.run(HookEvent(event="UserPromptSubmit", prompt=_text_of(blocks)))
        except asyncio.CancelledError:
            if (task := asyncio.current_task()) is not None:
                task.uncancel()
            return self._interrupted(0)
        if hr.decision == "deny" or hr.stop:
            self._emit(NoticeEvent(text=f"Prompt blocked by a UserPromptSubmit hook: {hr.reason}", level="warning"))
            return RunResult(stop_reason="blocked_by_hook", text=hr.reason)
        blocks += [{"type": "text", "text": c} for c in hr.additional_context]
        # The history as it was: a run the model never answered (no API key, network down) must
        # leave no trace, or its prompt would be merged into the next request.
        before = [dict(m) for m in self.messages]
        self._append_user(blocks)

        turns = 0
        while True:
            if turns >= self.max_turns:
                self._emit(NoticeEvent(text=f"Stopped after {self.max_turns} turns (max_turns).", level="warning"))
                return RunResult(stop_reason="max_turns", text=self._last_text(), turns=turns)
            turns += 1
            outcome = await self._turn()
            if outcome is not None and outcome.stop_reason == "error" and not self._answered_since(before):
                self.messages[:] = before
                self._emit(NoticeEvent(text="The model did not answer, so this request was not added to the "
                                       "conversation; run it again when the problem is fixed.", level="info"))
            if outcome is not None:
                return RunResult(**{**outcome.__dict__, "turns": turns})

    async def _turn(self) -> RunResult | None:
        """One model request and its tool calls. None: the loop goes on."""
        state = _TurnState()
        executor: ToolExecutor | None = None
        try:
            ctx = self.context()
            exposure, api_tools = self._offer(ctx)
            record = TurnRecord(turn=len(self.turns) + 1, offered=exposure.names, hidden=dict(exposure.hidden))
            self.turns.append(record)
            env = self._env(exposure)
            executor = ToolExecutor(env, turn=record.turn, trace=self.trace, batch_counter=self._batches,
                                    max_concurrency=self.max_concurrency)
            request = ModelRequest(system=self.system(exposure), messages=copy.deepcopy(self.messages), tools=api_tools)
            self._emit(TurnEvent(turn=record.turn, phase="start"))
            final: MessageComplete | None = None
            try:
                async for event in self.model.stream(request):
                    match event:
                        case TextDelta():
                            self._emit(TextEvent(text=event.text))
                        case ThinkingDelta():
                            self._emit(ThinkingEvent(text=event.text))
                        case BlockComplete():
                            state.completed.append(event.block)
                            if event.block.get("type") == "tool_use" and self.streaming_tools:
                                executor.submit(event.block)
                        case MessageComplete():
                            final = event
            except ModelError as e:
                return await self._model_failed(e, state, executor, record)
            except Exception as e:  # a model implementation bug must not break the history either
                return await self._model_failed(ModelError(f"{type(e).__name__}: {e}"), state, executor, record)
            if final is None:
                return await self._model_failed(ModelError("the model stream ended without a complete message"), state, executor, record)

            self.usage += final.usage
            record.usage, record.stop_reason, record.end = final.usage, final.stop_reason, now()
            content = _clean_content(final.content)
            uses = [b for b in content if b.get("type") == "tool_use"]
            for b in uses:
                if not executor.has(str(b.get("id"))):
                    executor.submit(b)
            if content:
                self._append_assistant(content)
                state.appended = True
            self._emit(TurnEvent(turn=record.turn, phase="end", usage=final.usage, stop_reason=final.stop_reason))

            if uses:
                results = await executor.results()
                self._apply_message_budget(results, env)
                self._append_user(results)
                state.answered = True
                if env.stop_requested:
                    self._emit(NoticeEvent(text=f"Stopped by a hook: {env.stop_reason}", level="warning"))
                    return RunResult(stop_reason="stopped_by_hook", text=env.stop_reason)
                return None
            match final.stop_reason:
                case "pause_turn":
                    return None if content else RunResult(stop_reason="end_turn", text="")
                case "refusal":
                    self._emit(NoticeEvent(text="The model declined to continue with this request (refusal).", level="warning"))
                    return RunResult(stop_reason="refusal", text=self._last_text())
                case "max_tokens":
                    self._emit(NoticeEvent(text="The reply was cut off at the max_tokens limit; ask the agent to continue.", level="warning"))
                    return RunResult(stop_reason="max_tokens", text=self._last_text())
            return await self._stop_hooks()
        except asyncio.CancelledError:
            await self._close_turn(executor, state, INTERRUPTED_TEXT, INTERRUPT_NOTE)
            return self._interrupted(len(self.turns))
        except Exception as e:
            # A bug in the runtime or in a custom tool's contract: end the run, keep the history valid.
            error = f"internal error ({type(e).__name__}: {e}); the run was stopped"
            await self._close_turn(executor, state, f"Not run: the agent stopped because of an {error}.", None)
            self._emit(NoticeEvent(text=error.capitalize(), level="error"))
            return RunResult(stop_reason="error", text=error, error=error, error_kind="internal")

    def _offer(self, ctx: ToolContext) -> tuple[Exposure, list[dict[str, Any]]]:
        """The tools for this request and their API form; a tool whose description fails is hidden."""
        exposure = self.registry.exposed(ctx, self.rules, simple=self.simple)
        offered, api, hidden = [], [], dict(exposure.hidden)
        for tool in exposure.offered:
            try:
                api.append(tool.to_api(ctx))
                offered.append(tool)
            except Exception as e:
                hidden[tool.name] = f"its description failed ({type(e).__name__}: {e})"
                self._emit(NoticeEvent(text=f"Tool {tool.name} is hidden this turn: {hidden[tool.name]}", level="warning"))
        return Exposure(offered=tuple(offered), hidden=hidden), api

    async def _stop_hooks(self) -> RunResult | None:
        text = self._last_text()
        if not self.hooks.has("Stop"):
            return RunResult(stop_reason="end_turn", text=text)
        hr = await self.hooks.run(HookEvent(event="Stop", last_message=text))
        if hr.errors:
            # A broken Stop hook must not keep the agent going (its error is no instruction).
            self._emit(NoticeEvent(text="A Stop hook failed: " + "; ".join(hr.errors), level="error"))
            return RunResult(stop_reason="end_turn", text=text)
        if hr.decision == "deny" and not hr.stop:
            # A Stop hook that blocks stopping sends its reason back and the agent goes on.
            self._append_user([{"type": "text", "text": hr.reason or "A Stop hook asked you to continue."}])
            return None
        return RunResult(stop_reason="stopped_by_hook" if hr.stop else "end_turn", text=text)

    async def _model_failed(self, err: ModelError, state: _TurnState, executor: ToolExecutor,
                            record: TurnRecord) -> RunResult:
        record.end, record.stop_reason = now(), "error"
        if executor.submitted:
            # Tools already started from complete blocks: let them finish and keep the truth.
            self._append_assistant(_clean_content(state.completed))
            state.appended = True
            self._append_user(await executor.results())
            state.answered = True
        self._emit(NoticeEvent(text=str(err), level="error"))
        return RunResult(stop_reason="error", text=str(err), error=str(err), error_kind=getattr(err, "kind", "other"))

    async def _close_turn(self, executor: ToolExecutor | None, state: _TurnState, reason: str, note: str | None) -> None:
        """End a turn early (interrupt or internal error) with every tool_use answered once."""
        task = asyncio.current_task()
        if task is not None:
            while task.uncancel():
                pass
        results = executor.interrupt(reason) if executor is not None else []
        if not state.appended:
            # Only blocks that are whole go in; a tool_use with no result would break the history.
            answered = {r["tool_use_id"] for r in results}
            content = _clean_content([b for b in state.completed if b.get("type") != "tool_use" or b.get("id") in answered])
            if content:
                self._append_assistant(content)
                state.appended = True
        if state.appended and results and not state.answered:
            self._append_user([*results, *([{"type": "text", "text": note}] if note else [])])
            state.answered = True
        if executor is not None:
            try:
                await executor.drain()  # let cancelled tools kill their processes
            except asyncio.CancelledError:
                if task is not None:
                    task.uncancel()  # a second interrupt while cleaning up: the history is already valid

    def _interrupted(self, turns: int) -> RunResult:
        self._emit(NoticeEvent(text=INTERRUPTED_NOTICE, level="warning"))
        return RunResult(stop_reason="interrupted", text=self._last_text(), turns=turns)

    # --- helpers ---------------------------------------------------------------------------
    def _env(self, exposure: Exposure) -> RunEnv:
        return RunEnv(
            tools={t.name: t for t in exposure.offered}, rules=self.rules, hooks=self.hooks, budget=self.budget,
            make_ctx=self.context, mode=lambda: self.permission_mode, approver=self.approver, emit=self._emit,
            splitter=_bash_splitter(),
        )

    def _apply_message_budget(self, results: list[dict[str, Any]], env: RunEnv) -> None:
        # This turn's calls are the last records of the trace, one per result.
        records = {r.tool_use_id: r for r in self.trace[-len(results):]} if results else {}
        exempt = frozenset(
            tid for tid, r in records.items()
            if (tool := env.tools.get(r.tool_name)) is not None and tool.max_result_chars >= SELF_LIMITING
        )
        for tid, path in self.budget.apply_message_limit(results, exempt).items():
            rec = records[tid]
            rec.result = next(b for b in results if b.get("tool_use_id") == tid)  # what the model receives now
            if path is not None:
                rec.spilled_to = str(path)

    def _emit(self, event: AgentEvent) -> None:
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:  # a broken renderer must not break the run
                pass

    def _append_user(self, blocks: list[dict[str, Any]]) -> None:
        if self.messages and self.messages[-1]["role"] == "user":
            # After an interrupt or an error the history can end with the person; merge.
            self.messages[-1]["content"] = [*_as_blocks(self.messages[-1]["content"]), *blocks]
        else:
            self.messages.append({"role": "user", "content": blocks})

    def _append_assistant(self, content: list[dict[str, Any]]) -> None:
        if not content:
            return
        # After pause_turn the API continues the same assistant message; so do we.
        if self.messages and self.messages[-1]["role"] == "assistant":
            self.messages[-1]["content"] = [*_as_blocks(self.messages[-1]["content"]), *content]
        else:
            self.messages.append({"role": "assistant", "content": content})

    def _answered_since(self, before: list[dict[str, Any]]) -> bool:
        """Whether the model's reply reached the history after it looked like `before`."""
        return any(m["role"] == "assistant" for m in self.messages[len(before):])

    def _last_text(self) -> str:
        for m in reversed(self.messages):
            if m["role"] == "assistant":
                return "".join(b.get("text", "") for b in _as_blocks(m["content"]) if b.get("type") == "text")
        return ""

    def reset(self) -> None:
        """Forget the conversation, read state and trace; keep configuration and rules."""
        if self.running:
            raise RuntimeError("cannot reset while the agent is running; interrupt it first")
        self.messages.clear()
        self.read_state = ReadState()
        self.trace.clear()
        self.turns.clear()
        self.usage = Usage()
        self.session.clear()
        self._batches = [0]


def _usage_delta(total: Usage, start: Usage) -> Usage:
    return Usage(
        input_tokens=total.input_tokens - start.input_tokens,
        output_tokens=total.output_tokens - start.output_tokens,
        cache_read_input_tokens=total.cache_read_input_tokens - start.cache_read_input_tokens,
        cache_creation_input_tokens=total.cache_creation_input_tokens - start.cache_creation_input_tokens,
    )


def _as_blocks(content: Any) -> list[dict[str, Any]]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])


def _clean_content(content: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The API rejects empty text blocks; drop them (and our private keys)."""
    out = []
    for b in content:
        if b.get("type") == "text" and not str(b.get("text", "")).strip():
            continue
        out.append({k: v for k, v in b.items() if not k.startswith("_")})
    return out


def _text_of(blocks: list[dict[str, Any]]) -> str:
    return "\n".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")


_SPLITTER: list[Any] = []


def _bash_splitter() -> Callable[[str], list[str] | None] | None:
    """Bash's tree-sitter splitter for permission rules, when the Bash tool is installed."""
    if not _SPLITTER:
        try:
            from .tools.bash.wrappers import split_command
        except Exception:
            split_command = None  # type: ignore[assignment]
        _SPLITTER.append(split_command)
    return _SPLITTER[0]
