"""Subagents: the Task tool runs a search or an analysis in a fresh conversation with fewer tools,
and only its conclusion comes back, so the parent's context stays small.

A subagent is an `Agent` of its own, made for one Task call from the parent that runs it (found
through `current_agent`, set while an agent runs): the parent's model (or its type's), working
directories, rules (the same object: a grant or a deny holds for both), hooks, sandbox, spill
directory and notebook; its type's system prompt, turn limit and tools, only those of the
parent's that the type names (never more), and a permission mode never looser than the
parent's. Its read state is its own: what it read does not count as the parent's reads. Its
requests pass the parent's meter (runtime/meter.py): a run and all its subagents, at any depth
and in parallel, spend one budget (the run's `max_budget_usd` and the policy's limits).

The person sees the Task's row, whose detail lists the subagent's calls; a call of the
subagent that asks opens its prompt in the same cell, labelled with the Task's description
(the parent's approver, with the row's name changed). Its usage joins the parent's, and the
result says what it cost. Its calls are kept under the Task's tool_use_id
(`runtime/trace.py: nested_calls`) for `%agent_trace` and `%agent_inspect`. An interrupt of the
parent cancels the call, which interrupts the subagent: its history is closed as the parent's
is, and the cancellation goes on up. A read-only type's Tasks run in parallel.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from ipy_agent.contract.decision import PERMISSION_MODES, UNDECIDED, CallDecision, PermissionMode
from ipy_agent.contract.hooks import HookEvent
from ipy_agent.contract.tool import PermissionCheck, Tool, ToolError, maybe_await
from ipy_agent.contract.tool_context import SandboxLimits, SandboxSetting, ToolContext
from ipy_agent.history.blocks import ToolResultBlock
from ipy_agent.models.base import Model, Usage
from ipy_agent.permissions.decide import Approver, PermissionRequest
from ipy_agent.runtime.conversation import Conversation
from ipy_agent.runtime.trace import AgentEvent, CallEvent, CallRecord, RunResult, nested_calls

from .spend import Managed
from .tool_session import end_session

if TYPE_CHECKING:
    from ipy_agent.notebook.bridge import NotebookBridge

__all__ = [
    "EXPLORE",
    "Parent",
    "SubagentResult",
    "SubagentType",
    "TaskInput",
    "TaskTool",
    "current_agent",
    "default_tools",
    "make_child",
    "set_subagent_types",
    "stricter",
    "subagent_types",
    "types_from_settings",
]


class Parent(Conversation, Protocol):
    """What a Task needs of the agent that runs it (`Agent`), and what it makes the subagent with:
    `type(parent)(...)` takes Agent's arguments."""

    working_dirs: tuple[Path, ...]
    approver: Approver | None
    session: dict[str, object]
    spill_dir: Path
    notebook: NotebookBridge | None
    notebook_path: str | None
    sandbox: SandboxSetting
    sandbox_limits: SandboxLimits
    instructions: bool
    managed: Managed

    def on_event(self, listener: Callable[[AgentEvent], None]) -> Callable[[AgentEvent], None]: ...

    async def arun(self, prompt: str) -> RunResult: ...


# The agent whose run this is (set by `Agent.arun` for its task, and so for its tool calls).
current_agent: contextvars.ContextVar[Parent | None] = contextvars.ContextVar("ipy_agent_current_agent", default=None)

MAX_DEPTH = 2  # a Task's subagent may start Tasks (if its type allows) down to this depth
# From the strictest: a subagent's mode is never looser than its parent's.
_STRICTNESS: tuple[PermissionMode, ...] = ("plan", "default", "acceptEdits", "bypassPermissions")


def stricter(a: PermissionMode, b: PermissionMode | None) -> PermissionMode:
    """The stricter of two permission modes (`b` None: `a`)."""
    if b is None:
        return a
    return a if _STRICTNESS.index(a) <= _STRICTNESS.index(b) else b


