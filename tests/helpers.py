"""Test helpers: small custom tools that record when they ran, built with the public API."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from pydantic import BaseModel, ConfigDict

from ipy_agent import build_tool


class Note(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str = ""
    sleep: float = 0.0
    fail: bool = False


class Recorder:
    """Records (name, text, start, end) for every call of the tools it builds."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, float, float]] = []

    def tool(self, name: str, *, read_only: Any = False, safe: Any = None, **kw: Any):
        async def call(inp: Note, ctx) -> str:
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


def use(name: str, tid: str, **inp: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": tid, "name": name, "input": inp}


def results_of(message: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {b["tool_use_id"]: b for b in message["content"] if b.get("type") == "tool_result"}


def write_tree(root, files: dict[str, str]):
    """Create `files` (relative path -> text) under `root`, making folders; returns `root`."""
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def tool_ctx(cwd, **kw):
    """A ToolContext as the agent builds it, for calling one tool directly; spills beside cwd."""
    from ipy_agent.contract.read_state import ReadState
    from ipy_agent.contract.tool_context import ToolContext

    kw.setdefault("spill_dir", cwd / "spill")
    return ToolContext(cwd=cwd, read_state=ReadState(), **kw)


async def call_direct(tool, ctx, **fields):
    """Run `tool` as the runtime would after parsing; returns (natural output, model-facing content)."""
    inp = tool.input_model(**fields)
    assert await tool.validate_input(inp, ctx) is None
    out = await tool.call(inp, ctx)
    return out, tool.map_result(out, "t1")["content"]
