"""An agent whose every part may fail: tools that raise or return nothing, a concurrency flag
that raises, approvers and hooks that fail in a chosen way. The property test of the history
(tests/history/) and the 1,000-seed sweep (tests/security/) drive it with random conversations."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ipy_agent import Agent, HookOutcome, PermissionAnswer, Tool, ToolError, build_tool


class Inp(BaseModel):
    n: int
    mode: str = "ok"


async def _call(inp: Inp, ctx: Any) -> str:
    if inp.mode == "sleep":
        await asyncio.sleep(0.02)
    if inp.mode == "toolerror":
        raise ToolError("expected failure")
    if inp.mode == "crash":
        raise RuntimeError("unexpected failure")
    if inp.mode == "empty":
        return ""
    return f"n={inp.n}"


def _tools() -> list[Tool]:
    return [
        build_tool(name="Safe", input_model=Inp, description="d", call=_call, is_read_only=True),
        build_tool(name="Unsafe", input_model=Inp, description="d", call=_call, cancels_siblings_on_error=True),
        build_tool(
            name="Flaky", input_model=Inp, description="d", call=_call, is_concurrency_safe=lambda i: 1 / (i.n % 2)
        ),  # raises for even n: fail closed
    ]


def faulty_agent(model: Any, cwd: Path, *, approval: str, hook_fault: str | None) -> Agent:
    """An agent over `_tools()` whose approver and hooks fail in the way named: `approval` is
    allow/always/deny/reason/raise, `hook_fault` None/raise/deny/stop/ask/post_raise."""

    def approver(req):
        match approval:
            case "raise":
                raise RuntimeError("approver broke")
            case "reason":
                return PermissionAnswer(behavior="deny", message="not now")
        return approval

    agent = Agent(model=model, tools=_tools(), cwd=cwd, approver=approver, max_turns=4)

    def pre(e):
        match hook_fault:
            case "raise":
                raise ValueError("hook bug")
            case "deny":
                return HookOutcome(decision="deny", reason="policy")
            case "stop":
                return HookOutcome(stop=True, reason="enough")
            case "ask":
                return HookOutcome(decision="ask")
        return None

    def post(e):
        if hook_fault == "post_raise":
            raise ValueError("post hook bug")

    agent.hooks.add("PreToolUse", pre, matcher="Safe|Flaky")
    agent.hooks.add("PostToolUse", post)
    return agent
