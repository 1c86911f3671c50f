"""Write: create a file, or replace a whole file's content.

The counterpart of Edit for new files and complete rewrites. Overwriting is the dangerous case,
so an existing file must have been read in this conversation and be unchanged since (by
content). Where Claude Code writes exactly what it is given, we keep what the person's editor
set up: an existing CRLF file stays CRLF and an existing file's encoding (UTF-8 BOM, UTF-16)
is kept, since a model rarely means to flip a Windows file to LF and the resulting diff would
touch every line. A new file is written as UTF-8, exactly as given.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ipy_agent.contract.read_state import file_key
from ipy_agent.contract.tool import ToolError
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.history.blocks import ToolResultBlock
from ipy_agent.tools.shared.diff import count_lines
from ipy_agent.tools.shared.edit_plan import FileEditingTool, Plan, read_existing, require_fresh, require_whole_read
from ipy_agent.tools.shared.fileio import decode_text, encode_text, undecodable_reason

__all__ = ["WriteInput", "WriteResult", "WriteTool"]

DESCRIPTION = """\
Create a file, or replace the whole content of a file. Use it for new files and for complete \
rewrites. To change part of an existing file use Edit instead: it sends only the change and \
cannot drop the rest of the file by accident. For .ipynb notebooks prefer NotebookEdit, which \
changes one cell and keeps the notebook valid.

- Overwriting an existing file requires that you Read all of it earlier in this conversation \
and that it has not changed since; the runtime refuses otherwise (Read it again), so you never \
overwrite content you have not seen. After reading only part of a file (offset/limit, or a long \
file cut off), Read the rest or use Edit. Creating a new file needs no Read.
- Missing parent directories are created.
- An existing file keeps its line endings (CRLF stays CRLF) and encoding (UTF-8 with BOM, \
UTF-16); a new file is written as UTF-8, exactly as given.
- file_path may be absolute or relative to the working directory.
- Only create files the task needs: every extra file (notes, READMEs, backups) is something the \
person has to review and delete.
"""


class WriteInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    file_path: str = Field(description="The file to write: an absolute path, or relative to the working directory.")
    content: str = Field(description="The complete new content of the file.")


@dataclass(frozen=True, kw_only=True)
class WriteResult:
    path: str
    display: str
    created: bool
    lines: int
    added: int
    removed: int
    diff: str


class WriteTool(FileEditingTool[WriteInput, WriteResult]):
    name = "Write"
    input_model = WriteInput

    def description(self, ctx: ToolContext) -> str:
        return DESCRIPTION

    def _target(self, inp: WriteInput) -> str:
        return inp.file_path

    def input_source(self, inp: dict[str, Any], cwd: Path) -> str | None:
        # The input carries the whole new content: while the call is visible, so is the file.
        return file_key(cwd, inp.get("file_path")) if isinstance(inp.get("content"), str) else None

    def _preview_title(self, plan: Plan) -> str:
        return f"{'Create' if plan.created else 'Overwrite'} {plan.display}"

    def _plan(self, inp: WriteInput, ctx: ToolContext) -> Plan:
        path, display = self._paths(inp.file_path, ctx)
        raw = read_existing(path)
        if raw is None:
            if path.parent.exists() and not path.parent.is_dir():
                raise ToolError(f"Cannot create {str(path)!r}: {str(path.parent)!r} is a file, not a directory.")
            text = inp.content.replace("\r\n", "\n")
            return Plan(
                path=path,
                display=display,
                old_text="",
                new_text=text,
                new_raw=inp.content.encode("utf-8"),
                created=True,
            )
        try:
            tf = decode_text(raw)
            old_text, encoding, newline = tf.text, tf.encoding, tf.newline
        except UnicodeDecodeError as e:
            if ctx.read_state.get(path) is None:
                # Read refuses such a file, so "Read it first" would send the model round in circles.
                raise ToolError(
                    f"{display!r} exists but is not UTF-8 or UTF-16 text ({undecodable_reason(e)}), so Read "
                    "cannot show it and Write will not overwrite it unseen. To keep its content, convert it "
                    "to UTF-8 in Bash (e.g. `iconv -f latin1 -t utf-8 FILE > FILE.new && mv FILE.new FILE`), "
                    "Read it, then write. To replace it deliberately, delete it first (`rm` in Bash, which "
                    "the person approves) and Write it as a new file."
                ) from e
            # Read it and unchanged, but not text: an image Read showed. Replace it as a new
            # UTF-8 file; the diff shows the old side as empty rather than as mojibake.
            old_text, encoding, newline = "", "utf-8", "\n"
        require_fresh(ctx, path, raw)
        require_whole_read(ctx, path, display)
        new_text = inp.content.replace("\r\n", "\n")
        if newline == "\n":
            # An LF file gets the content exactly as given (CRLF the model sent on purpose stays).
            data = encode_text(inp.content, encoding=encoding)
        else:
            data = encode_text(new_text, encoding=encoding, newline=newline)
        return Plan(path=path, display=display, old_text=old_text, new_text=new_text, new_raw=data, created=False)

    def _result(self, plan: Plan, ctx: ToolContext) -> WriteResult:
        d = plan.diff
        return WriteResult(
            path=str(plan.path),
            display=plan.display,
            created=plan.created,
            lines=count_lines(plan.new_text),
            added=d.added,
            removed=d.removed,
            diff=d.text,
        )

    def map_result(self, output: WriteResult, tool_use_id: str) -> ToolResultBlock:
        if output.created:
            text = f"Created {output.path} ({_lines(output.lines)})."
        elif not output.diff:
            text = f"Wrote {output.path} ({_lines(output.lines)}); the content was already identical."
        else:
            text = f"Wrote {output.path} ({_lines(output.lines)}; +{output.added} -{output.removed} against the previous content)."
        return {"type": "tool_result", "tool_use_id": tool_use_id, "content": text}

    def summarize_result(self, output: WriteResult) -> str:
        verb = "Created" if output.created else "Wrote"
        return f"{verb} {output.display} ({_lines(output.lines)})"


def _lines(n: int) -> str:
    return f"{n} line{'s' if n != 1 else ''}"