@dataclass(frozen=True, kw_only=True)
class SubagentType:
    """What kind of subagent a Task starts: its system prompt, the tools it may have (of its
    parent's), its model (None: the parent's), turn limit and permission mode (never looser than
    the parent's), and whether it may start Tasks of its own."""

    name: str
    description: str
    system_prompt: str
    tools: tuple[str, ...]
    model: Model | None = None
    max_turns: int = 20
    permission_mode: PermissionMode | None = None
    may_delegate: bool = False
    read_only: bool = False  # its Tasks only read: they run without asking and in parallel

    def __post_init__(self) -> None:
        if self.permission_mode is not None and self.permission_mode not in PERMISSION_MODES:
            raise ValueError(f"permission_mode must be one of {PERMISSION_MODES}, not {self.permission_mode!r}")
        if not 1 <= self.max_turns <= 200:
            raise ValueError(f"max_turns must be 1..200, not {self.max_turns}")


EXPLORE = SubagentType(
    name="explore",
    description="Searches and reads the project, the notebook and the kernel's variables, and reports what it "
    "found; it changes nothing.",
    system_prompt=(
        "You are a read-only research assistant working for another agent. Search and read to answer the task "
        "you are given: Glob and Grep to find, Read and NotebookRead to read, Variables for the kernel's "
        "variables, Bash only for commands that read. You cannot change anything. Your final message is all "
        "the other agent will see: make it a complete, concise report with file paths and line numbers."
    ),
    tools=("Read", "Glob", "Grep", "Bash", "NotebookRead", "Variables"),
    permission_mode="plan",  # anything that is not read-only is refused, Bash included
    read_only=True,
)


class TaskInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    description: str = Field(min_length=1, max_length=80, description="What the subagent does, in 3-5 words.")
    prompt: str = Field(min_length=1, description="The task: everything the subagent needs to know to do it alone.")
    subagent_type: str = Field(description="Which kind of subagent runs it (see the list in this tool's description).")


@dataclass(frozen=True)
class SubagentResult:
    agent_type: str
    description: str
    text: str
    stop_reason: str
    turns: int
    usage: Usage
    cost: float | None
    calls: tuple[CallRecord, ...]


