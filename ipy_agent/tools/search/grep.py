"""Grep: search file contents with ripgrep, paged and in a stable order.

The model's only sanctioned way to search contents: running `grep` or `rg` through Bash would
skip the Read(...) permission rules, print paths in whatever order threads finish, and dump an
unbounded stream into the conversation. Here ripgrep (the binary from the `ripgrep` wheel; no
Python re-implementation) does the searching, in parallel; we only shape its output:

- files_with_matches (the default, cheapest for the context): newest files first, since those
  are what the person is working on;
- content and count: grouped per file in path order, so `offset` pages through a stable list
  even though ripgrep's threads finish in any order;
- `head_limit` (250 by default, 0 for all) and `offset` page the result, with a note when cut.

ripgrep's exit status 1 means "no match", not failure; status 2 with no output is a real error
(a bad regex, an unknown type) and its own message goes back to the model.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ipy_agent.contract.decision import UNDECIDED, CallDecision
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.history.blocks import ToolResultBlock

from .grep_results import GrepResult, OutputMode, group_content, page, parse_counts, path_key, render_grep, strip_dot
from .ripgrep import (
    DenyFilter,
    SearchTool,
    deny_globs,
    display_prefix,
    exclusion_args,
    list_denied,
    newest_first,
    plural,
    run_rg,
    vcs_globs,
)

__all__ = ["DEFAULT_HEAD_LIMIT", "MAX_LINE_COLUMNS", "GrepInput", "GrepTool"]

DEFAULT_HEAD_LIMIT = 250
# Longer lines (minified JS, data files) are shown shortened: one can fill a whole budget.
MAX_LINE_COLUMNS = 500
_REGEX_HINT = (
    "ripgrep uses Rust regex syntax: escape literal ( ) [ ] { } . * + ? | with a backslash, "
    "and there is no look-around or backreference."
)

_DESCRIPTION = f"""\
Search the contents of files with a regular expression (powered by ripgrep).

Use this tool for every content search. Do not run `grep`, `rg`, `ack` or `git grep` through \
Bash: this tool returns structured results (paths relative to the working directory, in a stable \
order), it is checked against the same permission rules as Read for the path it searches (paths \
outside the working directories ask first), and its output is paged so a broad search cannot \
flood the conversation.
Use Glob instead to find files by name or path pattern, and Read to look at a file once you know \
which one (with offset and limit for a part of a large file).

Pattern syntax is ripgrep's (Rust regex), not GNU grep's:
- \\d, \\w, \\s, (a|b), a+ and a{{2,3}} work without escaping.
- Escape literal braces, parentheses, brackets and dots: `interface\\{{\\}}` finds `interface{{}}`, \
`print\\(` finds `print(`, `a\\.b` finds `a.b`.
- There is no look-around and no backreference.
- A match stays within one line. Set multiline: true to let a pattern span lines (`.` then also \
matches a newline), e.g. `class Foo.*?def bar`.

Filters: `path` (a file or a directory; default the working directory), `glob` ("*.py", \
"*.{{ts,tsx}}", "!*.min.js"; several separated by spaces; patterns with "/" are relative to \
`path`), `type` (ripgrep file types such as py, js, rust, md). Hidden files are searched; .git, \
.hg and .svn folders are skipped; inside a git repository, files ignored by .gitignore are \
skipped unless `path` points inside the ignored folder. Files that a Read deny rule covers are left \
out of the results; the result then says how many were hidden and by which rules (ask the person \
if you need one of them).

output_mode:
- "files_with_matches" (default): the paths of matching files, most recently modified first. \
Start here: it is the cheapest way to see where something is.
- "content": the matching lines as path:line:text. Line numbers are on by default ("-n": false \
turns them off); "-A", "-B" and "-C" add lines of context after, before or around each match. \
These four apply only to content mode. Lines longer than {MAX_LINE_COLUMNS} characters are \
shortened.
- "count": the number of matches in each file, and the total.
"-i": true ignores case. Content and count results are grouped by file in path order.

