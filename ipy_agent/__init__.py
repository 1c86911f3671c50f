"""ipy_agent: an LLM agent inside IPython and Jupyter, with a Claude Code style tool runtime.

`import ipy_agent` only defines things: no directories, no network, no heavy imports. The
model SDKs (anthropic, openai) are imported when the first request is made.
"""

from __future__ import annotations

from typing import Any

from ipy_agent.base import imports as _imports

# First of all: what the agent imports from here on comes from where it is installed, not from
# a module of the same name in the project (base/imports.py).
_imports.install()

from ipy_agent.config.agent_config import AgentConfig  # noqa: E402
from ipy_agent.contract.build_tool import build_tool  # noqa: E402
from ipy_agent.contract.hooks import HookEvent, HookOutcome  # noqa: E402
from ipy_agent.contract.read_state import ReadState  # noqa: E402
from ipy_agent.contract.tool import PermissionCheck, PermissionPreview, RuleSubject, Tool, ToolError  # noqa: E402
from ipy_agent.contract.tool_context import SandboxLimits, ToolContext  # noqa: E402
from ipy_agent.loop.agent import Agent  # noqa: E402
from ipy_agent.loop.rewind_report import RewindReport  # noqa: E402
from ipy_agent.models.base import ModelError, Usage  # noqa: E402
from ipy_agent.models.recording import RecordingModel, lesson_model  # noqa: E402
from ipy_agent.models.scripted import ScriptedModel  # noqa: E402
from ipy_agent.permissions.decide import PermissionAnswer, PermissionRequest  # noqa: E402
from ipy_agent.runtime.trace import RunResult  # noqa: E402

from .tools import builtin_tools  # noqa: E402

__all__ = [
    "Agent",
    "AgentConfig",
    "AnthropicModel",
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


def __getattr__(name: str) -> Any:
    # The model modules import their SDKs only on the first request, but keep the door shut anyway.
    if name == "AnthropicModel":
        from ipy_agent.models.anthropic import AnthropicModel

        return AnthropicModel
    if name == "OpenAIModel":
        from ipy_agent.models.openai import OpenAIModel

        return OpenAIModel
    raise AttributeError(f"module 'ipy_agent' has no attribute {name!r}")


def load_ipython_extension(ipython: Any) -> None:
    from .magics import load_ipython_extension as _load

    _load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    from .magics import unload_ipython_extension as _unload

    _unload(ipython)
