"""BashOutput and KillShell: the model's handles on the commands Bash started in the background.

Both are offered only once the conversation has started a background command (before that they
could only fail, and a Bash the person denied leaves nothing for them to do). BashOutput only
reads what this conversation's own command wrote (its log, not a file the model
names), so it is read-only and needs no person; KillShell stops a command this conversation
started and nothing else, so it needs no person either (plan mode, which allows only reading,
still refuses it).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from ipy_agent.contract.decision import UNDECIDED, CallDecision
from ipy_agent.contract.tool import PermissionCheck, Tool
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.history.blocks import ToolResultBlock

from .background import BackgroundShell, shells_of, started_any
from .logs import Read
from .process import OUTPUT_LIMIT

__all__ = ["BashOutputInput", "BashOutputTool", "KillShellInput", "KillShellTool"]


class BashOutputInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    bash_id: str = Field(description="The id Bash returned for the background command (bash_1, ...).")
    filter: str | None = Field(
        default=None,
        description="A regular expression: return only the new lines that match it. Lines that do not match "
        "are still counted as read.",
    )


class KillShellInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    shell_id: str = Field(description="The id of the background command to stop (bash_1, ...).")


@dataclass(frozen=True)
class Killed:
    shell: BackgroundShell
    stopped: bool  # it was running, and now is not


class BashOutputTool(Tool[BashOutputInput, Read]):
    name = "BashOutput"
    input_model = BashOutputInput
    max_result_chars = OUTPUT_LIMIT + 2_000
    kind = "read"

    def description(self, ctx: ToolContext) -> str:
        return (
            "Read what a background command (started by Bash with `run_in_background: true`) printed since "
            "your last BashOutput call for it, and whether it still runs or how it ended. Each call returns "
            "only new lines; with `filter` only the new lines matching that regular expression. Long output "
            f"is cut in the middle at {OUTPUT_LIMIT:,} characters; the whole log's path is given, to Read "
            "with offset/limit or Grep."
        )

    def _enabled(self, ctx: ToolContext) -> bool:
        return started_any(ctx.session)

    def _read_only(self, inp: BashOutputInput) -> bool:
        return True

    def _concurrency_safe(self, inp: BashOutputInput) -> bool:
        return True

    async def check_permissions(self, inp: BashOutputInput, ctx: ToolContext) -> PermissionCheck:
        return PermissionCheck(behavior="allow", message="reads a command this conversation started")

    async def call(self, inp: BashOutputInput, ctx: ToolContext, decision: CallDecision = UNDECIDED) -> Read:
        return await asyncio.to_thread(shells_of(ctx.session).read, inp.bash_id, inp.filter)

    def map_result(self, output: Read, tool_use_id: str) -> ToolResultBlock:
        if output.shown:
            body = output.text.rstrip("\n")
        elif output.lines:
            body = f"(none of the {output.lines} new lines matched the filter)"
        else:
            body = "(no new output)"
        head = f"[{output.shell_id}: {output.state}]"
        if output.filtered and output.shown:
            head += f" {output.shown} of {output.lines} new lines matched the filter"
        text = f"{head}\n{body}\n(whole log: {output.log_path})"
        return {"type": "tool_result", "tool_use_id": tool_use_id, "content": text}

    def summarize_use(self, inp: BashOutputInput) -> str:
        return inp.bash_id + (f" /{inp.filter}/" if inp.filter else "")

    def summarize_result(self, output: Read) -> str:
        lines = f"{output.shown} new line{'s' if output.shown != 1 else ''}"
        return f"{lines}; {output.state}"

    def detail_for_person(self, inp: BashOutputInput, output: Read) -> str:
        return output.text[-4000:]


class KillShellTool(Tool[KillShellInput, Killed]):
    name = "KillShell"
    input_model = KillShellInput
    kind = "execute"

    def description(self, ctx: ToolContext) -> str:
        return (
            "Stop a background command started by Bash with `run_in_background: true`, and every process it "
            "started (its whole process group). Its output so far stays readable with BashOutput."
        )

    def _enabled(self, ctx: ToolContext) -> bool:
        return started_any(ctx.session)

    async def check_permissions(self, inp: KillShellInput, ctx: ToolContext) -> PermissionCheck:
        return PermissionCheck(behavior="allow", message="stops a command this conversation started")

    async def call(self, inp: KillShellInput, ctx: ToolContext, decision: CallDecision = UNDECIDED) -> Killed:
        shells = shells_of(ctx.session)
        running = shells.get(inp.shell_id).running
        return Killed(shell=await asyncio.to_thread(shells.kill, inp.shell_id), stopped=running)

    def map_result(self, output: Killed, tool_use_id: str) -> ToolResultBlock:
        shell = output.shell
        if output.stopped:
            text = f"Stopped {shell.id} and its process group ({shell.state()})."
        else:
            text = f"{shell.id} was no longer running: it {shell.state()}. Nothing was stopped."
        return {"type": "tool_result", "tool_use_id": tool_use_id, "content": text}

    def summarize_use(self, inp: KillShellInput) -> str:
        return inp.shell_id

    def summarize_result(self, output: Killed) -> str:
        return "stopped" if output.stopped else "had already ended"
