"""The Read tool: a file as numbered lines, an image as an image block, a notebook as cells.

Read is how the agent looks at files, and what it records here is what Edit, Write and
NotebookEdit later check (edit-before-read, by content hash). It must never hurt the session
it serves, so everything dangerous is decided from `os.stat` before the file is opened: a FIFO
would block `open()` forever, a device may never end, a directory is not a file. Text is
streamed in binary with a fixed-size buffer, so a range near the end of a 1 GB log costs a
scan, not 1 GB of memory. Output is bounded by a size check before reading (whole-file reads)
and a token estimate after (every read), and both errors say how to read less.

A notebook is read as cells, in pages of cells. The file is parsed as JSON, not with
`nbformat.reads` (which invents ids for cells that have none and renames duplicates, so the ids
shown would not be the ones NotebookEdit finds); only a notebook older than format 4 goes
through nbformat, to be converted for display. The line reading itself, for text of any size,
is read_text.py's.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ipy_agent.base.images import IMAGE_SUFFIXES, image_dimensions, image_problem, sniff_image
from ipy_agent.base.threads import run_blocking
from ipy_agent.contract.decision import UNDECIDED, CallDecision
from ipy_agent.contract.limits import SELF_LIMITING
from ipy_agent.contract.read_state import ReadState, file_key, file_stamp
from ipy_agent.contract.tool import PermissionCheck, RuleSubject, Tool, ToolError
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.history.blocks import ResultPart, ToolResultBlock, image_block
from ipy_agent.notebook.render import render_notebook

from .read_text import (
    MAX_LINE_CHARS,
    MAX_OUTPUT_TOKENS,
    MAX_UNRANGED_BYTES,
    TextRead,
    binary_kind,
    estimate_tokens,
    quarter_tokens,
    read_text,
)

__all__ = ["ReadInput", "ReadOutput", "ReadTool"]

DEFAULT_LIMIT = 2000
MAX_IMAGE_FILE_BYTES = 64 * 1024 * 1024  # never load more than this to find out it is too big
MAX_NOTEBOOK_BYTES = 100 * 1024 * 1024


class ReadInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    file_path: str = Field(
        description="Path of the file to read; absolute is best, relative paths resolve against the working directory."
    )
    offset: int | None = Field(
        default=None,
        ge=0,
        description="Line number to start at (1-based; 0 also means the start). For a notebook: the cell to start at, counted from 1 (offset=1 is cell-0). Omit to read from the start.",
    )
    limit: int | None = Field(
        default=None,
        ge=1,
        description=f"How many lines to read (default {DEFAULT_LIMIT}). For a notebook: how many cells. Omit unless the file is too large to read whole.",
    )


@dataclass(frozen=True, kw_only=True)
class ReadOutput:
    """What one Read produced: `content` is what the model reads, the rest feeds the summary."""

    kind: Literal["text", "empty", "image", "notebook"]
    path: str
    content: str | list[ResultPart]
    first_line: int = 0
    lines: int = 0
    total_lines: int | None = None
    cells: int = 0
    total_cells: int = 0
    nbytes: int = 0


_DESCRIPTION = f"""\
Read a file from the local filesystem: text files as numbered lines, images as images, Jupyter notebooks as cells.

When to use it:
- To look at a file's contents, use Read rather than `cat`, `head`, `tail` or `sed -n` in Bash. Read numbers the lines, records what you read so that Edit and Write can check the file has not changed since, keeps the output within budget, and asks the person before reading outside the working directories.
- To find which files contain some text, use Grep, and to find files by name, use Glob; then Read the ones that matter. To list a directory, use Glob or `ls` in Bash: Read refuses directories.

