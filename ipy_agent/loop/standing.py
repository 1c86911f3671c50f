"""What the system prompt carries after the base prompt, loaded once per prompt.

Two kinds of standing text follow our base prompt, each as its own section: the instructions the
person and the project keep (config/instructions.py: AGENTS.md, CLAUDE.md, the notebook's own),
and what an offered tool adds (`Tool.prompt_section`: the Skill tool's list of skills). Then come
the MCP servers' notes and the caller's `append_system_prompt`.

They are read at the start of each prompt (`Standing.refresh`), not at each turn: while a run
goes on, the system prompt, and with it the prompt cache's prefix, stays byte for byte the same,
even when the agent edits AGENTS.md itself. The next prompt picks the change up, and its request
says so once, in a note before the person's text, so the model knows its instructions moved. A
prompt that never reached the model (the API was down) is taken back with `undo`, so the note
is not lost with it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ipy_agent.config.instructions import Instructions, change_note, load_instructions
from ipy_agent.config.output_styles import OutputStyle, find_output_style, settings_output_style
from ipy_agent.contract.decision import PermissionMode
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.history.blocks import ContentBlock
from ipy_agent.mcp import McpManager
from ipy_agent.notebook.metadata import instructions_on_disk, notebook_file, read_instructions
from ipy_agent.runtime.registry import Exposure
from ipy_agent.runtime.trace import AgentEvent, NoticeEvent

from .system_prompt import build_system_prompt

if TYPE_CHECKING:
    from ipy_agent.notebook.bridge import NotebookBridge

__all__ = ["Standing", "StandingSource", "StandingText"]

Emit = Callable[[AgentEvent], None]


class StandingSource(Protocol):
    """What the system prompt is made from (an `Agent`)."""

    cwd: Path
    working_dirs: tuple[Path, ...]
    permission_mode: PermissionMode
    system_prompt: str | None  # given to the constructor: it replaces our base prompt
    append_system_prompt: str | None
    output_style: str | None  # a style's name (config/output_styles.py); None: the settings' key, else ours
    instructions: bool
    notebook: NotebookBridge | None
    notebook_path: str | None
    mcp: McpManager

    def exposure(self) -> Exposure: ...

    def tool_context(self, tool_use_id: str | None = None) -> ToolContext: ...


@dataclass(frozen=True, kw_only=True)
class StandingText:
    """The standing text of one prompt."""

    instructions: Instructions
    sections: dict[str, str]  # tool name -> its section, for the tools offered when it was read
    output_style: OutputStyle | None = None  # the style chosen when it was read (None: ours)

    def for_tools(self, names: Sequence[str]) -> list[str]:
        """The sections of the tools offered in this request, in their order."""
        return [self.sections[n] for n in names if n in self.sections]


class Standing:
    """One conversation's standing text: the current prompt's, and the one before it."""

    def __init__(self) -> None:
        self.current: StandingText | None = None  # None until the first prompt
        self._before: StandingText | None = None

    async def refresh(self, source: StandingSource, blocks: list[ContentBlock], emit: Emit) -> list[ContentBlock]:
        """Read everything afresh for a new prompt, whose content is `blocks`; returns them, after
        a note for the model when the instructions changed since the previous prompt (the person
        is told too)."""
        style = _style(source, emit)
        text = StandingText(instructions=await self.load(source), sections=_sections(source), output_style=style)
        self._before, self.current = self.current, text
        changed = text.instructions.changes(self._before.instructions) if self._before is not None else []
        if not changed:
            return blocks
        emit(NoticeEvent(text=f"The instructions changed: {'; '.join(changed)}.", level="info"))
        return [{"type": "text", "text": change_note(changed)}, *blocks]

    def undo(self) -> None:
        """The prompt just refreshed for never reached the model: the next one compares with the
        one before it."""
        if self._before is not None:
            self.current = self._before
            self._before = None

    def reset(self) -> None:
        """A new conversation: its first request carries no note."""
        self.current = self._before = None

    def system_prompt(self, source: StandingSource, names: Sequence[str]) -> str:
        """The system prompt of a request offering the tools `names`: the base prompt (ours, or
        the one given), then each section: the instructions, each offered tool's, the MCP
        servers' notes, the text appended."""
        text = self.text(source)
        sections = (
            text.instructions.prompt_text(),
            *text.for_tools(names),
            source.mcp.prompt_section(),
            source.append_system_prompt or "",
        )
        if source.system_prompt is not None:
            return "\n\n".join(s for s in (source.system_prompt, *sections) if s)
        return build_system_prompt(
            cwd=source.cwd,
            working_dirs=source.working_dirs,
            tool_names=names,
            permission_mode=source.permission_mode,
            notebook=source.notebook_path,
            sections=sections,
            output_style=text.output_style.text if text.output_style is not None else None,
        )

    def text(self, source: StandingSource) -> StandingText:
        """This prompt's text; before the first prompt, what it would be now (the notebook's
        instructions from the file, since the page can only be asked from inside a run)."""
        if self.current is not None:
            return self.current
        return StandingText(
            instructions=self.load_now(source), sections=_sections(source), output_style=_style(source, None)
        )

    async def load(self, source: StandingSource) -> Instructions:
        """The instructions as they are now, the open notebook's read from the page when one is
        connected (its unsaved edits count)."""
        if not source.instructions:
            return Instructions(enabled=False)
        file = notebook_file(source.notebook, source.notebook_path, source.cwd)
        return load_instructions(source.cwd, notebook=await read_instructions(source.notebook, file))

    def load_now(self, source: StandingSource) -> Instructions:
        """The instructions as they are now, the notebook's from the file on disk."""
        if not source.instructions:
            return Instructions(enabled=False)
        file = notebook_file(source.notebook, source.notebook_path, source.cwd)
        return load_instructions(source.cwd, notebook=instructions_on_disk(file) if file is not None else None)


def _style(source: StandingSource, emit: Emit | None) -> OutputStyle | None:
    """The output style in force: the agent's, else the settings files' `outputStyle`. One that
    is gone (its file deleted since it was chosen) is our own style, with a notice."""
    name = source.output_style or settings_output_style(source.cwd)
    if name is None:
        return None
    try:
        return find_output_style(name, source.cwd)
    except ValueError as e:
        if emit is not None:
            emit(NoticeEvent(text=f"{e}; this prompt uses the default style.", level="warning"))
        return None


def _sections(source: StandingSource) -> dict[str, str]:
    ctx = source.tool_context()
    out: dict[str, str] = {}
    for tool in source.exposure().offered:
        try:
            section = tool.prompt_section(ctx)
        except Exception:  # a section is the tool's courtesy; a broken one leaves it out
            continue
        if section.strip():
            out[tool.name] = section.strip()
    return out
