"""Variables: the kernel's user namespace, described without running the person's code.

The agent shares the kernel with the person, so "what is `df`?" has an exact answer here that
no file holds. Each variable is described from its type by rules for known types (see
`ipy_agent.notebook.variables`): a `__repr__` or `__len__` a class defines is never called, so
looking cannot print, hang or change anything. Offered wherever there is a kernel, with or
without the JupyterLab extension.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field

from ipy_agent.contract.decision import UNDECIDED, CallDecision
from ipy_agent.contract.tool import Tool, ToolError
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.history.blocks import ToolResultBlock

from .live import live_missing

__all__ = ["VariablesInput", "VariablesResult", "VariablesTool"]

DESCRIPTION = """\
List the variables in this kernel, the one the person's notebook runs in: each name, its type \
and a short summary (the shape, dtype and columns of DataFrames and numpy arrays, the length of \
lists, dicts and strings, the start of a string, a number's value).

- Use it to learn what data the person has loaded before writing code that uses it, instead of \
running a cell just to look (NotebookRun changes the kernel's state; this does not).
- It never runs code of the variables' classes (no repr), so objects of other classes show only \
their type. To see more of such a value, ask the person, or run code with NotebookRun.
- names: describe only these variables, in more detail for common data types (pandas and polars: \
each column's dtype, null count and numeric range; numpy: dtype, shape, min and max; xarray: dims \
and coords); omit for all (names starting with _ and modules are \
left out unless named). Use Bash for the shell, Read for files.
"""


class VariablesInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    names: list[str] | None = Field(default=None, description="Only these variables; omit for all.")


@dataclass(frozen=True, kw_only=True)
class VariablesResult:
    rows: list[tuple[str, str, str]]
    missing: list[str]
    details: dict[str, str] = field(default_factory=dict)


class VariablesTool(Tool[VariablesInput, VariablesResult]):
    name = "Variables"
    input_model = VariablesInput
    kind = "read"
    max_result_chars = 40_000

    def description(self, ctx: ToolContext) -> str:
        return DESCRIPTION

    def disabled_reason(self, ctx: ToolContext) -> str:
        return live_missing(ctx)

    def _enabled(self, ctx: ToolContext) -> bool:
        return ctx.notebook is not None and getattr(ctx.notebook, "shell", None) is not None

    def _read_only(self, inp: VariablesInput) -> bool:
        return True

    def _concurrency_safe(self, inp: VariablesInput) -> bool:
        return True

    async def call(self, inp: VariablesInput, ctx: ToolContext, decision: CallDecision = UNDECIDED) -> VariablesResult:
        if ctx.notebook is None or getattr(ctx.notebook, "shell", None) is None:
            raise ToolError("There is no kernel here whose variables could be listed.")
        infos = ctx.notebook.variables(names=inp.names)
        found = {i.name for i in infos}
        return VariablesResult(
            rows=[(i.name, i.type, i.summary) for i in infos],
            missing=[n for n in inp.names or [] if n not in found],
            details={i.name: i.detail for i in infos if i.detail},
        )

    def map_result(self, output: VariablesResult, tool_use_id: str) -> ToolResultBlock:
        lines = []
        for name, type_, summary in output.rows:
            lines.append(f"{name}: {type_} = {summary}")
            if name in output.details:
                lines.extend("    " + line for line in output.details[name].splitlines())
        if not lines:
            lines.append("No variables defined yet." if not output.missing else "")
        if output.missing:
            lines.append(f"Not defined in the kernel: {', '.join(output.missing)}.")
        return {"type": "tool_result", "tool_use_id": tool_use_id, "content": "\n".join(x for x in lines if x)}

    def summarize_use(self, inp: VariablesInput) -> str:
        return ", ".join(inp.names) if inp.names else "all"

    def summarize_result(self, output: VariablesResult) -> str:
        n = len(output.rows)
        return f"{n} variable{'s' if n != 1 else ''}" + (
            f", {len(output.missing)} not defined" if output.missing else ""
        )
