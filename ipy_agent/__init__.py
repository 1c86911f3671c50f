"""ipy_agent: an LLM agent inside IPython and Jupyter, with a Claude Code style tool runtime.

`import ipy_agent` only defines things: no directories, no network, no heavy imports. Each public
name below is imported when it is first used, and `%load_ext ipy_agent` imports only what the
magics need to be registered: the loop, the tools and the UI load with the first `%agent`, and the
model SDKs (anthropic, openai) when the first request is made.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ipy_agent.base import imports as _imports

# First of all: what the agent imports from here on comes from where it is installed, not from
# a module of the same name in the project (base/imports.py).
_imports.install()

if TYPE_CHECKING:
    from ipy_agent.config.agent_config import AgentConfig
    from ipy_agent.contract.build_tool import build_tool
    from ipy_agent.contract.decision import CallDecision
    from ipy_agent.contract.hooks import HookEvent, HookOutcome
    from ipy_agent.contract.read_state import ReadState
    from ipy_agent.contract.tool import PermissionCheck, PermissionPreview, RuleSubject, Tool, ToolError
    from ipy_agent.contract.tool_context import SandboxLimits, ToolContext
    from ipy_agent.loop.agent import Agent
    from ipy_agent.loop.rewind_report import RewindReport
    from ipy_agent.mcp.elicitation import ElicitationRequest
    from ipy_agent.models.anthropic import AnthropicModel
    from ipy_agent.models.base import ModelError, Usage
    from ipy_agent.models.openai import OpenAIModel
    from ipy_agent.models.recording import RecordingModel, lesson_model
    from ipy_agent.models.scripted import ScriptedModel
    from ipy_agent.permissions.decide import PermissionAnswer, PermissionRequest
    from ipy_agent.runtime.trace import RunResult
    from ipy_agent.tools import builtin_tools

__all__ = [
    "Agent",
    "AgentConfig",
    "AnthropicModel",
    "CallDecision",
    "ElicitationRequest",
    "HookEvent",
    "HookOutcome",
    "ModelError",
    "OpenAIModel",
    "PermissionAnswer",
    "PermissionCheck",
    "PermissionPreview",
    "PermissionRequest",
    "ReadState",
    "RecordingModel",
    "RewindReport",
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
    "lesson_model",
    "load_ipython_extension",
    "unload_ipython_extension",
]

__version__ = "0.1.0"


# Each public name and the module that defines it. The names are imported on first use, so that
# `import ipy_agent` and `%load_ext ipy_agent` do not pay for the loop, the tools and pydantic
# before the first `%agent` needs them (bench/startup.py measures it).
_EXPORTS = {
    "AgentConfig": "ipy_agent.config.agent_config",
    "Agent": "ipy_agent.loop.agent",
    "AnthropicModel": "ipy_agent.models.anthropic",
    "CallDecision": "ipy_agent.contract.decision",
    "ElicitationRequest": "ipy_agent.mcp.elicitation",
    "HookEvent": "ipy_agent.contract.hooks",
    "HookOutcome": "ipy_agent.contract.hooks",
    "ModelError": "ipy_agent.models.base",
    "OpenAIModel": "ipy_agent.models.openai",
    "PermissionAnswer": "ipy_agent.permissions.decide",
    "PermissionCheck": "ipy_agent.contract.tool",
    "PermissionPreview": "ipy_agent.contract.tool",
    "PermissionRequest": "ipy_agent.permissions.decide",
    "ReadState": "ipy_agent.contract.read_state",
    "RecordingModel": "ipy_agent.models.recording",
    "RewindReport": "ipy_agent.loop.rewind_report",
    "RuleSubject": "ipy_agent.contract.tool",
    "RunResult": "ipy_agent.runtime.trace",
    "SandboxLimits": "ipy_agent.contract.tool_context",
    "ScriptedModel": "ipy_agent.models.scripted",
    "Tool": "ipy_agent.contract.tool",
    "ToolContext": "ipy_agent.contract.tool_context",
    "ToolError": "ipy_agent.contract.tool",
    "Usage": "ipy_agent.models.base",
    "build_tool": "ipy_agent.contract.build_tool",
    "builtin_tools": "ipy_agent.tools",
    "lesson_model": "ipy_agent.models.recording",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ipy_agent' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


def load_ipython_extension(ipython: Any) -> None:
    from .magics import load_ipython_extension as _load

    _load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    from .magics import unload_ipython_extension as _unload

    _unload(ipython)