How it reads:
- `file_path` should be an absolute path; a relative path resolves against the working directory.
- Text comes back as lines in the form `<line number><TAB><text>`, starting at 1. The number and the tab are not part of the file: never copy them into an edit. Lines longer than {MAX_LINE_CHARS:,} characters are cut, with a marker.
- By default it reads up to {DEFAULT_LIMIT:,} lines from the start. Give `offset` (1-based line) and `limit` only when you need part of a file: a whole-file read of a file over {MAX_UNRANGED_BYTES // 1024} KB, or any read whose output would exceed about {MAX_OUTPUT_TOKENS:,} tokens, fails with an error instead; then read a range (the error suggests one), or Grep for the part you need first and Read around it.
- Images (PNG, JPEG, GIF, WebP) come back as images you can see, up to the API's limits (about 5 MB of base64, 8000 pixels per side).
- Jupyter notebooks (.ipynb) come back as cells: each cell's id, type and source, then its outputs (text, errors, images), with long outputs cut. For notebooks, `offset` and `limit` count cells instead of lines (offset from 1, so offset=3 starts at cell-2). A cell without an id in the file is labelled cell-N (its 0-based index).
- Directories, devices and pipes are refused without being opened; binary files are refused with a note on what they are.
- You can Read several files at once by making several Read calls in one message; do that when you know you need them.
"""


class ReadTool(Tool[ReadInput, ReadOutput]):
    name = "Read"
    input_model = ReadInput
    # Read limits itself (size and token checks); a spill would hide the text the model asked for.
    max_result_chars = SELF_LIMITING
    rule_names = ("Read",)
    kind = "read"
    offered_in_simple_mode = True

    def description(self, ctx: ToolContext) -> str:
        return _DESCRIPTION

    def _read_only(self, inp: ReadInput) -> bool:
        return True

    def result_source(self, inp: dict[str, Any], cwd: Path) -> str | None:
        return file_key(cwd, inp.get("file_path"))

    def _concurrency_safe(self, inp: ReadInput) -> bool:
        return True

    def rule_subject(self, inp: ReadInput, ctx: ToolContext) -> RuleSubject:
        return RuleSubject(kind="path", value=str(ctx.resolve(inp.file_path)))

    def suggest_rule(self, inp: ReadInput, ctx: ToolContext) -> str:
        # `//` marks an absolute path in the gitignore-style rule syntax.
        return f"Read(/{ctx.resolve(inp.file_path).parent}/**)"

    async def check_permissions(self, inp: ReadInput, ctx: ToolContext) -> PermissionCheck:
        path = ctx.resolve(inp.file_path)
        if ctx.is_readable_without_prompt(path):
            return PermissionCheck()
        dirs = ", ".join(str(d) for d in ctx.all_dirs())
        return PermissionCheck(behavior="ask", message=f"Read {str(path)!r}: outside the working directories ({dirs}).")

    async def call(self, inp: ReadInput, ctx: ToolContext, decision: CallDecision = UNDECIDED) -> ReadOutput:
        return await run_blocking(self._read, inp, ctx)

    # --- results ---------------------------------------------------------------------------
    def map_result(self, output: ReadOutput, tool_use_id: str) -> ToolResultBlock:
        return {"type": "tool_result", "tool_use_id": tool_use_id, "content": output.content}

    def summarize_use(self, inp: ReadInput) -> str:
        if inp.offset is None and inp.limit is None:
            return inp.file_path
        start = max(inp.offset or 1, 1)
        return f"{inp.file_path} (from {start}{f', {inp.limit}' if inp.limit else ''})"

    def summarize_result(self, output: ReadOutput) -> str:
        match output.kind:
            case "empty":
                return "Read empty file"
            case "image":
                return f"Read image ({_kb(output.nbytes)})"
            case "notebook":
                of = f" of {output.total_cells}" if output.cells != output.total_cells else ""
                return f"Read notebook ({output.cells}{of} cell{'s' if output.total_cells != 1 else ''})"
            case _:
                return f"Read {output.lines} line{'s' if output.lines != 1 else ''}"

    # --- the work, in a worker thread ------------------------------------------------------------
    def _read(self, inp: ReadInput, ctx: ToolContext) -> ReadOutput:
        path = ctx.resolve(inp.file_path)
        try:
            return self._read_path(path, inp, ctx)
        except OSError as exc:
            # stat() passed, so this is access or I/O trouble the model should hear about plainly.
            raise ToolError(
                f"Could not read {str(path)!r}: {exc.strerror or exc}. Check the file's permissions, or ask the person."
            ) from None

    def _read_path(self, path: Path, inp: ReadInput, ctx: ToolContext) -> ReadOutput:
        st = _stat_regular_file(path, ctx)
        suffix = path.suffix.lower()
        if suffix == ".ipynb":
            nb = read_notebook(path, st, offset=inp.offset, limit=inp.limit, read_state=ctx.read_state)
            return ReadOutput(
                kind="notebook",
                path=str(path),
                content=nb.blocks,
                cells=nb.cells,
                total_cells=nb.total_cells,
                nbytes=nb.nbytes,
            )
        if suffix in IMAGE_SUFFIXES:
            return _read_image(path, st, ctx)
        with open(path, "rb") as f:
            head = f.read(8192)
            media_type = sniff_image(head)
            if media_type is not None:
                return _read_image(path, st, ctx)
            kind = binary_kind(head, path)
            if kind is not None:
                raise ToolError(kind)
            if inp.offset is None and inp.limit is None and st.st_size > MAX_UNRANGED_BYTES:
                raise ToolError(
                    f"{str(path)!r} is {_kb(st.st_size)}, over the {MAX_UNRANGED_BYTES // 1024} KB limit for reading a whole file. "
                    f"Read part of it with offset and limit (for example offset=1, limit=500), or Grep for the lines you need."
                )
            f.seek(0)
            start = max(inp.offset or 1, 1)
            result = read_text(
                f,
                str(path),
                st,
                start=start,
                limit=inp.limit or DEFAULT_LIMIT,
                unranged=inp.offset is None and inp.limit is None,
            )
        return _text_output(path, st, inp, ctx, result, start)


def _stat_regular_file(path: Path, ctx: ToolContext) -> os.stat_result:
    """stat() the target and refuse anything but a regular file, before anything opens it."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise ToolError(
            f"File {str(path)!r} does not exist (working directory: {ctx.cwd}).{_did_you_mean(path)}"
        ) from None
    except NotADirectoryError:
        raise ToolError(f"{str(path)!r} does not exist: a part of the path is a file, not a directory.") from None
    mode = st.st_mode
    if stat.S_ISDIR(mode):
        raise ToolError(
            f"{str(path)!r} is a directory, not a file. List it with Glob (e.g. pattern '*' with this path) or `ls` in Bash."
        )
    if not stat.S_ISREG(mode):
        what = (
            "a named pipe (FIFO)"
            if stat.S_ISFIFO(mode)
            else "a socket"
            if stat.S_ISSOCK(mode)
            else "a device"
            if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "not a regular file"
        )
        raise ToolError(
            f"{str(path)!r} is {what}; Read only reads regular files, since reading this could block or never end."
        )
    return st


