"""Tools for the tests, and one call of a tool the way the runtime makes it.

`tool_ctx` is a ToolContext as the agent builds it for one call (the `ctx` fixture is one in
tmp_path), carrying the decision the lifecycle would give that call's `call` (`ctx.decision`); `Recorder` builds small tools that record when they ran; `write_tree` lays out a
project; `run` validates and calls a tool and gives back what the model and the person get;
`read` is the Read the model does before an edit; the rest check what the editing tools promise.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from ipy_agent import build_tool
from ipy_agent.contract.decision import UNDECIDED, CallDecision, DecisionSource
from ipy_agent.contract.read_state import ReadState
from ipy_agent.contract.tool import RuleSubject, Tool
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.tools.files.read import ReadTool
from ipy_agent.tools.shared import fileio


@dataclass(frozen=True, kw_only=True)
class DecidedContext(ToolContext):
    """A call's context with the decision the permission stage would have made for it, which a
    test passes to `call` itself (`tool.call(inp, ctx, ctx.decision)`), as the lifecycle does."""

    decision: CallDecision = UNDECIDED


def tool_ctx(
    cwd: Path, *, decided_by: DecisionSource | None = None, answers: dict[str, str] | None = None, **fields: Any
) -> DecidedContext:
    """A ToolContext as the agent builds it for one call in `cwd`, any field overridden, and who
    let the call run (`decided_by`; None: nobody, as for a direct call). Results spill beside cwd
    (where a listing of cwd never shows them); `spill_dir=None` spills nowhere."""
    fields.setdefault("spill_dir", cwd.parent / f"{cwd.name}-spill")
    decision = CallDecision(source=decided_by, answers=answers)
    return DecidedContext(cwd=cwd, read_state=ReadState(), decision=decision, **fields)


def decision_of(ctx: ToolContext) -> CallDecision:
    """What the lifecycle would give `call` with `ctx` (a plain ToolContext: nothing decided)."""
    return ctx.decision if isinstance(ctx, DecidedContext) else UNDECIDED


class Note(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str = ""
    sleep: float = 0.0
    fail: bool = False


class Recorder:
    """Records (name, text, start, end) for every call of the tools it builds."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, float, float]] = []

    def tool(self, name: str, *, read_only: Any = False, safe: Any = None, **kw: Any) -> Tool:
        async def call(inp: Note, ctx: ToolContext) -> str:
            start = time.perf_counter()
            if inp.sleep:
                await asyncio.sleep(inp.sleep)
            end = time.perf_counter()
            self.calls.append((name, inp.text, start, end))
            if inp.fail:
                from ipy_agent import ToolError

                raise ToolError(f"{name} failed on purpose")
            return f"{name}:{inp.text}"

        return build_tool(
            name=name,
            input_model=Note,
            description=f"The {name} test tool.",
            call=call,
            is_read_only=read_only,
            is_concurrency_safe=read_only if safe is None else safe,
            **kw,
        )

    def window(self, text: str) -> tuple[float, float]:
        return next((s, e) for (_, t, s, e) in self.calls if t == text)


def write_tree(root: Path, files: dict[str, str]) -> Path:
    """Create `files` (relative path -> text) under `root`, making folders; returns `root`."""
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


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
    out = await tool.call(inp, ctx, decision_of(ctx))
    return Outcome(
        error=None, output=out, content=tool.map_result(out, "toolu_1")["content"], summary=tool.summarize_result(out)
    )


async def call_direct(tool: Tool, ctx: ToolContext, **fields: Any) -> tuple[Any, Any]:
    """`run` for a call that must pass validation: (natural output, model-facing content)."""
    outcome = await run(tool, ctx, **fields)
    assert outcome.error is None, f"{tool.name} refused {fields}: {outcome.error}"
    return outcome.output, outcome.content


async def read(ctx: ToolContext, path: str | Path) -> None:
    """What the model does before editing: a real Read, which records the read state."""
    tool = ReadTool()
    await tool.call(tool.input_model(file_path=str(path)), ctx, decision_of(ctx))


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

    monkeypatch.setattr(fileio.os, name, boom)
