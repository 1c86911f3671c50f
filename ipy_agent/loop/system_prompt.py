"""The system prompt: the model's environment, and a guide to working here (docs/system-prompt.md).

Kept short and factual. Tool-specific advice lives in each tool's description, where it sits
next to the thing it is about; this text covers what no single tool can say: where the model
is, what the person sees, how permissions and read-before-edit work, and how to work in a
notebook (verify by running, keep outputs small).

The guide is a table of lines (`GUIDE`), each either advice or a rule. A rule states something
the runtime enforces, whatever the model does, and names it (`rule`): tests/loop/test_prompt_guide.py
maps every rule to the test that proves the runtime enforces it, so the prompt never promises
what the code does not do. A line that names tools says so (`tools`) and is left out of a request
that does not offer them all: the prompt never mentions a tool the model cannot call.
"""

from __future__ import annotations

import datetime as _dt
import platform
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ipy_agent.notebook.render import OUTPUT_BUDGET_CHARS

__all__ = ["GUIDE", "MODE_RULES", "Guideline", "build_system_prompt", "guide_text"]


@dataclass(frozen=True, kw_only=True)
class Guideline:
    """One line of the guide."""

    section: str  # the heading it is said under
    text: str
    tools: tuple[str, ...] = ()  # said only when every one of these is offered
    rule: str = ""  # "": advice. Otherwise a precondition the runtime enforces, by this name.
    style: bool = False  # the default style of replies: an output style replaces it


_WORK = "How to work"
_NOTEBOOK = "Notebook work"

GUIDE: tuple[Guideline, ...] = (
    Guideline(
        section=_WORK,
        text="Use the dedicated tools rather than shell equivalents where one exists: they give structured "
        "output, respect permissions and keep results within budget.",
    ),
    Guideline(
        section=_WORK,
        text="Before you edit a file (or notebook), read it. Edits are refused for anything you have not read, "
        "or that changed since you read it; read it again and retry.",
        rule="edit_before_read",
    ),
    Guideline(
        section=_WORK,
        text="Independent read-only calls can go in one message: they run in parallel. Calls that change "
        "things run one at a time, in order.",
        rule="read_only_calls_run_together",
    ),
    Guideline(section=_WORK, text="{mode}", rule="permission_mode"),
    Guideline(
        section=_WORK,
        text="When a call is denied, the person's reason (if any) is in the result. Respect it; do not retry "
        "the same call unchanged.",
        rule="denial_carries_the_reason",
    ),
    Guideline(
        section=_WORK,
        text="The person sees one short line per tool call, not the full result, so say in your reply what "
        "you found or changed.",
        rule="one_line_per_call",
    ),
    Guideline(
        section=_WORK,
        text="Large results are saved to a file and you get a preview with the path; read that file for the rest.",
        rule="large_results_spill",
    ),
    Guideline(section=_WORK, text="Be concise. When you are done, stop and summarise in a few sentences.", style=True),
    Guideline(
        section=_NOTEBOOK,
        text="Look before you run: Variables describes the person's variables (types, shapes, a DataFrame's "
        "columns) without running any of their code, so use it instead of running code just to look.",
        tools=("Variables",),
        rule="variables_run_no_code",
    ),
    Guideline(
        section=_NOTEBOOK,
        text="Verify by running: after you change a cell, run it with NotebookRun and read its output before "
        "you say it works. Then rerun only the later cells that use what it defines, not the whole notebook.",
        tools=("NotebookRun",),
    ),
    Guideline(
        section=_NOTEBOOK,
        text="NotebookRun runs code in the person's kernel, so what it defines or overwrites is theirs; the "
        "person is asked before each run unless they allowed it.",
        tools=("NotebookRun",),
        rule="notebook_run_asks",
    ),
    Guideline(
        section=_NOTEBOOK,
        text=f"Keep outputs small: what a cell run with NotebookRun outputs reaches you cut to about "
        f"{OUTPUT_BUDGET_CHARS:,} characters, and the person reads it too. Print summaries (a shape, a head, "
        "counts), never a whole table.",
        tools=("NotebookRun",),
        rule="cell_outputs_are_cut",
    ),
    Guideline(
        section=_NOTEBOOK,
        text="When your reply refers to a cell, cite it as [cell N], its position as NotebookRead numbers it "
        "(cell 4): the person's page turns it into a link to that cell.",
        tools=("NotebookRead",),
    ),
    Guideline(
        section=_NOTEBOOK,
        text="A cell the person changed after you read it cannot be edited: NotebookEdit refuses it; read it "
        "again and redo the change on what is there now.",
        tools=("NotebookEdit",),
        rule="stale_cells_refused",
    ),
)

