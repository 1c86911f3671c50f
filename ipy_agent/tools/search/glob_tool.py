"""Glob: find files by name or path pattern, newest first.

The model's way to answer "which files are there?" without `find` or `ls -R` in Bash: the
answer is a bounded list (100 paths, the most recently modified first, because those are the
files the person is working on), relative to the working directory, under the same Read(...)
permission rules as reading. ripgrep's `--files` walks the tree (fast on big trees, VCS folders
skipped) and sorts by modification time itself (`--sortr=modified`, newest first): a file
listing walks single-threaded about as fast as in parallel, and we stat nothing in Python.
"""

from __future__ import annotations

import asyncio
import glob as _glob
import os
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from ipy_agent.contract.decision import UNDECIDED, CallDecision
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.history.blocks import ToolResultBlock

from .ripgrep import DenyFilter, SearchTool, display_prefix, plural, run_rg, vcs_globs

__all__ = ["MAX_GLOB_FILES", "GlobInput", "GlobResult", "GlobTool"]

MAX_GLOB_FILES = 100


class GlobInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    pattern: str = Field(
        description='Glob to match file paths against, e.g. "**/*.py", "src/**/test_*.py", "*.{json,yaml}".',
    )
    path: str | None = Field(
        default=None,
        description=(
            "Directory to search in (absolute, or relative to the working directory). Omit it to "
            'search the working directory; do not pass null or "undefined".'
        ),
    )


@dataclass(frozen=True, kw_only=True)
class GlobResult:
    files: list[str]  # at most MAX_GLOB_FILES, newest first, as the person reads them
    total: int  # matches before the cap
    pattern: str
    searched: str  # the directory, as displayed
    output_cut: bool = False  # ripgrep produced more than we keep; the order is partial
    hidden_note: str = ""  # how many files Read deny rules hid, and which rules; "" when none

    @property
    def truncated(self) -> bool:
        return self.total > len(self.files)


_DESCRIPTION = """\
Find files by name or path pattern. Returns matching file paths relative to the working \
directory, most recently modified first, at most 100 of them.

Use this tool, not `find`, `ls -R` or `ls` with wildcards in Bash, whenever you look for files \
by name: the result is a clean list in a predictable order, it is checked against the same \
permission rules as Read (paths outside the working directories ask first), and it is bounded \
so a broad pattern cannot flood the conversation.
Use Grep instead to search inside files for text or a regular expression (Grep also lists the \
files that contain a match), and Read to open a file once you know its path.

Pattern syntax (gitignore-style globs):
- A pattern without "/" matches file names at any depth: "*.py" finds every Python file, \
"conftest.py" every conftest.
- A pattern with "/" is matched from the search directory: "src/*.py" only directly in src, \
"src/**/*.py" at any depth below it.
- "**" spans folders, "*" and "?" stay within one name, "{a,b}" gives alternatives, "[abc]" a \
character class.
Hidden files are included; .git, .hg and .svn folders are skipped; .gitignore is not applied, \
so build outputs and virtual environments appear too: use a more specific pattern or path. \
Files that a Read deny rule covers are left out, and the result says how many and by which rules.

When more than 100 files match, the result says how many there were and shows the newest 100: \
narrow the pattern or search a deeper path. When nothing matches, it says so.
"""


class GlobTool(SearchTool[GlobInput, GlobResult]):
    name = "Glob"
    input_model = GlobInput
    max_result_chars = 100_000

    def description(self, ctx: ToolContext) -> str:
        return _DESCRIPTION

    def search_root(self, inp: GlobInput, ctx: ToolContext) -> Path:
        base, _ = self._split(inp, ctx)
        return base

    def _split(self, inp: GlobInput, ctx: ToolContext) -> tuple[Path, str]:
        """(directory to walk, pattern relative to it). An absolute pattern carries its own
        directory: "/repo/src/**/*.py" walks /repo/src for "**/*.py"."""
        pattern = os.path.expanduser(inp.pattern.strip())
        root = ctx.resolve(inp.path) if inp.path else ctx.cwd
        if os.path.isabs(pattern):
            parts = Path(pattern).parts
            fixed = 0
            while fixed < len(parts) - 1 and not _glob.has_magic(parts[fixed]):
                fixed += 1
            # Leading "/" anchors the rest at that directory, as the absolute pattern meant.
            return ctx.resolve(Path(*parts[:fixed])), "/" + "/".join(parts[fixed:])
        while pattern.startswith("./"):
            pattern = pattern[2:]
        return root, pattern

    async def validate_input(self, inp: GlobInput, ctx: ToolContext) -> str | None:
        if not inp.pattern.strip():
            return 'The pattern is empty. Give a glob such as "**/*.py".'
        root = self.search_root(inp, ctx)
        missing = self.missing_path_message(root, ctx)
        if missing:
            return missing
        if not root.is_dir():
            return (
                f"Path {str(root)!r} is a file, not a directory. Glob searches a directory; "
                "to look at this file, use Read."
            )
        return None

    async def call(self, inp: GlobInput, ctx: ToolContext, decision: CallDecision = UNDECIDED) -> GlobResult:
        root, pattern = self._split(inp, ctx)
        args = ["--files", "--hidden", "--no-ignore", "--sortr=modified", "--null", "--glob", pattern, *vcs_globs()]
        run = await run_rg(args, cwd=root)
        if run.code not in (0, 1) and not run.stdout:
            raise self.rg_failure(run, f"Glob {inp.pattern!r}")
        found = [p for p in run.stdout.decode("utf-8", "replace").split("\0") if p]
        # Files a Read deny rule covers are dropped here rather than by ripgrep globs: a listing
        # opens no file, and filtering afterwards gives the exact number of matching names hidden.
        hidden = DenyFilter(ctx, root)
        if ctx.read_deny:
            found = await asyncio.to_thread(lambda: [p for p in found if hidden.keep(p)])
        prefix = display_prefix(root, ctx)
        return GlobResult(
            files=[prefix + p for p in found[:MAX_GLOB_FILES]],
            total=len(found),
            pattern=inp.pattern,
            searched=ctx.display_path(root),
            output_cut=run.cut,
            hidden_note=hidden.note(),
        )

    def map_result(self, output: GlobResult, tool_use_id: str) -> ToolResultBlock:
        return {"type": "tool_result", "tool_use_id": tool_use_id, "content": render_glob(output)}

    def summarize_use(self, inp: GlobInput) -> str:
        return f"{inp.pattern}" + (f" in {inp.path}" if inp.path else "")

    def summarize_result(self, output: GlobResult) -> str:
        if not output.total:
            return "No files found"
        shown = f" (showing {len(output.files)})" if output.truncated else ""
        return f"Found {plural(output.total, 'file')}{shown}"


def render_glob(result: GlobResult) -> str:
    """What the model reads: the paths, and a plain sentence when there are none or too many."""
    hidden = f"\n\n{result.hidden_note}" if result.hidden_note else ""
    if not result.files:
        return f"No files found matching {result.pattern!r} in {result.searched!r}." + hidden
    text = "\n".join(result.files)
    if result.output_cut:
        text += (
            "\n\n(The search produced too many paths to keep and was stopped early, so this is "
            "not the full list and its order is partial. Narrow the pattern or the path.)"
        )
    elif result.truncated:
        text += (
            f"\n\n(Results are cut: showing the {len(result.files)} most recently modified of "
            f"{result.total:,} matching files. Narrow the search with a more specific pattern or "
            "a deeper path.)"
        )
    return text + hidden
