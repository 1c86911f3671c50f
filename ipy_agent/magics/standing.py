"""`%agent_instructions` and `%agent_skills`: what the agent is told once, for every request.

`%agent_instructions` lists the instructions the next request will carry (each file or notebook,
where it is, its size, whether it was cut), prints them as the model reads them (`--show`), and
shows or sets the open notebook's own (`--notebook`, written to the live notebook through the
bridge when a page is connected, else to the `.ipynb` on disk). Reading the live notebook is a
request to the page, so in a kernel the cell awaits this command (cell_runner.py), like `%agent`.
`%agent_skills` lists the skills with where each was found, the ones another of the same name
hides, and the malformed ones with their problem.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from IPython.core.error import UsageError

from ipy_agent.base.paths import folders_down_to, home_relative, personal_dir, repository_root
from ipy_agent.base.threads import run_to_end
from ipy_agent.config.instructions import INSTRUCTION_FILES, Instructions
from ipy_agent.context.tokens import text_tokens
from ipy_agent.notebook.metadata import notebook_file, write_instructions
from ipy_agent.tools.skills.catalog import SkillCatalog, discover_skills
from ipy_agent.tools.skills.tool import SkillTool

if TYPE_CHECKING:
    from ipy_agent.loop.agent import Agent

    from .session import AgentSession

__all__ = ["INSTRUCTIONS_USAGE", "instructions_command", "instructions_report", "skills_report"]

INSTRUCTIONS_USAGE = (
    "%agent_instructions [--show] | --notebook [TEXT | --clear]; "
    'e.g. `%agent_instructions --notebook "Use polars, not pandas."`'
)


async def instructions_command(session: AgentSession, line: str, cell: str | None = None, *, live: bool) -> str:
    """What `%agent_instructions LINE` (with `%%agent_instructions`, the cell body) prints.

    `live`: the cell awaits this, so the open notebook's page can be asked; otherwise the
    notebook is read from (and written to) its file on disk."""
    try:
        words = shlex.split(line)
    except ValueError as e:
        raise UsageError(f"%agent_instructions: {e}. Usage: {INSTRUCTIONS_USAGE}") from None
    agent = session.configured_agent()
    if words[:1] == ["--notebook"]:
        return await _notebook(agent, words[1:], cell, live=live)
    if cell is not None or words not in ([], ["--show"]):
        raise UsageError(f"%agent_instructions takes {INSTRUCTIONS_USAGE}, not {line!r}")
    loaded = await agent.standing.load(agent) if live else agent.standing.load_now(agent)
    if words == ["--show"]:
        return loaded.prompt_text() or "No instructions: the next request carries none."
    return instructions_report(agent, loaded)


async def _notebook(agent: Agent, words: list[str], cell: str | None, *, live: bool) -> str:
    bridge = agent.notebook if live else None
    file = notebook_file(agent.notebook, agent.notebook_path, agent.cwd)
    if cell is not None and words:
        raise UsageError("%%agent_instructions --notebook takes the instructions from the cell body alone")
    if not words and cell is None:
        loaded = await agent.standing.load(agent) if live else agent.standing.load_now(agent)
        block = next((b for b in loaded.blocks if b.kind == "notebook"), None)
        problem = next((p for p in loaded.problems if p.startswith("the notebook ")), "")
        if block is None:
            where = f" ({file})" if file else ""
            return problem or f"This notebook{where} has no instructions. Set them with {INSTRUCTIONS_USAGE}."
        return f"The notebook's instructions ({block.source}, {block.size:,} characters):\n\n{block.text}"
    text = "" if words == ["--clear"] else (cell if cell is not None else " ".join(words)).strip()
    if not text and words != ["--clear"]:
        raise UsageError("%agent_instructions --notebook needs the text, or --clear to remove them")
    try:
        if bridge is not None:
            return await write_instructions(bridge, file, text)
        return run_to_end(lambda: write_instructions(None, file, text), interrupt=lambda: None)
    except ValueError as e:
        raise UsageError(f"%agent_instructions --notebook: {e}") from None


def instructions_report(agent: Agent, loaded: Instructions) -> str:
    """The listing of `%agent_instructions`: each block in the order the model reads it."""
    lines: list[str] = []
    if not loaded.blocks:
        lines.append("No instructions: the next request carries none.")
    else:
        lines.append("Instructions the next request carries, in the order the model reads them:")
        wheres = [
            b.name if b.kind != "notebook" else f"{b.source} (metadata, {'live' if b.live else 'on disk'})"
            for b in loaded.blocks
        ]
        width = max(len(w) for w in wheres)
        for i, (b, where) in enumerate(zip(loaded.blocks, wheres), 1):
            size = f"{b.size:,} bytes, cut to {len(b.text):,} characters" if b.cut else f"{len(b.text):,} characters"
            lines.append(f"  {i}  {b.kind:<9} {where:<{width}}  {size}")
        total = sum(len(b.text) for b in loaded.blocks)
        tokens = text_tokens(loaded.prompt_text())
        lines.append(
            f"Together {total:,} characters (about {tokens:,} tokens with their labels), "
            "in the system prompt after the base prompt."
        )
    for problem in loaded.problems:
        lines.append(f"  not loaded: {problem}")
    before = agent.standing.current
    if before is not None and (changed := loaded.changes(before.instructions)):
        lines.append(f"Changed since the last request (the next one says so): {'; '.join(changed)}.")
    root = repository_root(agent.cwd)
    top = f"{root} (the repository's root)" if root else "/ (no repository)"
    names = " and ".join(INSTRUCTION_FILES)
    n = len(folders_down_to(agent.cwd))
    lines.append(
        f"Looked for {home_relative(personal_dir() / 'AGENTS.md')}, then {names} in {n} folder"
        f"{'s' if n != 1 else ''} from {top} down to {agent.cwd}, then the notebook's metadata "
        "(ipy_agent.instructions)."
    )
    lines.append("%agent_instructions --show prints them as the model reads them; %agent --no-instructions skips them.")
    return "\n".join(lines)


def skills_report(agent: Agent) -> str:
    """The listing of `%agent_skills`."""
    catalog: SkillCatalog = discover_skills(agent.cwd)
    offered = any(isinstance(t, SkillTool) for t in agent.exposure().offered)
    lines = [
        f"{len(catalog.skills)} skill{'s' if len(catalog.skills) != 1 else ''}"
        + ("" if offered else " (the Skill tool is not offered now, so the model sees none of them)")
        + ":"
    ]
    if catalog.skills:
        width = max(len(s.name) for s in catalog.skills)
        for skill in catalog.skills:
            about = skill.description if len(skill.description) <= 90 else skill.description[:89] + "…"
            lines.append(f"  {skill.name:<{width}}  {skill.where:<20}  {about}")
    for loser, winner in catalog.shadowed:
        lines.append(f"  hidden: {loser.name} from {loser.where} (the one from {winner.where} wins)")
    for problem in catalog.problems:
        lines.append(f"  malformed, not offered: {home_relative(problem.path)}: {problem.problem}")
    lines.append(
        f"Skills live in folders with a SKILL.md: {home_relative(personal_dir() / 'skills')}/, and the "
        "project's .ipy_agent/skills/ and .claude/skills/ (here and in the folders above, up to the "
        "repository's root); the built-in ones ship with ipy_agent."
    )
    return "\n".join(lines)
