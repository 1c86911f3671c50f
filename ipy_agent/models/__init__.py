"""Models the agent loop can talk to: the Anthropic API and an offline scripted replay."""

from .base import BlockComplete, MessageComplete, Model, ModelError, ModelRequest, TextDelta, ThinkingDelta, Usage
from .scripted import ScriptedModel

__all__ = [
    "BlockComplete", "MessageComplete", "Model", "ModelError", "ModelRequest", "ScriptedModel",
    "TextDelta", "ThinkingDelta", "Usage",
]
