"""Helpers shared by the Edit, Write and NotebookEdit tests: a context, a Read, one call."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ipy_agent.runtime.read_state import ReadState
from ipy_agent.runtime.tool import Tool, ToolContext
from ipy_agent.tools.read import ReadTool


def make_ctx(cwd: Path) -> ToolContext:
    return ToolContext(cwd=cwd, read_state=ReadState(), spill_dir=cwd.parent / f"{cwd.name}-spill")


async def read(ctx: ToolContext, path: str | Path) -> None:
    """What the model does before editing: a real Read, which records the read state."""
    tool = ReadTool()
    await tool.call(tool.input_model(file_path=str(path)), ctx)


@dataclass
class Outcome:
    error: str | None  # what validate_input told the model, if it refused
    output: Any = None
    content: Any = None  # the tool_result content the model receives
    summary: str = ""  # the line the person sees


async def run(tool: Tool, ctx: ToolContext, **fields: Any) -> Outcome:
    """validate_input, then call: the lifecycle's order, without permissions."""
    inp = tool.input_model(**fields)
    error = await tool.validate_input(inp, ctx)
    if error:
        return Outcome(error=error)
    out = await tool.call(inp, ctx)
    return Outcome(error=None, output=out, content=tool.map_result(out, "toolu_1")["content"],
                   summary=tool.summarize_result(out))


def leftovers(directory: Path) -> list[str]:
    """Temporary files an atomic write might leave behind."""
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))
