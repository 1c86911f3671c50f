"""What Edit, Write and NotebookEdit share: one plan, checked three times, applied once.

Each editing tool turns its input into a `Plan` (the file's current bytes and the bytes it would
write) by a synchronous `_plan()` that raises `ToolError` for anything the model must fix. The
lifecycle asks for that plan at three moments, and each re-reads the file:

- `validate_input`, before and again after the approval prompt (the person may edit the file
  while the prompt is open), so a stale or impossible edit never reaches the person or runs;
- `preview`, so the prompt shows the exact diff before anything is written;
- `call`, which plans once more and writes in the same worker thread, so the freshness check
  sits immediately before the atomic replace and nothing unseen is ever clobbered.

Planning is cheap next to the model round trip, and one code path for all three moments means
the diff the person approved is the change that is made.
"""

from __future__ import annotations

import asyncio
import os
import stat
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from ipy_agent.contract.decision import UNDECIDED, CallDecision, WriteDecision
from ipy_agent.contract.tool import InputT, PermissionCheck, PermissionPreview, ResultT, RuleSubject, Tool, ToolError
from ipy_agent.contract.tool_context import ToolContext

from .cell_policies import check_before_write, permission_for, refusal_for
from .diff import Diff, Span, diff_spans, make_diff
from .fileio import WriteRefused, atomic_write, real_path
from .protected import write_checker, write_reason

__all__ = [
    "FileEditingTool",
    "Plan",
    "quote",
    "read_existing",
    "require_fresh",
    "require_whole_read",
    "suggest_edit_rule",
]

# Edits load the whole file; past this size an edit is refused before anything is read.
MAX_EDIT_BYTES = 256 * 1024 * 1024


@dataclass(kw_only=True)
class Plan:
    """One intended write: where, what is there now, what will be there, and how to show it."""

    path: Path
    display: str
    old_text: str  # LF-normalised text now on disk ("" for a new file)
    new_text: str  # LF-normalised text after the change
    new_raw: bytes  # the exact bytes to write
    created: bool
    diff_label: str = ""
    notes: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)
    # Where old_text and new_text differ, when the tool knows (Edit): then only those places are
    # diffed, instead of splitting both whole texts into lines.
    spans: list[Span] | None = None

    @cached_property
    def diff(self) -> Diff:
        label = self.diff_label or self.display
        if self.spans is not None and not self.created:
            return diff_spans(self.old_text, self.new_text, self.spans, label=label)
        return make_diff(self.old_text, self.new_text, label=label, old_label="/dev/null" if self.created else None)


def quote(s: str, limit: int = 240) -> str:
    """A value for an error message: its repr, cut so a huge old_string does not echo back whole."""
    if len(s) <= limit:
        return repr(s)
    return f"{s[:limit]!r}… ({len(s)} characters in all)"