def _did_you_mean(path: Path) -> str:
    import difflib

    try:
        names = [e.name for e in os.scandir(path.parent)][:5000]
    except OSError:
        return ""
    close = difflib.get_close_matches(path.name, names, n=3, cutoff=0.6)
    if not close:
        return ""
    return " Did you mean " + " or ".join(repr(str(path.parent / n)) for n in close) + "?"


def _read_image(path: Path, st: os.stat_result, ctx: ToolContext) -> ReadOutput:
    if st.st_size > MAX_IMAGE_FILE_BYTES:
        raise ToolError(
            f"Image {str(path)!r} is {st.st_size / 1e6:.0f} MB, far over the API's image limit; make a smaller copy (if an image tool is installed) and Read that."
        )
    data = path.read_bytes()
    media_type = sniff_image(data[:16])
    if media_type is None:
        raise ToolError(
            f"{str(path)!r} has an image extension but its content is not PNG, JPEG, GIF or WebP, so it cannot be shown."
        )
    problem = image_problem(len(data), image_dimensions(data, media_type))
    if problem is not None:
        raise ToolError(
            f"Image {str(path)!r} cannot be sent: {problem}. No image library is available here to shrink it; "
            f"make a smaller copy with Bash if a tool for that is installed (for example ImageMagick's `convert -resize`), then Read the copy."
        )
    ctx.read_state.record(path, content=data, size=st.st_size, mtime_ns=st.st_mtime_ns)
    return ReadOutput(kind="image", path=str(path), content=[image_block(data, media_type)], nbytes=len(data))


