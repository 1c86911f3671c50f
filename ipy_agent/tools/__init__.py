"""The built-in tools, in plug-in families, each tool's prompt text beside its code.

- `shared/`: what the families share (protected paths, diffs, file IO, the edit plan);
- `files/`: Read, Edit, Write;
- `search/`: Glob, Grep (ripgrep);
- `notebook/`: NotebookRead, NotebookEdit, NotebookRun, NotebookVerify, Variables;
- `bash/`: Bash, its classifier and its sandbox; BashOutput and KillShell for background commands;
- `skills/`: Skill, and the skills it finds (with the built-in notebook skills);
- `ask/`: AskUserQuestion, questions for the person.

A family imports `shared/` and the layers below `tools/`, never another family.
"""

from __future__ import annotations

from ipy_agent.contract.tool import Tool

__all__ = ["builtin_tools"]


def builtin_tools() -> list[Tool]:
    """Fresh instances of every built-in tool (instances keep no state between agents)."""
    from .ask import AskUserQuestionTool
    from .bash import BashOutputTool, BashTool, KillShellTool
    from .files.edit import EditTool
    from .files.read import ReadTool
    from .files.write import WriteTool
    from .notebook.edit import NotebookEditTool
    from .notebook.read import NotebookReadTool
    from .notebook.run import NotebookRunTool
    from .notebook.todo_human import todo_human_tool
    from .notebook.variables import VariablesTool
    from .notebook.verify import NotebookVerifyTool
    from .search.glob_tool import GlobTool
    from .search.grep import GrepTool
    from .skills.tool import SkillTool

    return [
        ReadTool(),
        EditTool(),
        WriteTool(),
        GlobTool(),
        GrepTool(),
        BashTool(),
        BashOutputTool(),
        KillShellTool(),
        NotebookEditTool(),
        NotebookReadTool(),
        NotebookRunTool(),
        NotebookVerifyTool(),
        VariablesTool(),
        SkillTool(),
        AskUserQuestionTool(),
        todo_human_tool(),
    ]
