"""The tool contract: what a tool is, with fail-closed defaults (build_tool.py assembles one).

A tool is three groups of members (see docs/ARCHITECTURE.md): what the model sees (name,
input schema, description), what the runtime consults before running it (validation,
permissions, safety flags), and how its natural output becomes a `tool_result` block for the
model and a compact line for the person. Safety flags are functions of the parsed input; when one
raises, the caller gets the unsafe answer, because a runtime that guesses "safe" on a bug runs
things in parallel or without a prompt that it should not. What a tool knows about the run is
a `ToolContext` (tool_context.py); what the permission stage decided for the call is the
`CallDecision` given to `call` with the input (decision.py).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Literal

from pydantic import BaseModel
from typing_extensions import TypeVar

from ipy_agent.history.blocks import ToolResultBlock, ToolSpec

from .decision import UNDECIDED, CallDecision, CheckBehavior, WriteDecision
from .limits import TOOL_RESULT_CHARS
from .questions import Question
from .review import StagedReview
from .tool_context import ToolContext

__all__ = [
    "BackgroundTask",
    "CommandPart",
    "InputT",
    "PermissionCheck",
    "PermissionPreview",
    "PromptAction",
    "ResultT",
    "RuleSubject",
    "Tool",
    "ToolError",
    "ToolStatus",
    "maybe_await",
    "text_of",
]

Flag = bool | Callable[[Any], bool]
ToolKind = Literal["read", "edit", "execute", "other"]

# A tool's parsed input (its pydantic model) and its natural result (what `call` returns, before
# `map_result` makes it a tool_result block). A bare `Tool` is a tool of any input and result:
# the runtime's view of the tools it runs side by side.
InputT = TypeVar("InputT", bound=BaseModel, default=Any)
ResultT = TypeVar("ResultT", default=Any)


class ToolError(Exception):
    """Raised by a tool to tell the model something went wrong, in words it can act on.

    The message becomes the text of an `is_error` tool_result. Any other exception from a tool is
    also reported to the model, prefixed with its type, since it usually means a bug or an
    environment problem the model cannot fix by itself.
    """


@dataclass(frozen=True, kw_only=True)
class CommandPart:
    """One simple command of a command line, as an allow rule sees it.

    `text` is the command as written; `forms` are other spellings an allow rule may also match
    (behind a wrapper that only times or schedules it, `timeout 5 git status` is `git status`).
    """

    text: str
    forms: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class RuleSubject:
    """What a `Tool(specifier)` rule is matched against for one call.

    kind "command": the specifier is a command prefix (Bash). kind "path": a gitignore pattern.
    kind "value": the specifier must equal `value` or be a `*`-glob of it (custom tools).

    A command means what the tool that runs it says it means, so the tool fills in what rules
    need and the runtime parses nothing: `parts` are the simple commands an allow rule must
    each cover, or None when no allow rule may vouch for the command (it hides commands in
    substitutions, writes files by redirection, or could not be parsed); `spellings` are the
    commands the line may run however they are written (`\\rm x`, `env rm x`, `bash -c 'rm x'`
    give `rm x`), which deny and ask rules match besides `value`; `hidden`, when the line may
    run something it does not name, which every deny and ask rule then matches.
    """

    kind: Literal["command", "path", "value"]
    value: str
    parts: tuple[CommandPart, ...] | None = None
    spellings: tuple[str, ...] = ()
    # Why the command may run a program that `spellings` do not name (`$CMD x`, `sh < f`,
    # `find -exec "$x"`), or "": then every deny and ask rule for the tool could apply to it.
    hidden: str = ""


@dataclass(frozen=True, kw_only=True)
class PermissionCheck:
    """A tool's own opinion on one call, consulted beside the general rules.

    `behavior` "passthrough" means no opinion. "deny" is final. "ask" withholds the automatic
    pass of a read-only call; an allow rule or a mode the person chose still decides first,
    unless `always` is set: then the call asks whatever the mode, the hooks and the allow rules
    say (writes that would change what runs or what is allowed). "allow" lets it pass unless a
    rule says otherwise.
    """

    behavior: CheckBehavior = "passthrough"
    message: str = ""
    always: bool = False
    # What the check saw of each file the call will write (the editing tools), by resolved path:
    # the permission stage hands it to `call` in the `CallDecision`.
    writes: Mapping[str, WriteDecision] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class ToolStatus:
    """What a tool says about its state here (`Tool.status`): a line, and whether it warns."""

    text: str
    warning: bool = False


@dataclass(frozen=True)
class BackgroundTask:
    """Something a tool started that outlives its call: its id, what it runs, its state
    ("running", "exit 0", "killed"...), its start and end (`time.time()`; end None while it runs)."""

    id: str
    kind: str
    description: str
    state: str
    started: float
    ended: float | None = None


@dataclass(frozen=True, kw_only=True)
class PromptAction:
    """A way for the person to deny a call with a lasting effect the tool carries out, offered
    beside Allow and Deny (NotebookRun's "Never run this cell"). The call is denied; `apply` runs
    once, after the answer; the model is told `message`."""

    label: str
    message: str
    apply: Callable[[], Awaitable[None]]


@dataclass(frozen=True, kw_only=True)
class PermissionPreview:
    """What the approval prompt shows before anything happens: a diff, a command, a warning."""

    title: str = ""
    diff: str | None = None
    added: int = 0
    removed: int = 0
    command: str | None = None
    description: str | None = None
    notes: tuple[str, ...] = ()
    actions: tuple[PromptAction, ...] = ()
    # Questions for the person (AskUserQuestion): the prompt shows their options instead of
    # Allow / Deny, and the answers come back on the `PermissionAnswer`.
    questions: tuple[Question, ...] = ()
    # The change, staged where it will happen (NotebookEdit's cell in the open notebook); the
    # person may answer there as well as in the prompt (contract/review.py).
    review: StagedReview | None = None


MaybeAwaitable = Any


async def maybe_await(value: MaybeAwaitable) -> Any:
    if inspect.isawaitable(value):
        return await value
    return value


def text_of(output: object) -> str:
    """The default way any natural output becomes text for the model."""
    if output is None:
        return ""
    if isinstance(output, str):
        return output
    if isinstance(output, BaseModel):
        return output.model_dump_json(indent=2)
    if isinstance(output, (dict, list, tuple)):
        import json

        try:
            return json.dumps(output, indent=2, default=str, ensure_ascii=False)
        except (TypeError, ValueError):
            return repr(output)
    return str(output)


class Tool(Generic[InputT, ResultT]):
    """A tool as the runtime sees it. Build one with `build_tool()` or subclass it, naming its
    input model and its result: `class ReadTool(Tool[ReadInput, ReadOutput])`.

    Subclasses override what they need; every default fails closed (not read-only, not
    concurrency-safe), and every flag accessor turns an exception into the unsafe answer.
    """

    name: str = ""
    input_model: type[InputT]
    max_result_chars: int = TOOL_RESULT_CHARS
    # Which rule names govern this tool: Write and NotebookEdit answer to Edit(...) rules.
    rule_names: tuple[str, ...] = ()
    # Whole-tool rules naming one of these cover this tool too: `mcp__srv` for each tool of the
    # MCP server srv (allow, ask and deny alike).
    rule_groups: tuple[str, ...] = ()
    # Where the tool comes from, for `%agent_tools`; empty: a built-in or custom tool.
    origin: str = ""
    kind: ToolKind = "other"
    user_facing_name: str = ""
    # Offered in simple mode (`Agent(simple=True)`), which keeps the everyday few.
    offered_in_simple_mode: bool = False

    # --- model-facing -------------------------------------------------------------------
    def description(self, ctx: ToolContext) -> str:
        raise NotImplementedError

    def input_schema(self) -> dict[str, Any]:
        """The input model's JSON schema, built once per model (pydantic takes milliseconds,
        and every turn offers it again). Shared: read it, do not change it."""
        cached = self.__dict__.get("_schema")
        if cached is None or cached[0] is not self.input_model:
            schema = self.input_model.model_json_schema()
            schema.pop("title", None)
            cached = self.__dict__["_schema"] = (self.input_model, schema)
        return cached[1]

    def prompt_section(self, ctx: ToolContext) -> str:
        """Text this tool adds to the system prompt after the base prompt while it is offered
        (the Skill tool lists the skills there); "" for none. Read once per prompt, so it stays
        the same for a whole run and the cached prefix with it."""
        return ""

    def to_api(self, ctx: ToolContext) -> ToolSpec:
        return {"name": self.name, "description": self.description(ctx), "input_schema": self.input_schema()}

    # --- runtime control ---------------------------------------------------------------
    async def validate_input(self, inp: InputT, ctx: ToolContext) -> str | None:
        """None when the call may go ahead, or a message the model can act on."""
        return None

    async def check_permissions(self, inp: InputT, ctx: ToolContext) -> PermissionCheck:
        return PermissionCheck()

    def _read_only(self, inp: InputT) -> bool:
        return False

    def _concurrency_safe(self, inp: InputT) -> bool:
        return False

    def _destructive(self, inp: InputT) -> bool:
        return False

    def _enabled(self, ctx: ToolContext) -> bool:
        return True

    def is_read_only(self, inp: InputT) -> bool:
        try:
            return bool(self._read_only(inp))
        except Exception:
            return False

    def is_concurrency_safe(self, inp: InputT) -> bool:
        try:
            return bool(self._concurrency_safe(inp))
        except Exception:
            return False

    def is_destructive(self, inp: InputT) -> bool:
        # Unsafe here means "yes, destructive": the prompt then warns rather than reassures.
        try:
            return bool(self._destructive(inp))
        except Exception:
            return True

    def is_enabled(self, ctx: ToolContext) -> bool:
        try:
            return bool(self._enabled(ctx))
        except Exception:
            return False

    def disabled_reason(self, ctx: ToolContext) -> str:
        """Why `is_enabled` is false here, in words a person acts on (`%agent_tools` shows it)."""
        return "not available here (the tool says it is disabled in this setting)"

    def cancels_siblings_on_error(self, inp: InputT) -> bool:
        """Whether an error from this call cancels the calls after it in the same message."""
        return False

    def rule_subject(self, inp: InputT, ctx: ToolContext) -> RuleSubject | None:
        """What `Tool(specifier)` rules match for this call; None: only whole-tool rules apply."""
        return None

    def suggest_rule(self, inp: InputT, ctx: ToolContext) -> str:
        """The rule an "always allow" answer adds. Default: the whole tool."""
        return self.name

    async def preview(self, inp: InputT, ctx: ToolContext) -> PermissionPreview | None:
        """What the approval prompt shows; computed before anything is written."""
        return None

    def status(self, ctx: ToolContext) -> ToolStatus | None:
        """A line about this tool's state here, for `%agent_tools`; a warning is also said once
        per kernel before a run that offers the tool. None: nothing to say."""
        return None

    def background_tasks(self, ctx: ToolContext) -> Sequence[BackgroundTask]:
        """What this tool left running in this conversation (Bash's background commands), for
        `%agent_tasks`; empty for most tools."""
        return ()

    def take_reminders(self, ctx: ToolContext) -> list[str]:
        """News the model should read at its next turn (a background command finished), each
        said once: the loop adds them to the next request and shows them to the person."""
        return []

    # --- what the context window may forget ---------------------------------------------------
    def result_source(self, inp: dict[str, Any], cwd: Path) -> str | None:
        """The read-state key that a result of this call shows the model (the file Read read),
        or None. Clearing that result from the context forgets the read, so an edit asks for a
        fresh one. `inp` is the input as it stands in the history (a dict)."""
        return None

    def input_source(self, inp: dict[str, Any], cwd: Path) -> str | None:
        """The read-state key whose whole content this call's input carries (Write's new file),
        or None: while the call is in the context, so is that content."""
        return None

    # --- execution and results -----------------------------------------------------------
    async def call(self, inp: InputT, ctx: ToolContext, decision: CallDecision = UNDECIDED) -> ResultT:
        """Do the work; `decision` says who let the call run (none given: not approved)."""
        raise NotImplementedError

    def map_result(self, output: ResultT, tool_use_id: str) -> ToolResultBlock:
        """What the model reads of the result: a tool_result block (default: the result as text,
        or as it is when it is already a list of content blocks)."""
        if isinstance(output, list) and _is_block_list(output):
            return {"type": "tool_result", "tool_use_id": tool_use_id, "content": output}
        return {"type": "tool_result", "tool_use_id": tool_use_id, "content": text_of(output)}

    def summarize_use(self, inp: InputT) -> str:
        return _short_args(inp)

    async def describe_use(self, inp: InputT, ctx: ToolContext) -> str | None:
        """The row's summary once the input is valid, when naming what the call acts on needs a
        look (a notebook cell as the person sees it: `cell 4 · df = load(...)`); None keeps
        `summarize_use`."""
        return None

    def summarize_result(self, output: ResultT) -> str:
        text = f"{len(output)} blocks" if isinstance(output, list) and _is_block_list(output) else text_of(output)
        lines = text.count("\n") + 1 if text else 0
        return f"{lines} line{'s' if lines != 1 else ''}" if text else "no output"

    def detail_for_person(self, inp: InputT, output: ResultT) -> str:
        """What the person may expand under the compact line: a diff, an output excerpt.

        Never the raw tool_result: that stays in the kernel for `%agent_inspect`.
        """
        return ""

    def display_name(self) -> str:
        return self.user_facing_name or self.name

    def __repr__(self) -> str:
        return f"<Tool {self.name}>"


def _is_block_list(output: object) -> bool:
    return isinstance(output, list) and all(isinstance(b, dict) and "type" in b for b in output) and bool(output)


def _short_args(inp: Any, limit: int = 80) -> str:
    if isinstance(inp, BaseModel):
        data = inp.model_dump(exclude_defaults=True)
    elif isinstance(inp, dict):
        data = inp
    else:
        return str(inp)[:limit]
    text = ", ".join(f"{k}={v!r}" for k, v in data.items())
    return text if len(text) <= limit else text[: limit - 1] + "…"
