"""Edit: replace exact text in a file, the agent's everyday way of changing code.

Sending only `old_string` -> `new_string` keeps edits small and reviewable, and the exact-match
rule makes the model prove it knows the current text. The checks run in a fixed order, each
with a message that says what to do next (see `_plan`). What the file is made of is kept: CRLF
stays CRLF (matching happens on LF-normalised text), a file mixing CRLF and LF keeps every
line's own ending, and UTF-8 with or without BOM and UTF-16 with BOM round-trip unchanged.

Matching is exact, with one tolerance: straight and curly quotes count as equal, because models
often straighten the typographic quotes they read. When that tolerance is what found the match,
only the part the model actually changed is taken from `new_string`; the unchanged beginning and
end of the matched text are copied from the file, so the file's curly quotes around the change
survive and no quote inside newly written code is "curled". Whitespace is never tolerated (in
Python it is meaning), but a whitespace-only near miss is named in the error with its lines.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ipy_agent.contract.tool import ToolError
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.history.blocks import ToolResultBlock
from ipy_agent.tools.shared.diff import Span, count_lines, numbered_snippet
from ipy_agent.tools.shared.edit_plan import FileEditingTool, Plan, quote, read_existing, require_fresh
from ipy_agent.tools.shared.fileio import decode_text, encode_text, undecodable_reason

__all__ = ["EditInput", "EditResult", "EditTool"]

DESCRIPTION = """\
Replace exact text in an existing file: every character of old_string is swapped for new_string. \
Use this for changes to files that exist; it sends only the change, so it is cheaper than \
rewriting the file and cannot drop the rest of the file by accident. Use Write to create a file \
or to replace its whole content, and NotebookEdit for .ipynb notebooks (Edit refuses them: a \
notebook is JSON, and text edits easily leave it invalid).

Read the file first, in this conversation. The runtime refuses to edit a file you have not read, \
or one that changed since you read it (then Read it again): this way an edit is never made \
against text you have not seen.

