"""Which tools the model is offered this turn: implemented is not exposed.

Start from the built-in and custom tools; remove those a deny rule names whole (`Bash`,
`Bash(*)`), those whose `is_enabled(ctx)` is false (the live-notebook tools without a front
end), and in simple mode the tools not `offered_in_simple_mode` (Bash, Read, Edit). Each removal keeps its reason, so
`%agent_tools` can say why a tool is hidden.

The tools are offered in the order each was first offered, not the order they were registered:
a tool that appears later (the live-notebook tools when a page connects, an MCP server's new
tool) comes after those already offered, so the prompt cache still reads the definitions before
it and writes only the new ones.
"""

from __future__ import annotations

from dataclasses import dataclass

from ipy_agent.contract.limits import SELF_LIMITING
from ipy_agent.contract.tool import Tool
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.permissions.rules import PermissionRules

__all__ = ["Exposure", "ToolRegistry"]


@dataclass(frozen=True, kw_only=True)
class Exposure:
    offered: tuple[Tool, ...]
    hidden: dict[str, str]  # tool name -> why

    @property
    def names(self) -> list[str]:
        return [t.name for t in self.offered]


class ToolRegistry:
    def __init__(self, tools: list[Tool]) -> None:
        seen: dict[str, Tool] = {}
        for tool in tools:
            if not isinstance(tool, Tool):
                raise TypeError(f"tools must be Tool instances (use build_tool), not {tool!r}")
            if tool.name in seen:
                raise ValueError(f"two tools are named {tool.name!r}; tool names must be unique")
            seen[tool.name] = tool
        self._tools = seen
        self._groups: dict[str, list[str]] = {}
        self._first_offered: dict[str, int] = {}  # tool name -> when it was first offered
        self.result_limit_override: int | None = None
        self.offered_only: tuple[str, ...] | None = None  # a slash command's allowed-tools, for its run

    def result_limit(self, tool: Tool) -> int:
        """The result size limit in force for `tool`: its own, or the override when one is set.

        Self-limiting tools (Read) keep theirs: spilling a Read only sends the model to Read again."""
        own = tool.max_result_chars
        if self.result_limit_override is None or own >= SELF_LIMITING:
            return own
        return self.result_limit_override

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def all(self) -> list[Tool]:
        return list(self._tools.values())

    def add(self, tool: Tool) -> None:
        if tool.name in self._tools:
            raise ValueError(f"a tool named {tool.name!r} is already registered")
        self._tools[tool.name] = tool

    def set_group(self, group: str, tools: list[Tool]) -> dict[str, str]:
        """Replace the tools added under `group` (an MCP manager's, whose list changes between
        requests). A tool whose name is already taken by another is left out; returns those,
        each with why."""
        for name in self._groups.pop(group, []):
            self._tools.pop(name, None)
        kept: list[str] = []
        clashes: dict[str, str] = {}
        for tool in tools:
            if tool.name in self._tools:
                clashes[tool.name] = "a tool with this name is already registered"
                continue
            self._tools[tool.name] = tool
            kept.append(tool.name)
        self._groups[group] = kept
        return clashes

    def exposed(self, ctx: ToolContext, rules: PermissionRules, *, simple: bool = False) -> Exposure:
        offered: list[Tool] = []
        hidden: dict[str, str] = {}
        for tool in self._tools.values():
            if (rule := rules.denies_whole(tool)) is not None:
                hidden[tool.name] = f"denied by rule {rule.text!r} ({rule.source})"
            elif self.offered_only is not None and tool.name not in self.offered_only:
                hidden[tool.name] = "the slash command's allowed-tools leave it out"
            elif simple and not tool.offered_in_simple_mode:
                hidden[tool.name] = "simple mode offers only the everyday few (offered_in_simple_mode)"
            elif not tool.is_enabled(ctx):
                hidden[tool.name] = tool.disabled_reason(ctx)
            else:
                offered.append(tool)
                self._first_offered.setdefault(tool.name, len(self._first_offered))
        offered.sort(key=lambda t: self._first_offered[t.name])
        return Exposure(offered=tuple(offered), hidden=hidden)