class TaskTool(Tool[TaskInput, SubagentResult]):
    name = "Task"
    input_model = TaskInput
    kind = "other"

    def __init__(self, types: Sequence[SubagentType] = (EXPLORE,), *, depth: int = 0) -> None:
        self.types: dict[str, SubagentType] = {t.name: t for t in types}
        self.depth = depth

    def description(self, ctx: ToolContext) -> str:
        kinds = "\n".join(f"- {t.name}: {t.description} Tools: {', '.join(t.tools)}." for t in self.types.values())
        return (
            "Hand a self-contained task (a search across many files, an analysis) to a subagent that works "
            "in a fresh context with fewer tools and returns only its final report, so your own context "
            "stays small. It does not see this conversation: put everything it needs in `prompt`. Several "
            "read-only Tasks in one message run in parallel. Read a file yourself before you edit it: what "
            f"a subagent read does not count as read by you.\n\nSubagent types:\n{kinds}"
        )

    def _kind(self, inp: TaskInput) -> SubagentType | None:
        return self.types.get(inp.subagent_type)

    def _read_only(self, inp: TaskInput) -> bool:
        kind = self._kind(inp)
        return kind is not None and kind.read_only

    def _concurrency_safe(self, inp: TaskInput) -> bool:
        return self._read_only(inp)

    async def validate_input(self, inp: TaskInput, ctx: ToolContext) -> str | None:
        if self._kind(inp) is None:
            return f"Unknown subagent_type {inp.subagent_type!r}; use one of: {', '.join(self.types)}."
        return None

    async def check_permissions(self, inp: TaskInput, ctx: ToolContext) -> PermissionCheck:
        # Starting one changes nothing: each of its calls is checked (and asked) on its own.
        return PermissionCheck(behavior="allow", message="the subagent's own calls are checked one by one")

    async def call(self, inp: TaskInput, ctx: ToolContext, decision: CallDecision = UNDECIDED) -> SubagentResult:
        parent = current_agent.get()
        if parent is None:
            raise ToolError("A Task runs only inside an agent's run.")
        kind = self.types[inp.subagent_type]
        child = make_child(parent, kind, self, inp.description)
        label = f"{kind.name}: {inp.description}"
        asked: set[str] = set()

        def forward(event: AgentEvent) -> None:
            # Rows in the parent's cell only for the calls that asked the person there.
            if isinstance(event, CallEvent) and (event.record.status == "waiting" or event.record.tool_use_id in asked):
                asked.add(event.record.tool_use_id)
                name = event.record.display_name or event.record.tool_name
                parent.emit(replace(event, record=replace(event.record, display_name=f"{label} ▸ {name}")))

        child.on_event(forward)
        nested_calls(parent.session)[ctx.tool_use_id or ""] = child.trace
        await parent.hooks.run(HookEvent(event="SubagentStart", agent_type=kind.name, prompt=inp.prompt))
        try:
            result = await child.arun(inp.prompt)
        finally:
            parent.usage += child.usage  # what it spent is the parent's too, interrupted or not
            end_session(child.session)  # its conversation is over: what it left in the background stops
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise asyncio.CancelledError  # the parent was interrupted: go on up, the subagent is closed
        await parent.hooks.run(HookEvent(event="SubagentStop", agent_type=kind.name, last_message=result.text))
        priced = getattr(child.model, "cost", None)
        cost = priced(child.usage).usd if callable(priced) else None
        return SubagentResult(
            agent_type=kind.name,
            description=inp.description,
            text=result.text,
            stop_reason=result.stop_reason,
            turns=result.turns,
            usage=child.usage,
            cost=cost,
            calls=tuple(child.trace),
        )

    def map_result(self, output: SubagentResult, tool_use_id: str) -> ToolResultBlock:
        text = output.text.strip() or "(the subagent ended without a report)"
        if output.stop_reason not in ("end_turn", "stop_sequence"):
            text += f"\n[The subagent stopped early: {output.stop_reason}.]"
        block: ToolResultBlock = {"type": "tool_result", "tool_use_id": tool_use_id, "content": text}
        if output.stop_reason == "error":
            block["is_error"] = True
        return block

    def summarize_use(self, inp: TaskInput) -> str:
        return f"{inp.subagent_type}: {inp.description}"

    def summarize_result(self, output: SubagentResult) -> str:
        tokens = output.usage.input_tokens + output.usage.output_tokens
        cost = f", ${output.cost:.4f}" if output.cost is not None else ""
        calls = len(output.calls)
        return f"{output.turns} turns, {calls} call{'s' if calls != 1 else ''}, {tokens:,} tokens{cost}"

    def detail_for_person(self, inp: TaskInput, output: SubagentResult) -> str:
        rows = [
            f"{r.status:>9}  {r.display_name or r.tool_name} {r.summary_use}  {r.summary_result}" for r in output.calls
        ]
        return "\n".join([*rows, "", output.text.strip()[:2000]])