def read_existing(path: Path, *, what: str = "File") -> bytes | None:
    """The bytes of a file about to be rewritten, or None when it does not exist. Stat comes first: `open()` on a FIFO
    blocks forever, and a multi-GB file would be loaded whole."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        return None
    except OSError as e:
        raise ToolError(f"Cannot access {str(path)!r}: {e.strerror}. Check the path.") from e
    if stat.S_ISDIR(st.st_mode):
        raise ToolError(f"{str(path)!r} is a directory, not a file. Give the path of a file inside it.")
    if not stat.S_ISREG(st.st_mode):
        raise ToolError(f"{str(path)!r} is not a regular file (a device, FIFO or socket); it cannot be edited.")
    if st.st_size > MAX_EDIT_BYTES:
        raise ToolError(
            f"{what} {str(path)!r} is {st.st_size:,} bytes, over the {MAX_EDIT_BYTES:,}-byte limit for edits. "
            "Change it with a script through Bash instead."
        )
    # The atomic replace would succeed on a read-only file (it renames over it), so honour the
    # permission bits here instead of silently overriding a file someone protected.
    if not os.access(path, os.W_OK):
        raise ToolError(
            f"{what} {str(path)!r} is read-only (mode {stat.S_IMODE(st.st_mode):o}); it was not changed. "
            "Ask the person whether it should be made writable."
        )
    with open(path, "rb") as f:
        return f.read()


def require_fresh(ctx: ToolContext, path: Path, raw: bytes | None, *, what: str = "File") -> None:
    """Raise the read-state message unless `path` was read and is unchanged (by content)."""
    message = ctx.read_state.check_fresh(str(path), raw, what=f"{what} {str(path)!r}")
    if message:
        raise ToolError(message)


def require_whole_read(ctx: ToolContext, path: Path, display: str) -> None:
    """Refuse to overwrite a file the agent has seen only part of (a ranged or cut-off Read).

    Write replaces everything, so lines the model never saw would be lost without it knowing
    they existed. Edit does not need this: it changes only the text it quotes.
    """
    entry = ctx.read_state.get(path)
    if entry is None or not entry.partial:
        return
    cells = path.suffix.lower() == ".ipynb"
    unit = "cells" if cells else "lines"
    first = max(entry.offset or 1, 1)
    last = first + entry.limit - 1 if entry.limit else None
    if cells:  # named the way Read labels cells: cell-N with 0-based N
        shown = f"cell-{first - 1} to cell-{last - 1}" if last else f"cell-{first - 1} on"
    else:
        shown = f"lines {first}-{last}" if last else f"lines from {first} on"
    raise ToolError(
        f"{display!r} was only partly read ({shown}), and Write would "
        f"replace all of it, including {unit} you have not seen. Read the rest first (Read without offset "
        f"and limit, or more ranges), or use {'NotebookEdit' if cells else 'Edit'} to change just the part you read."
    )


_PATTERN_CHARS = frozenset("*?[]!\\")


def suggest_edit_rule(path: Path, ctx: ToolContext) -> str:
    """The rule an "always allow" answer adds for an edit of `path`.

    - A file in a subdirectory of cwd: every file under that directory, `Edit(src/pkg/**)`.
      Approving one edit there usually means "this part of the project is fine to change".
    - A file directly in cwd: files with the same extension at the top level, `Edit(./*.py)`.
      The directory rule would be `Edit(**)`, the whole project, far more than one approval
      should grant; and a bare `Edit(*.py)` would match at any depth (gitignore rules for a
      pattern without a slash). `./` anchors the pattern at cwd and reads as "here" to the
      person deciding. A file without an extension gets a rule for itself only,
      `Edit(./Makefile)`.
    - A file outside cwd: its directory by absolute path, `Edit(//abs/dir/**)` (the leading `//`
      marks an absolute path in Claude Code's rule syntax).
    - A notebook: that notebook only, `Edit(./analysis.ipynb)` (or `Edit(//abs/nb.ipynb)`), so the
      review's "Always accept edits to this notebook" grants what it says. A name holding a
      pattern character (`*?[]!\\`) falls back to the rules above.
    """
    cwd = Path(os.path.normpath(ctx.cwd))
    try:
        rel = path.relative_to(cwd)
    except ValueError:
        if path.suffix == ".ipynb" and not _PATTERN_CHARS.intersection(str(path)):
            return f"Edit(/{path.as_posix()})"
        return f"Edit(/{path.parent.as_posix()}/**)"
    if path.suffix == ".ipynb" and not _PATTERN_CHARS.intersection(str(rel)):
        return f"Edit(./{rel.as_posix()})"
    if rel.parent == Path("."):
        return f"Edit(./*{path.suffix})" if path.suffix else f"Edit(./{path.name})"
    return f"Edit({rel.parent.as_posix()}/**)"


def _judge(path: str, ctx: ToolContext) -> WriteDecision:
    """What the permission decision sees of `path`: where it really leads now, and why writing
    there changes what runs (by the path as named and where it leads)."""
    return WriteDecision(real=real_path(path), protected=write_reason(path, ctx))


class FileEditingTool(Tool[InputT, ResultT]):
    """Base of the three editing tools: flags, rules, and the plan/preview/write cycle."""

    kind = "edit"
    rule_names = ("Edit",)
    max_result_chars = 100_000
    # A new file may sit in a directory that does not exist yet (Write, or Edit with an empty
    # old_string); NotebookEdit only changes existing notebooks and turns this off.
    make_parents = True

    # --- what subclasses provide -----------------------------------------------------------
    def _target(self, inp: InputT) -> str:
        raise NotImplementedError

    def _plan(self, inp: InputT, ctx: ToolContext) -> Plan:
        """Check everything and compute the bytes to write; raise ToolError to refuse."""
        raise NotImplementedError

    def _result(self, plan: Plan, ctx: ToolContext) -> ResultT:
        raise NotImplementedError

    def _preview_title(self, plan: Plan) -> str:
        return f"{'Create' if plan.created else 'Edit'} {plan.display}"

    def _paths(self, target: str, ctx: ToolContext) -> tuple[Path, str]:
        """The file to read and write (through symlinks: writing the link's own path would
        replace the link with a plain file and leave the real file unchanged) and the name to
        show the person, as the model gave it."""
        given = ctx.resolve(target)
        return real_path(given), ctx.display_path(given)

    # --- shared behaviour -------------------------------------------------------------------
    def _read_only(self, inp: InputT) -> bool:
        return False

    def _concurrency_safe(self, inp: InputT) -> bool:
        return False

    def rule_subject(self, inp: InputT, ctx: ToolContext) -> RuleSubject | None:
        return RuleSubject(kind="path", value=str(ctx.resolve(self._target(inp))))

    async def check_permissions(self, inp: InputT, ctx: ToolContext) -> PermissionCheck:
        """The person's cell policies on a notebook first (deny, or an ask in every mode: see
        cell_policies.py), then the files that decide what runs (`_protected_check`)."""
        policy = await asyncio.to_thread(self._policy_check, inp, ctx)
        if policy is not None and policy.behavior == "deny":
            return policy
        check = await self._protected_check(inp, ctx)
        if policy is None:
            return check
        message = f"{check.message}; {policy.message}" if check.behavior == "ask" and check.message else policy.message
        return PermissionCheck(behavior="ask", always=True, message=message, writes=check.writes)

    def _policy_check(self, inp: InputT, ctx: ToolContext) -> PermissionCheck | None:
        """The person's cell policies on a notebook (cell_policies.py): deny, ask, or None."""
        try:
            plan = self._plan(inp, ctx)
        except ToolError:
            return None  # validation tells the model what is wrong
        return permission_for(plan.path, plan.new_raw, plan.display)

    async def _protected_check(self, inp: InputT, ctx: ToolContext) -> PermissionCheck:
        """A file that decides what runs or what is allowed (`.git/hooks`, settings, ~/.bashrc:
        see `protected`) asks in every mode and whatever the allow rules say, symlinks judged by
        where they point."""
        path = str(ctx.resolve(self._target(inp)))
        looked = await asyncio.to_thread(_judge, path, ctx)
        writes = {path: looked}  # the writer lands where this decision looked, or nowhere
        reason = looked.protected
        if reason is None:
            return PermissionCheck(writes=writes)
        return PermissionCheck(
            behavior="ask",
            always=True,
            message=f"{ctx.display_path(path)!r}: {reason}, so this edit is always confirmed",
            writes=writes,
        )

    def suggest_rule(self, inp: InputT, ctx: ToolContext) -> str:
        return suggest_edit_rule(ctx.resolve(self._target(inp)), ctx)

    def summarize_use(self, inp: InputT) -> str:
        return self._target(inp)

    def detail_for_person(self, inp: InputT, output: ResultT) -> str:
        # The person expands the compact line to see what changed; every result carries its diff.
        return str(getattr(output, "diff", "") or "")

    async def validate_input(self, inp: InputT, ctx: ToolContext) -> str | None:
        return await asyncio.to_thread(self._validate, inp, ctx)

    def _validate(self, inp: InputT, ctx: ToolContext) -> str | None:
        # The plan is dropped here, in the thread, for the reason given in `_preview`.
        try:
            plan = self._plan(inp, ctx)
        except ToolError as e:
            return str(e)
        return refusal_for(plan.path, plan.new_raw, plan.display)

    async def preview(self, inp: InputT, ctx: ToolContext) -> PermissionPreview | None:
        return await asyncio.to_thread(self._preview, inp, ctx)

    def _preview(self, inp: InputT, ctx: ToolContext) -> PermissionPreview | None:
        # Built in the worker thread so only the small preview leaves it: a Plan holds the whole
        # file two or three times, and a finished future can keep its result alive until the
        # garbage collector runs, which for a big file doubled the memory an edit needs.
        try:
            plan = self._plan_with_diff(inp, ctx)
        except ToolError:
            # validate_input has already told the model; there is nothing to approve.
            return None
        d = plan.diff
        return PermissionPreview(
            title=self._preview_title(plan), diff=d.text, added=d.added, removed=d.removed, notes=plan.notes
        )

    async def call(self, inp: InputT, ctx: ToolContext, decision: CallDecision = UNDECIDED) -> ResultT:
        return await asyncio.to_thread(self._apply, inp, ctx, decision)

    def _plan_with_diff(self, inp: InputT, ctx: ToolContext) -> Plan:
        plan = self._plan(inp, ctx)
        _ = plan.diff  # difflib is CPU work: do it here in the worker thread, not on the loop
        return plan

    def _apply(self, inp: InputT, ctx: ToolContext, decision: CallDecision) -> ResultT:
        # Re-reading and re-checking here, in the same thread as the write, is the last guard
        # against clobbering a change made after validation (or while the prompt was open).
        plan = self._plan_with_diff(inp, ctx)
        # The person's cell policies, against the notebook as it is on disk right now.
        check_before_write(plan.path, plan.new_raw, plan.display, decision)
        seen = ctx.read_state.get(plan.path)
        checkpoints = ctx.checkpoints

        def keep_for_rewind(final: Path) -> None:  # the bytes before, or that it was absent
            if checkpoints is not None:
                checkpoints.before_write(final, tool=self.name)

        # Where the permission decision looked (None: called directly, so the decision is now).
        looked = decision.writes.get(str(ctx.resolve(self._target(inp))))
        try:
            atomic_write(
                plan.path,
                plan.new_raw,
                make_parents=self.make_parents,
                decision=looked,
                why_protected=write_checker(ctx),
                before_replace=keep_for_rewind,
            )
        except WriteRefused as e:
            raise ToolError(str(e)) from None
        if ctx.checkpoints is not None:
            ctx.checkpoints.after_write(plan.path)
        ctx.read_state.record_write(str(plan.path), plan.new_raw, source=self.name)
        if seen is not None and seen.partial and not plan.created:
            # An Edit after a partial Read knows the new content's hash, not the lines it never
            # showed: stay partial, so a Write after it still cannot replace those unseen.
            ctx.read_state.touch(plan.path, offset=seen.offset, limit=seen.limit)
        return self._result(plan, ctx)