# What the `{mode}` line says in each permission mode; every one is a rule the permission steps enforce.
MODE_RULES: dict[str, str] = {
    "default": "Calls that change files or run commands may need the person's approval; read-only calls "
    "inside the working directories run without asking.",
    "plan": "Permission mode is plan: tools that change anything are refused. Investigate with read-only "
    "tools and present a plan instead of making changes.",
    "acceptEdits": "Permission mode is acceptEdits: file edits inside the working directories run without "
    "asking; other actions may ask.",
    "bypassPermissions": "Permission mode is bypassPermissions: calls run without asking unless a deny rule "
    "forbids them. Be careful with destructive commands.",
}


def guide_text(tool_names: Sequence[str], permission_mode: str, output_style: str | None = None) -> str:
    """The guide's sections for a request offering `tool_names`, each under its heading; with
    `output_style` (config/output_styles.py), its text in place of the default style line, the
    rules untouched."""
    offered = set(tool_names)
    sections: dict[str, list[str]] = {}
    for line in GUIDE:
        if set(line.tools) <= offered and not (line.style and output_style is not None):
            text = line.text.format(mode=MODE_RULES.get(permission_mode, MODE_RULES["default"]))
            sections.setdefault(line.section, []).append(f"- {text}")
    guide = "\n\n".join(f"# {heading}\n" + "\n".join(lines) for heading, lines in sections.items())
    return guide if output_style is None else f"{guide}\n\n# Output style\n{output_style.strip()}"


def build_system_prompt(
    *,
    cwd: Path,
    working_dirs: Sequence[Path] = (),
    tool_names: Sequence[str] = (),
    permission_mode: str = "default",
    notebook: str | None = None,
    today: _dt.date | None = None,
    sections: Sequence[str] = (),
    output_style: str | None = None,
) -> str:
    """Our system prompt for this environment, then each non-empty `section` (the standing
    instructions, tools' sections, MCP servers' notes, text the caller appends) as its own block,
    so the stable part comes first. `output_style`: the chosen style's text (None: our own)."""
    base = _base_prompt(cwd, working_dirs, tool_names, notebook, today)
    guide = guide_text(tool_names, permission_mode, output_style)
    return "\n\n".join([base, guide, *(s for s in sections if s)])


def _base_prompt(
    cwd: Path,
    working_dirs: Sequence[Path],
    tool_names: Sequence[str],
    notebook: str | None,
    today: _dt.date | None,
) -> str:
    today = today or _dt.date.today()
    dirs = "".join(f"\n- Also allowed: {d}" for d in working_dirs)
    where = (
        f"You are running inside the Jupyter kernel of the notebook {notebook!r}; the person reads your replies in the output of the cell that started you."
        if notebook
        else "You are running inside an IPython session; the person reads your replies where they typed the prompt."
    )
    tools = ", ".join(tool_names) if tool_names else "none"
    return f"""You are an agent that helps a person with their project and notebook, working through tools.

# Environment
- Working directory: {cwd}{dirs}
- Host: {platform.node() or "unknown"} (the kernel's machine: files and commands are on it, which with a remote kernel is not the person's computer)
- Platform: {platform.system()} {platform.release()}, Python {platform.python_version()}
- Today's date: {today.isoformat()}
- {where}
- Tools available now: {tools}"""