def make_child(parent: Parent, kind: SubagentType, task: TaskTool, description: str) -> Parent:
    """The subagent of one Task call (see the module's docstring for what it shares)."""
    make: Callable[..., Parent] = type(parent)
    names = [n for n in kind.tools if n != task.name]
    tools: list[Tool] = [t for n in names if (t := parent.tool(n)) is not None]  # never more than the parent's
    if kind.may_delegate and task.depth + 1 < MAX_DEPTH and parent.tool(task.name) is not None:
        tools.append(TaskTool(list(task.types.values()), depth=task.depth + 1))
    child = make(
        model=kind.model or parent.model,
        cwd=parent.cwd,
        permission_mode=stricter(parent.permission_mode, kind.permission_mode),
        approver=_labelled(parent, f"{kind.name}: {description}"),
        tools=tools,
        max_turns=kind.max_turns,
        working_dirs=parent.working_dirs,
        system_prompt=kind.system_prompt,
        spill_dir=parent.spill_dir,
        notebook=parent.notebook,
        notebook_path=parent.notebook_path,
        sandbox=parent.sandbox,
        sandbox_limits=parent.sandbox_limits,
        instructions=parent.instructions,
    )
    child.rules, child.hooks = parent.rules, parent.hooks  # the same rules and hooks, not copies
    child.managed.share(parent.managed.meter)  # one meter for the run: parallel Tasks share its budget
    return child


def _labelled(parent: Parent, label: str) -> Approver | None:
    """The parent's approver, with the prompt's row named after the Task (None: no one to ask)."""
    if parent.approver is None:
        return None
    approver = parent.approver

    async def ask(request: PermissionRequest) -> Any:
        name = request.display_name or request.tool_name
        return await maybe_await(approver(replace(request, display_name=f"{label} ▸ {name}")))

    return ask


def subagent_types(types: Mapping[str, SubagentType] | None = None) -> list[SubagentType]:
    """The built-in types, with `types` added or replacing them by name."""
    out = {EXPLORE.name: EXPLORE}
    out.update(types or {})
    return list(out.values())


_SETTING_KEYS = frozenset({"description", "prompt", "tools", "max_turns", "permission_mode", "may_delegate", "model"})


def types_from_settings(settings: Mapping[str, Mapping[str, Any]]) -> list[SubagentType]:
    """Subagent types from settings (`AgentMagics.subagents`): name -> {"description", "prompt",
    "tools": [...], "max_turns", "permission_mode", "may_delegate", "model": "PROVIDER:NAME"}.
    A type in plan mode is read-only (its Tasks run unasked and in parallel). Raises ValueError
    naming the type and what is wrong."""
    from ipy_agent.models.providers import model_from_spec

    out = []
    for name, spec in settings.items():
        where = f"subagent type {name!r}"
        if not isinstance(spec, Mapping):
            raise ValueError(f"{where}: expected a dict of its settings, not {type(spec).__name__}")
        if unknown := set(spec) - _SETTING_KEYS:
            raise ValueError(f"{where}: unknown keys {sorted(unknown)}; known: {sorted(_SETTING_KEYS)}")
        tools = spec.get("tools")
        if not isinstance(tools, list | tuple) or not tools or not all(isinstance(t, str) for t in tools):
            raise ValueError(f"{where}: 'tools' must be a non-empty list of tool names")
        if not isinstance(spec.get("prompt"), str) or not spec["prompt"].strip():
            raise ValueError(f"{where}: 'prompt' (its system prompt) is required")
        mode = spec.get("permission_mode")
        model = spec.get("model")
        out.append(
            SubagentType(
                name=name,
                description=str(spec.get("description", "")),
                system_prompt=spec["prompt"],
                tools=tuple(tools),
                model=model_from_spec(model) if isinstance(model, str) and model else None,
                max_turns=int(spec.get("max_turns", 20)),
                permission_mode=mode,
                may_delegate=bool(spec.get("may_delegate", False)),
                read_only=mode == "plan",
            )
        )
    return out


def set_subagent_types(tools: Sequence[Tool], types: Sequence[SubagentType]) -> None:
    """Give every Task among `tools` the built-in types and `types` (which win by name)."""
    for tool in tools:
        if isinstance(tool, TaskTool):
            tool.types = {t.name: t for t in subagent_types({t.name: t for t in types})}


def default_tools() -> list[Tool]:
    """The tools an agent has when none are given: the built-in ones and Task (with the built-in
    subagent types)."""
    from ipy_agent.tools import builtin_tools

    return [*builtin_tools(), TaskTool()]