def _text_output(
    path: Path, st: os.stat_result, inp: ReadInput, ctx: ToolContext, r: TextRead, start: int
) -> ReadOutput:
    shown = len(r.lines)
    if r.total_lines == 0 and shown == 0:
        ctx.read_state.record(path, content=r.raw if r.raw is not None else b"")
        note = f"[{path} exists but is empty (0 lines).]"
        return ReadOutput(kind="empty", path=str(path), content=note, total_lines=0)
    if shown == 0:
        raise ToolError(
            f"{str(path)!r} has {r.total_lines:,} line{'s' if r.total_lines != 1 else ''}, fewer than offset={inp.offset}. Use an offset from 1 to {r.total_lines}."
        )
    numbered = [f"{n}\t{line}" for n, line in enumerate(r.lines, start=start)]
    text = "\n".join(numbered)
    tokens = estimate_tokens(text)
    if tokens > MAX_OUTPUT_TOKENS:
        budget, fit = MAX_OUTPUT_TOKENS * 4, 0
        for line in numbered:
            budget -= quarter_tokens(line) + 1
            if budget < 0:
                break
            fit += 1
        raise ToolError(
            f"Lines {start}-{start + shown - 1} of {str(path)!r} come to about {tokens:,} tokens, over the {MAX_OUTPUT_TOKENS:,}-token limit for one read. "
            f"Read a smaller range (about {max(fit, 1)} lines from here fit: offset={start}, limit={max(fit, 1)}), or Grep for the lines you need."
        )
    end = start + shown - 1
    if r.total_lines is not None and end < r.total_lines:
        text += f"\n\n[Showing lines {start}-{end} of {r.total_lines:,}. Read on with offset={end + 1}.]"
    elif r.total_lines is None:
        more = f" ({_kb(r.bytes_after)} more)" if r.bytes_after else ""
        text += f"\n\n[Showing lines {start}-{end}; the file goes on{more}. Read on with offset={end + 1}.]"
    # Whether every line was shown, not what was asked: a default read cut at DEFAULT_LIMIT lines
    # is partial, and a ranged read that covered a short file is whole. Write refuses to replace
    # a file read partially (it would drop lines the model never saw).
    whole = start == 1 and r.total_lines is not None and end >= r.total_lines
    offset, limit = (None, None) if whole else (start, shown)
    if r.raw is not None:
        ctx.read_state.record(path, content=r.raw, offset=offset, limit=limit)
    else:
        # Too big to keep whole: the read state keeps the stat the read began with (a file
        # written meanwhile has a newer one, and an edit must then read it again).
        ctx.read_state.record(
            path, stamp=file_stamp(st), size=st.st_size, mtime_ns=st.st_mtime_ns, offset=offset, limit=limit
        )
    return ReadOutput(
        kind="text",
        path=str(path),
        content=text,
        first_line=start,
        lines=shown,
        total_lines=r.total_lines,
        nbytes=st.st_size,
    )


@dataclass(frozen=True, kw_only=True)
class NotebookRead:
    blocks: list[ResultPart]
    cells: int  # cells shown
    total_cells: int
    nbytes: int