Result size: head_limit (default {DEFAULT_HEAD_LIMIT}) caps how many files, lines or count \
entries come back, and offset skips that many first. The default keeps one broad search from \
filling the context. When results are cut, the result says so and how many more there are; the \
best next step is usually to narrow the search (a more specific pattern, a deeper path, a glob or \
type) rather than to read everything. To page, repeat the call with a larger offset. head_limit: \
0 returns every result: use it only when you need all of them and expect few. Whatever the \
limit, a result over 20,000 characters is saved to a file and you receive a preview and its path.
"""


class GrepInput(BaseModel):
    # The dash names ("-i", "-A") are what the model sends and sees in the schema; the Python
    # names are for people building inputs in code.
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    pattern: str = Field(description="Regular expression to search for (ripgrep / Rust syntax).")
    path: str | None = Field(
        default=None,
        description="File or directory to search (absolute, or relative to the working directory). "
        "Omit it to search the working directory.",
    )
    glob: str | None = Field(
        default=None,
        description='Only search files whose path matches, e.g. "*.py", "*.{ts,tsx}", "!*.min.js"; '
        "several separated by spaces. Patterns with '/' are relative to `path`.",
    )
    type: str | None = Field(
        default=None,
        description='ripgrep file type to search, e.g. "py", "js", "rust", "md". Faster than glob for standard types.',
    )
    output_mode: OutputMode = Field(
        default="files_with_matches",
        description='"files_with_matches" (default): paths of matching files, newest first. '
        '"content": matching lines (path:line:text). "count": number of matches per file.',
    )
    case_insensitive: bool = Field(default=False, alias="-i", description="Ignore case.")
    line_numbers: bool = Field(
        default=True, alias="-n", description="Show line numbers (content mode only; default true)."
    )
    after_context: int | None = Field(
        default=None, alias="-A", ge=0, description="Lines to show after each match (content mode only)."
    )
    before_context: int | None = Field(
        default=None, alias="-B", ge=0, description="Lines to show before each match (content mode only)."
    )
    context: int | None = Field(
        default=None, alias="-C", ge=0, description="Lines to show before and after each match (content mode only)."
    )
    multiline: bool = Field(
        default=False,
        description="Let the pattern span lines; '.' then also matches a newline. Default false.",
    )
    head_limit: int = Field(
        default=DEFAULT_HEAD_LIMIT,
        ge=0,
        description=f"Return at most this many files, lines or count entries (default "
        f"{DEFAULT_HEAD_LIMIT}). 0 means no limit: use it only when you need every result.",
    )
    offset: int = Field(default=0, ge=0, description="Skip this many results first, to page on. Default 0.")


class GrepTool(SearchTool[GrepInput, GrepResult]):
    name = "Grep"
    input_model = GrepInput
    max_result_chars = 20_000

    def description(self, ctx: ToolContext) -> str:
        return _DESCRIPTION

    def search_root(self, inp: GrepInput, ctx: ToolContext) -> Path:
        return ctx.resolve(inp.path) if inp.path else ctx.cwd

    async def validate_input(self, inp: GrepInput, ctx: ToolContext) -> str | None:
        if not inp.pattern:
            return "The pattern is empty. To list files by name, use Glob; otherwise give a regex."
        return self.missing_path_message(self.search_root(inp, ctx), ctx)

    async def call(self, inp: GrepInput, ctx: ToolContext, decision: CallDecision = UNDECIDED) -> GrepResult:
        root = self.search_root(inp, ctx)
        # ripgrep runs inside the searched directory so that `glob` patterns with '/' are
        # relative to it; a single file is searched from its parent.
        is_dir = await asyncio.to_thread(root.is_dir)
        workdir, target = (root, ".") if is_dir else (root.parent, root.name)
        # Files a Read deny rule covers are kept out: ripgrep skips (never opens) what its globs
        # can say, `hidden` drops the rest. The model is told how many files of the tree it
        # cannot see, counted from a listing, not from matches: a count of denied files that
        # match would tell it what they contain. (Rules ripgrep cannot express, `//abs` or `~/`
        # ones, are counted by the post-filter alone, so only where they matched.)
        denied = deny_globs(ctx, workdir) if is_dir else []
        hidden = DenyFilter(ctx, workdir)
        run, listed = await asyncio.gather(
            run_rg([*_rg_args(inp), *exclusion_args(denied), "--", target], cwd=workdir),
            list_denied(ctx, workdir, denied, ["--hidden"]),
        )
        if run.code not in (0, 1) and not run.stdout:
            hint = _REGEX_HINT if "regex parse error" in run.stderr else ""
            raise self.rg_failure(run, f"Grep for {inp.pattern!r}", hint)
        text = run.stdout.decode("utf-8", "replace")
        prefix = display_prefix(workdir, ctx)
        common: dict[str, Any] = dict(
            pattern=inp.pattern,
            searched=ctx.display_path(root),
            offset=inp.offset,
            head_limit=inp.head_limit,
            warnings=run.stderr if run.code == 2 else "",
            output_cut=run.cut,
        )
        if inp.output_mode == "files_with_matches":
            files = [strip_dot(p) for p in text.split("\0") if p]
            files = await asyncio.to_thread(lambda: newest_first([f for f in files if hidden.keep(f)], workdir))
            hidden.add(listed)
            return page(
                mode="files_with_matches",
                items=[prefix + f for f in files],
                num_files=len(files),
                hidden_note=hidden.note(),
                **common,
            )
        if inp.output_mode == "count":
            counts = [pc for pc in parse_counts(text) if hidden.keep(pc[0])]
            hidden.add(listed)
            common["hidden_note"] = hidden.note()
            counts.sort(key=lambda pc: path_key(pc[0]))
            items = [f"{prefix}{path}:{n}" for path, n in counts]
            total = sum(n for _, n in counts)
            return page(mode="count", items=items, num_files=len(counts), num_matches=total, **common)
        lines, num_files = group_content(text, prefix, inp.line_numbers, _has_context(inp), hidden.keep)
        hidden.add(listed)
        return page(mode="content", items=lines, num_files=num_files, hidden_note=hidden.note(), **common)

    def map_result(self, output: GrepResult, tool_use_id: str) -> ToolResultBlock:
        return {"type": "tool_result", "tool_use_id": tool_use_id, "content": render_grep(output)}

    def summarize_use(self, inp: GrepInput) -> str:
        where = f" in {inp.path}" if inp.path else ""
        filters = "".join(f" ({v})" for v in (inp.glob, inp.type) if v)
        return f'"{inp.pattern}"{where}{filters}'

    def summarize_result(self, output: GrepResult) -> str:
        if not output.total:
            return "No matches found"
        shown = f" (showing {output.shown})" if output.paginated else ""
        match output.mode:
            case "files_with_matches":
                return f"Found {plural(output.num_files, 'file')}{shown}"
            case "content":
                return f"Found {plural(output.total, 'line')}{shown}"
            case "count":
                return f"{plural(output.num_matches, 'match', 'matches')} in {plural(output.num_files, 'file')}"


def _rg_args(inp: GrepInput) -> list[str]:
    args = ["--hidden", "--color=never", "--no-heading"]
    match inp.output_mode:
        case "files_with_matches":
            args += ["--files-with-matches", "--null"]
        case "count":
            args += ["--count-matches", "--null", "--with-filename"]
        case "content":
            args += ["--with-filename", "--line-number" if inp.line_numbers else "--no-line-number"]
            args += [f"--max-columns={MAX_LINE_COLUMNS}", "--max-columns-preview"]
            # MARK (\x1e, see grep_results) ends the path and the line number fields.
            args += ["--field-match-separator", r"\x1e:", "--field-context-separator", r"\x1e-"]
            for flag, value in (("-C", inp.context), ("-B", inp.before_context), ("-A", inp.after_context)):
                if value is not None:
                    args += [flag, str(value)]
    if inp.case_insensitive:
        args.append("--ignore-case")
    if inp.multiline:
        args += ["--multiline", "--multiline-dotall"]
    if inp.type:
        args += ["--type", inp.type]
    for pattern in split_globs(inp.glob or ""):
        args += ["--glob", pattern]
    # -e keeps a pattern that starts with '-' from being read as a flag.
    return [*args, *vcs_globs(), "--regexp", inp.pattern]


def split_globs(text: str) -> list[str]:
    """Split "*.py *.pyi" or "*.py,*.pyi" into patterns, keeping "*.{ts,tsx}" whole."""
    out: list[str] = []
    buf: list[str] = []
    depth = 0
    for ch in text:
        depth += (ch == "{") - (ch == "}")
        if depth <= 0 and (ch.isspace() or ch == ","):
            if buf:
                out.append("".join(buf))
                buf = []
            continue
        buf.append(ch)
    if buf:
        out.append("".join(buf))
    return out


def _has_context(inp: GrepInput) -> bool:
    return any(v for v in (inp.context, inp.before_context, inp.after_context))
