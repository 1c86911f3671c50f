"""Helpers shared by the Edit, Write and NotebookEdit tests: a context, a Read, one call."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ipy_agent.contract.read_state import ReadState
from ipy_agent.contract.tool import RuleSubject, Tool
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.tools.files.read import ReadTool
from ipy_agent.tools.shared import fileio as _fileio


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
    return Outcome(
        error=None, output=out, content=tool.map_result(out, "toolu_1")["content"], summary=tool.summarize_result(out)
    )


def leftovers(directory: Path) -> list[str]:
    """Temporary files an atomic write might leave behind."""
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


def assert_edit_contract(tool: Tool, inp: Any, ctx: ToolContext, *, path: Path, rule: str) -> None:
    """What all three editing tools promise the permission system."""
    assert tool.kind == "edit" and tool.rule_names == ("Edit",)
    assert not tool.is_read_only(inp) and not tool.is_concurrency_safe(inp)
    assert tool.rule_subject(inp, ctx) == RuleSubject(kind="path", value=str(path))
    assert tool.suggest_rule(inp, ctx) == rule


def fail_os(monkeypatch: Any, name: str) -> None:
    """Make the atomic writer's `os.<name>` fail as a full disk would."""

    def boom(*args: Any, **kwargs: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(_fileio.os, name, boom)


def tool_results(messages: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Every tool_result block of a conversation, by tool_use_id."""
    return {
        b["tool_use_id"]: b
        for m in messages
        if m["role"] == "user" and isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    }


def result_text(block: dict[str, Any]) -> str:
    c = block["content"]
    return c if isinstance(c, str) else "".join(b.get("text", "") for b in c)
