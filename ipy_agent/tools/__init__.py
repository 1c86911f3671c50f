"""The built-in tools, one module each, with the prompt text beside the code."""

from __future__ import annotations

from ipy_agent.contract.tool import Tool

__all__ = ["builtin_tools"]


def builtin_tools() -> list[Tool]:
    """Fresh instances of every built-in tool (instances keep no state between agents)."""
    from .bash import BashTool
    from .edit import EditTool
    from .glob_tool import GlobTool
    from .grep import GrepTool
    from .notebook_edit import NotebookEditTool
    from .notebook_read import NotebookReadTool
    from .notebook_run import NotebookRunTool
    from .read import ReadTool
    from .variables import VariablesTool
    from .write import WriteTool

    return [ReadTool(), EditTool(), WriteTool(), GlobTool(), GrepTool(), BashTool(), NotebookEditTool(),
            NotebookReadTool(), NotebookRunTool(), VariablesTool()]