def read_notebook(
    path: Path, st: os.stat_result, *, offset: int | None, limit: int | None, read_state: ReadState
) -> NotebookRead:
    """Cells `offset` (1-based) on, at most `limit` of them, within the token limit; the read is
    recorded, as a partial one when not every cell was shown."""
    if st.st_size > MAX_NOTEBOOK_BYTES:
        raise ToolError(
            f"Notebook {str(path)!r} is {st.st_size / 1e6:.0f} MB, too large to read; inspect it with Python in Bash (json module) instead."
        )
    raw = path.read_bytes()
    nb = _load_notebook(raw, path)
    cells = nb["cells"]
    total = len(cells)
    start = max(offset or 1, 1)
    if total and start > total:
        raise ToolError(
            f"Notebook {str(path)!r} has {total} cells (cell-0 to cell-{total - 1}); offset={offset} is past the end. offset counts cells from 1."
        )
    rendered = render_notebook(nb, offset=start - 1, limit=limit)
    tokens = estimate_tokens(rendered.text)
    if tokens > MAX_OUTPUT_TOKENS:
        per_cell = max(1, tokens // max(rendered.cell_count, 1))
        fit = max(1, MAX_OUTPUT_TOKENS // per_cell)
        raise ToolError(
            f"Notebook {str(path)!r} renders to about {tokens:,} tokens, over the {MAX_OUTPUT_TOKENS:,}-token limit. "
            f"Read fewer cells with offset and limit (they count cells, offset from 1; about {fit} cells fit, e.g. offset={start}, limit={fit})."
        )
    shown_to = start - 1 + rendered.cell_count  # 1-based number of the last cell shown
    whole = start == 1 and shown_to >= total
    # A partial read is recorded as one, so Write will not replace cells the model never saw.
    read_state.record(path, content=raw, offset=None if whole else start, limit=None if whole else rendered.cell_count)
    header = f"Notebook {path} ({total} cell{'s' if total != 1 else ''}"
    # Cells are labelled cell-N with a 0-based N (NotebookEdit's form), so the range is too.
    header += "" if whole else f"; showing cell-{start - 1} to cell-{shown_to - 1}"
    header += ")\n" if total else "): it has no cells.\n"
    header += _id_notes(cells, start - 1, shown_to)
    blocks: list[ResultPart] = [{"type": "text", "text": header}, *rendered.blocks]
    second = blocks[1] if blocks[1:] else None
    if second is not None and second["type"] == "text":
        blocks[:2] = [{"type": "text", "text": header + second["text"]}]
    if shown_to < total:
        blocks.append(
            {
                "type": "text",
                "text": (
                    f"\n[Showing cell-{start - 1} to cell-{shown_to - 1} of {total} cells (cell-N counts from 0). "
                    f"Read on with offset={shown_to + 1} (offset counts cells from 1).]"
                ),
            }
        )
    return NotebookRead(blocks=blocks, cells=rendered.cell_count, total_cells=total, nbytes=len(raw))


def _load_notebook(raw: bytes, path: Path) -> dict[str, Any]:
    """The notebook as it is on disk. Not `nbformat.reads`: it invents random ids for cells that
    have none (different on every Read), renames duplicate ids, and warns on stderr, so the ids
    shown would not be the ones NotebookEdit finds in the file."""
    try:
        data = json.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ToolError(
            f"{str(path)!r} is not a readable notebook ({type(exc).__name__}: {exc}). Check it with `python -m json.tool` in Bash."
        ) from None
    if (
        isinstance(data, dict)
        and isinstance(data.get("cells"), list)
        and all(isinstance(c, dict) for c in data["cells"])
    ):
        return data
    if isinstance(data, dict) and isinstance(data.get("nbformat"), int) and data["nbformat"] < 4:
        return _old_notebook(data, path)
    raise ToolError(
        f"{str(path)!r} is JSON but not a Jupyter notebook (no list of cells). Check it with `python -m json.tool` in Bash."
    )


def _old_notebook(data: dict[str, Any], path: Path) -> dict[str, Any]:
    """An nbformat 3 (or older) notebook, converted to 4 for display. Its cells have no ids; the
    converter's random ones are dropped so they show as cell-N."""
    import warnings

    import nbformat

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # stderr is the person's cell output
            nb = nbformat.convert(nbformat.from_dict(data), 4)
    except Exception as exc:  # nbformat raises several unrelated types for bad input
        raise ToolError(
            f"{str(path)!r} is not a readable notebook ({type(exc).__name__}: {exc}). Check it with `python -m json.tool` in Bash."
        ) from exc
    for cell in nb.cells:
        cell.pop("id", None)
    converted: dict[str, Any] = nb
    return converted


def _id_notes(cells: list[dict[str, Any]], lo: int, hi: int) -> str:
    """Lines that explain labels: cells without an id, and ids shared by several cells."""
    notes = ""
    if any(not c.get("id") for c in cells[lo:hi]):
        notes += "Cells without an id in the file are labelled cell-N, N being the cell's 0-based index.\n"
    where: dict[str, list[int]] = {}
    for i, c in enumerate(cells):
        if isinstance(c.get("id"), str) and c["id"]:
            where.setdefault(c["id"], []).append(i)
    shared = [(cid, idx) for cid, idx in where.items() if len(idx) > 1]
    if shared:
        listed = "; ".join(f"{cid!r} by " + ", ".join(f"cell-{i}" for i in idx[:5]) for cid, idx in shared[:5])
        notes += f"Some ids are used by more than one cell ({listed}): name those cells as cell-N.\n"
    return notes


def _kb(nbytes: int) -> str:
    if nbytes < 1024 * 1024:
        return f"{max(1, round(nbytes / 1024)) if nbytes else 0} KB"
    return f"{nbytes / (1024 * 1024):.1f} MB"