- old_string must match the file exactly, including indentation and blank lines. Copy it from \
the Read output without the line-number prefix: the number and the tab before each line are not \
part of the file.
- old_string must match one place only; otherwise the edit is refused and you are told how many \
matches there are. Add surrounding lines to make it unique, or set replace_all to true to change \
every occurrence (for example to rename a variable).
- Straight and curly quotes count as the same when matching, and the file's own quotes around \
your change are kept.
- An empty old_string creates a file that does not exist yet (or fills an empty file).
- The file's line endings and encoding are kept: write new_string with plain \\n newlines even \
for a CRLF file.
- file_path may be absolute or relative to the working directory.
"""

_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})
_LINE_NUMBER_PREFIX = re.compile(r"^\s*\d+(\t|\u2192)")


class EditInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    file_path: str = Field(description="The file to change: an absolute path, or relative to the working directory.")
    old_string: str = Field(description="The exact text to replace (empty: create the file).")
    new_string: str = Field(description="The text to put in its place; must differ from old_string.")
    replace_all: bool = Field(
        default=False, description="Replace every occurrence of old_string instead of exactly one."
    )


@dataclass(frozen=True, kw_only=True)
class EditResult:
    path: str
    display: str
    created: bool
    replacements: int
    replace_all: bool
    added: int
    removed: int
    diff: str
    snippet: str
    lines: int
    note: str = ""


def _lf(s: str) -> str:
    return s.replace("\r\n", "\n")


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _find_all(haystack: str, needle: str) -> list[int]:
    """Start positions of non-overlapping occurrences, left to right (as str.replace sees them)."""
    out, start = [], 0
    while (i := haystack.find(needle, start)) != -1:
        out.append(i)
        start = i + len(needle)
    return out


def _splice(actual: str, old: str, new: str) -> str:
    """`new` for a match whose file text `actual` differs from `old` only in quote style.

    Characters that old and new share (aligned by difflib) are copied from `actual`, so the
    file's curly quotes survive wherever the model did not change the text; what the model
    changed or added is taken from `new` as given.
    """
    if len(old) + len(new) > 20_000:  # the matcher is quadratic; keep only the common ends
        blocks: list[tuple[int, int, int]] = [(0, 0, _common_prefix(old, new))]
    else:
        blocks = [
            (b.a, b.b, b.size) for b in difflib.SequenceMatcher(None, old, new, autojunk=False).get_matching_blocks()
        ]
    out, j = [], 0
    for i, k, size in blocks:
        if size == 0:
            continue
        out += [new[j:k], actual[i : i + size]]
        j = k + size
    out.append(new[j:])
    return "".join(out)


def _common_prefix(a: str, b: str) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def _locate(text: str, old: str) -> tuple[list[tuple[int, int]], str]:
    """Where `old` occurs in `text` as (start, end) spans, left to right, and a note for the model.

    Tried in order: exactly; with curly and straight quotes alike; and, in a file that mixes
    CRLF and LF (its text keeps the "\\r\\n"s), with each "\\n" of old_string also matching a
    "\\r\\n": Read does not show the "\\r", so the model cannot be expected to type it.
    """
    hits = _find_all(text, old)
    if hits:
        return [(p, p + len(old)) for p in hits], ""
    folded, old_folded = text.translate(_QUOTES), old.translate(_QUOTES)
    spans = [(p, p + len(old)) for p in _find_all(folded, old_folded)]
    if not spans and "\r\n" in text and "\n" in old:
        pattern = re.compile("\r?\n".join(re.escape(part) for part in old_folded.split("\n")))
        spans = [m.span() for m in pattern.finditer(folded)]
    if any(_lf(text[s:e]) != old for s, e in spans):
        return spans, (
            "old_string matched only when curly and straight quotes are treated alike; "
            "the file's own quotes outside your change were kept."
        )
    return spans, ""


def _apply_spans(text: str, spans: list[tuple[int, int]], old: str, new: str) -> tuple[str, list[Span], str]:
    """The text with each span replaced, the changes as diff spans, and the first replacement.

    The common case (exact matches in a file without mixed line endings) is one `str.replace`,
    which builds the new text without the slice copies a join would make: for a file of
    hundreds of MB those copies were the largest cost of an edit.
    """
    if not old:  # filling an empty (or whitespace-only) file: the content is new_string
        return new, [(0, len(text), 0, len(new))], new
    mixed = "\r\n" in text
    if not mixed and all(text[s:e] == old for s, e in spans):
        pieces = [new] * len(spans)
        new_text = text.replace(old, new, len(spans))
    else:
        pieces = []
        for s, e in spans:
            actual = _lf(text[s:e])
            piece = new if actual == old else _splice(actual, old, new)
            if mixed:  # new lines take the ending of the lines they replace
                piece = piece.replace("\n", _local_newline(text, s, e))
            pieces.append(piece)
        out, prev = [], 0
        for (s, e), piece in zip(spans, pieces):
            out += [text[prev:s], piece]
            prev = e
        out.append(text[prev:])
        new_text = "".join(out)
        del out
    changes, delta = [], 0
    for (s, e), piece in zip(spans, pieces):
        changes.append((s, e, s + delta, s + delta + len(piece)))
        delta += len(piece) - (e - s)
    return new_text, changes, pieces[0]


def _local_newline(text: str, start: int, end: int) -> str:
    """The line ending around text[start:end] in a mixed file: of the lines it spans, or of its line."""
    inside = text.count("\n", start, end)
    if inside:
        return "\r\n" if text.count("\r\n", start, end) == inside else "\n"
    nl = text.find("\n", end)
    return "\r\n" if nl > 0 and text[nl - 1] == "\r" else "\n"


def _collapse_ws(text: str) -> str:
    # Newlines stay so positions map to the same line numbers; runs of spaces/tabs become one.
    return "\n".join(" ".join(line.split()) for line in text.split("\n"))


def _not_found(text: str, old: str, display: str) -> str:
    msg = f"old_string was not found in {display!r}. old_string: {quote(old)}."
    lines = old.split("\n")
    if all(_LINE_NUMBER_PREFIX.match(line) for line in lines if line.strip()):
        return msg + (
            " Its lines start with line numbers from the Read output; those are not part of the "
            "file. Remove the number and the tab before each line and retry."
        )
    squeezed = _collapse_ws(old).strip()
    if squeezed:
        hits = _find_all(_collapse_ws(text), squeezed)
        if hits:
            collapsed = _collapse_ws(text)
            where = ", ".join(str(_line_of(collapsed, h)) for h in hits[:5])
            return msg + (
                f" Text starting at line {where} matches if spaces, tabs and indentation are ignored, "
                "so the whitespace differs. Read those lines again and copy them exactly."
            )
    return msg + (
        " The file may differ from what you remember: Read it again (or search it with Grep) and "
        "copy the text exactly, including indentation."
    )


class EditTool(FileEditingTool[EditInput, EditResult]):
    name = "Edit"
    input_model = EditInput
    offered_in_simple_mode = True

    def description(self, ctx: ToolContext) -> str:
        return DESCRIPTION

    def _target(self, inp: EditInput) -> str:
        return inp.file_path

    def _plan(self, inp: EditInput, ctx: ToolContext) -> Plan:
        path, display = self._paths(inp.file_path, ctx)
        old, new = _lf(inp.old_string), _lf(inp.new_string)
        if old == new:
            raise ToolError(
                "No change to make: old_string and new_string are identical. Put the text you want "
                "in new_string, or skip this edit if the file is already right."
            )
        if path.suffix.lower() == ".ipynb":
            raise ToolError(
                f"{display!r} is a Jupyter notebook. Use NotebookEdit to change its cells (or Write "
                "to replace the whole notebook); text edits of notebook JSON break it easily."
            )
        raw = read_existing(path)
        if raw is None:
            if old:
                raise ToolError(_missing_message(path, ctx))
            # Creating: keep the newline style the model wrote (CRLF only if it sent CRLF).
            newline = "\r\n" if "\r\n" in inp.new_string else "\n"
            data = encode_text(new, newline=newline)
            return Plan(
                path=path,
                display=display,
                old_text="",
                new_text=new,
                new_raw=data,
                created=True,
                extra={"first": 1, "last": max(1, new.count("\n")), "count": 1},
            )
        if not old and raw.strip():
            raise ToolError(
                f"{display!r} already exists and is not empty, so an empty old_string (which means "
                "'create the file') cannot apply. Give the text to replace as old_string, or Read the "
                "file and use Write to replace all of it."
            )
        require_fresh(ctx, path, raw)
        try:
            tf = decode_text(raw)
        except UnicodeDecodeError as e:
            raise ToolError(
                f"{display!r} is not UTF-8 or UTF-16 text ({undecodable_reason(e)}); "
                "Edit cannot change it without corrupting it."
            ) from e
        del raw  # a big file is held as text from here on; keep one copy, not two
        text = tf.text
        if not old:  # an existing empty (or whitespace-only) file gets new_string as content
            spans, note = [(0, len(text))], ""
        else:
            spans, note = _locate(text, old)
            if not spans:
                raise ToolError(_not_found(text, old, display))
            if len(spans) > 1 and not inp.replace_all:
                where = ", ".join(str(_line_of(text, p)) for p, _ in spans[:10])
                more = "" if len(spans) <= 10 else ", …"
                raise ToolError(
                    f"old_string matches {len(spans)} places in {display!r} (starting at lines "
                    f"{where}{more}); replace_all is false, so it is not clear which one to change. "
                    f"Set replace_all to true to change all {len(spans)}, or add surrounding lines "
                    f"to old_string so it matches exactly one place. old_string: {quote(old)}."
                )
        new_text, changes, first_piece = _apply_spans(text, spans, old, new)
        # Where the first change landed in the new text, for the snippet the model gets back.
        first = _line_of(text, spans[0][0])
        data = encode_text(new_text, encoding=tf.encoding, newline=tf.newline)
        return Plan(
            path=path,
            display=display,
            old_text=text,
            new_text=new_text,
            new_raw=data,
            created=False,
            spans=changes,
            extra={
                "first": first,
                "last": first + first_piece.count("\n"),
                "count": len(spans),
                "first_pos": text.rfind("\n", 0, spans[0][0]) + 1,
                "note": note,
                "replace_all": inp.replace_all,
            },
        )

    def _result(self, plan: Plan, ctx: ToolContext) -> EditResult:
        d = plan.diff
        return EditResult(
            path=str(plan.path),
            display=plan.display,
            created=plan.created,
            replacements=plan.extra["count"],
            replace_all=plan.extra.get("replace_all", False),
            added=d.added,
            removed=d.removed,
            diff=d.text,
            snippet=numbered_snippet(
                plan.new_text, plan.extra["first"], plan.extra["last"], first_pos=plan.extra.get("first_pos")
            ),
            lines=count_lines(plan.new_text),
            note=plan.extra.get("note", ""),
        )

    def map_result(self, output: EditResult, tool_use_id: str) -> ToolResultBlock:
        if output.created:
            head = f"Created {output.path} ({output.lines} lines)."
        else:
            head = f"Edited {output.path}."
            if output.replace_all:
                n = output.replacements
                head += f" Replaced all {n} occurrence{'s' if n != 1 else ''} of old_string."
        if output.note:
            head += " " + output.note
        content = f"{head}\nThe changed part now reads (numbered as Read numbers lines):\n{output.snippet}"
        return {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}

    def summarize_result(self, output: EditResult) -> str:
        if output.created:
            return f"Created {output.display} ({output.lines} lines)"
        extra = f", {output.replacements} replacements" if output.replacements > 1 else ""
        return f"Edited {output.display} (+{output.added} -{output.removed}{extra})"


def _missing_message(path: Any, ctx: ToolContext) -> str:
    msg = f"File {str(path)!r} does not exist (relative paths resolve against the working directory {str(ctx.cwd)!r})."
    try:
        siblings = [p.name for p in path.parent.iterdir() if p.stem == path.stem and p.name != path.name]
    except OSError:
        siblings = []
    if siblings:
        msg += f" Did you mean {str(path.with_name(sorted(siblings)[0]))!r}?"
    return msg + " Check the path with Glob; to create a new file, use an empty old_string or Write."
