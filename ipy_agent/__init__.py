"""ipy_agent: an LLM agent inside IPython and Jupyter, with a Claude Code style tool runtime.

`import ipy_agent` only defines things: no directories, no network, no heavy imports. The
Anthropic SDK is imported when the first request is made.
"""

from __future__ import annotations

from typing import Any

from ipy_agent.contract.build_tool import build_tool
from ipy_agent.contract.hooks import HookEvent, HookOutcome
from ipy_agent.contract.read_state import ReadState
from ipy_agent.contract.tool import PermissionCheck, PermissionPreview, RuleSubject, Tool, ToolError
from ipy_agent.contract.tool_context import SandboxLimits, ToolContext
from ipy_agent.loop.agent import Agent
from ipy_agent.models.base import ModelError, Usage
from ipy_agent.models.scripted import ScriptedModel
from ipy_agent.permissions.decide import PermissionAnswer, PermissionRequest
from ipy_agent.runtime.trace import RunResult

from .tools import builtin_tools

__all__ = [
    "Agent",
    "AnthropicModel",
    "HookEvent",
    "HookOutcome",
    "ModelError",
    "PermissionAnswer",
    "PermissionCheck",
    "PermissionPreview",
    "PermissionRequest",
    "ReadState",
    "RuleSubject",
    "RunResult",
    "SandboxLimits",
    "ScriptedModel",
    "Tool",
    "ToolContext",
    "ToolError",
    "Usage",
    "build_tool",
    "builtin_tools",
    "load_ipython_extension",
    "unload_ipython_extension",
]

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    # AnthropicModel's module imports nothing heavy itself, but keep the door shut anyway.
    if name == "AnthropicModel":
        from ipy_agent.models.anthropic import AnthropicModel

        return AnthropicModel
    raise AttributeError(f"module 'ipy_agent' has no attribute {name!r}")


def load_ipython_extension(ipython: Any) -> None:
    from .magics import load_ipython_extension as _load

    _load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    from .magics import unload_ipython_extension as _unload

    _unload(ipython)
