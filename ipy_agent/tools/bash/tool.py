"""The Bash tool: run a shell command in the project, with a verdict on what it may do first.

What the runtime learns before running (all from parsing in this package, never by regex):
read-only commands run without a prompt and in parallel with other reads; destructive ones are
flagged in the approval prompt; compound commands are split so a permission rule must cover every
part. The model gets the merged output (capped, the full text in a file), "Exit code N" on failure,
and a note when the shell's directory was reset."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ipy_agent.contract.checkpoints import watching
from ipy_agent.contract.decision import UNDECIDED, CallDecision
from ipy_agent.contract.tool import BackgroundTask, PermissionCheck, PermissionPreview, RuleSubject, Tool, ToolStatus
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.history.blocks import ToolResultBlock
from ipy_agent.permissions.rules import builtin_specs, part_matches
from ipy_agent.runtime.budget import spill_file_name

from .background import finished_note, shells_of, start_background
from .contain import contained_run
from .core import core_read_only
from .deny import denied_read
from .destructive import destructive_reasons
from .notes import availability_note, exit_one_meaning, status_text
from .process import OUTPUT_LIMIT
from .protected_writes import protected_write
from .sandbox import sandbox_usable
from .subject import command_part, command_subject
from .syntax import simple_commands
from .verdict import is_read_only_command, only_hidden_words
from .workdirs import inside_working_dirs, leaves_working_dirs, start_cwd
from .wrappers import unwrap

__all__ = ["BashInput", "BashOutput", "BashTool"]

DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 600_000

# Programs whose rule is more useful with their subcommand: `Bash(git diff:*)`, not `Bash(git:*)`.
_WITH_SUBCOMMAND = frozenset(
    "git npm pnpm yarn bun npx cargo go docker kubectl pip pip3 uv poetry make gh conda dotnet".split()
)
_DETAIL_LINES = 20  # of output under the person's compact line
_INTERPRETERS = frozenset("python python3 node ruby perl bash sh".split())
# Never the first word of a suggested prefix rule: they run whatever follows them.
_NEVER_PREFIX = frozenset({"env", "sudo", "doas", "xargs"})


class BashInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    command: str = Field(description="The shell command to run (bash syntax).")
    timeout: int = Field(
        default=DEFAULT_TIMEOUT_MS,
        ge=1,
        le=MAX_TIMEOUT_MS,
        description=f"Milliseconds before the command is stopped (default {DEFAULT_TIMEOUT_MS}, max {MAX_TIMEOUT_MS}).",
    )
    description: str | None = Field(
        default=None,
        description="What the command does, in 5-10 words, for the person watching.",
    )
    run_in_background: bool = Field(
        default=False,
        description="Start the command and return its id at once, without waiting (a server, a long training "
        "run or test suite); read its output later with BashOutput, stop it with KillShell.",
    )
    dangerouslyDisableSandbox: bool = Field(
        default=False,
        description="Set only after a command failed because the read-only sandbox stopped it: the person is then "
        "asked to approve running it outside the sandbox.",
    )

    @field_validator("timeout", mode="before")
    @classmethod
    def _timeout_in_range(cls, v: Any) -> Any:
        if isinstance(v, int) and not isinstance(v, bool) and not 1 <= v <= MAX_TIMEOUT_MS:
            raise ValueError(
                f"timeout {v!r} ms is outside 1..{MAX_TIMEOUT_MS} (10 minutes); pass a value in that range "
                f"or leave it out for the default of {DEFAULT_TIMEOUT_MS} ms"
            )
        return v


@dataclass(frozen=True)
class BashOutput:
    command: str
    output: str
    exit_code: int | None
    timed_out: bool = False
    timeout_ms: int = DEFAULT_TIMEOUT_MS
    lines: int = 0
    spill_path: str | None = None
    exit_one_meaning: str | None = None  # set when exit 1 is an answer, not a failure
    background_id: str | None = None  # started in the background under this id (nothing ran to its end yet)
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def is_error(self) -> bool:
        return self.timed_out or (self.exit_code not in (0, None) and self.exit_one_meaning is None)


_SANDBOX_BULLET = """\
- A command that runs without asking runs in a read-only sandbox: no writes outside a private \
/tmp, no network, an empty HOME, nothing it starts in the background outlives the call. A command \
a permission rule or the mode allows (not the person) runs in a sandbox too, where only the working \
directories are writable. In both, files the person denied are hidden, Unix sockets cannot be \
opened, and memory and processes are limited. If a command fails because of that, the result says \
so; call it again with `dangerouslyDisableSandbox: true` only when it really must write elsewhere \
or connect: the person is then asked first.
"""
_NO_SANDBOX_BULLET = """\
- There is no OS sandbox here, so only plain reading commands (cat, head, ls, grep, wc, diff ...) \
run without asking; anything else, even if it only reads, asks the person first.
"""

DESCRIPTION = f"""\
Run a bash command in the project and get back its output (stdout and stderr merged, in the \
order they were written) and its exit code.

Use it for what only a shell can do: run tests and builds, git, package managers, scripts. For \
reading, searching and listing files use the dedicated tools instead of cat/head/tail, grep/rg and \
find/ls: Read, Grep and Glob return structured, numbered results, are checked against the \
person's file permission rules, and keep within output budgets, while shell output is cut at \
{OUTPUT_LIMIT:,} characters.

- Each call starts a fresh shell: environment variables and functions do not carry over. The \
working directory does carry over while it stays inside the project's working directories; a \
`cd` elsewhere is undone after the call, with a note. Prefer absolute paths over `cd`.
- Quote paths that contain spaces or special characters with double quotes: cd "my dir".
- Steps that depend on each other go in one call joined with `&&` (a failure stops the rest); \
independent commands go in separate tool calls in the same message, which may run in parallel.
- stdin is empty: interactive prompts get no answer, so pass non-interactive flags (`-y`, \
`--no-edit`, `git --no-pager`).
- timeout is in milliseconds: {DEFAULT_TIMEOUT_MS:,} (2 minutes) by default, at most \
{MAX_TIMEOUT_MS:,} (10 minutes). On timeout the command and every process it started are \
stopped. A server, a watcher or a long run goes in the background: `run_in_background: true` \
returns an id at once (the timeout does not apply); read what it printed since the last read with \
BashOutput, stop it with KillShell; you are told when it ends. Do not poll it in a loop with sleep.
- A non-zero exit status is reported as an error starting with "Exit code N". Exit status 1 of \
grep, rg, diff, cmp, find and test as the last command is an answer ("no match", "they differ"), \
not an error.
- Output longer than {OUTPUT_LIMIT:,} characters is cut in the middle; the full text is saved \
to a file whose path is given, which you can Read with offset/limit or Grep.
- Commands that only read (ls, git status, git diff, grep ...) run without asking; anything else \
may need the person's approval, so write one clear command rather than many small ones.
{_SANDBOX_BULLET}- A command that names a file the person denied with a Read rule (e.g. `cat .env` under \
Read(**/.env)) is refused in every mode; ask the person instead of working around it. While \
such rules exist, a command whose file names are only known when it runs (`cat $F`, xargs input) \
needs approval even when it only reads.

Git safety: never force-push, never skip hooks (--no-verify), never rewrite published history \
or run `git reset --hard` unless the person asks for exactly that, because those lose work that \
cannot be recovered. Commit only when asked; then stage the specific files, and write a message \
that says why.
"""


class BashTool(Tool[BashInput, BashOutput]):
    name = "Bash"
    input_model = BashInput
    max_result_chars = OUTPUT_LIMIT + 5_000  # room for "Exit code N" and notes around the capped output
    kind = "execute"
    offered_in_simple_mode = True

    def description(self, ctx: ToolContext) -> str:
        if sandbox_usable(ctx):
            return DESCRIPTION
        # No sandbox here: do not promise one (and say what still runs unasked).
        return DESCRIPTION.replace(_SANDBOX_BULLET, _NO_SANDBOX_BULLET)

    def status(self, ctx: ToolContext) -> ToolStatus:
        text, warning = status_text(ctx)
        return ToolStatus(text=text, warning=warning)

    # --- runtime control ---------------------------------------------------------------------
    async def validate_input(self, inp: BashInput, ctx: ToolContext) -> str | None:
        if not inp.command.strip():
            return "The command is empty: put the shell command to run in `command`."
        return None

    def _read_only(self, inp: BashInput) -> bool:
        # Asking to leave the sandbox is asking for approval: never a read-only call then.
        return not inp.dangerouslyDisableSandbox and is_read_only_command(inp.command)

    def _concurrency_safe(self, inp: BashInput) -> bool:
        return self._read_only(inp)

    def _destructive(self, inp: BashInput) -> bool:
        return bool(destructive_reasons(inp.command))

    def cancels_siblings_on_error(self, inp: BashInput) -> bool:
        # A failed build or install usually breaks the calls after it; a failed read does not.
        return not self.is_read_only(inp)

    def rule_subject(self, inp: BashInput, ctx: ToolContext) -> RuleSubject:
        return command_subject(inp.command)

    async def check_permissions(self, inp: BashInput, ctx: ToolContext) -> PermissionCheck:
        try:
            return await self._check_permissions(inp, ctx)
        except Exception as e:  # a checker bug asks; it never allows
            return PermissionCheck(behavior="ask", message=f"the command could not be checked ({type(e).__name__})")

    async def _check_permissions(self, inp: BashInput, ctx: ToolContext) -> PermissionCheck:
        # A file a Read deny rule covers stays unread whatever the command and the mode: this
        # deny comes before the mode is consulted, so bypassPermissions cannot lift it.
        # The built-in credential rules name their paths, which the sandbox masks: a command
        # that runs sandboxed needs no doubt about them (a word naming one is still denied).
        masked = builtin_specs() if sandbox_usable(ctx) else frozenset()
        read = await asyncio.to_thread(denied_read, inp.command, str(start_cwd(ctx)), ctx, masked=masked)
        if read is not None and read.rule:
            who = (
                "a built-in rule keeps credential stores from every tool (the person can lift it with an allow "
                "rule naming the file)"
                if read.rule[len("Read(") : -1] in builtin_specs()
                else "the person keeps that file from every tool"
            )
            return PermissionCheck(
                behavior="deny",
                message=f"the command names {read.path!r}, which the rule {read.rule} denies: {who}, so do not look "
                "for another way to read it; ask the person if you need it",
            )
        sandboxed = sandbox_usable(ctx)
        if read is not None:
            # With a sandbox, the denied files are masked for whatever runs without a person
            # (a rule, a mode); without one, only a person may let such a command run.
            return PermissionCheck(behavior="ask", always=not sandboxed, message=read.unsure)
        if inp.dangerouslyDisableSandbox and sandboxed:
            # Leaving the sandbox is for a person to allow: no rule, hook or mode does it.
            return PermissionCheck(
                behavior="ask",
                always=True,
                message="the command asks to run outside the sandbox (dangerouslyDisableSandbox)",
            )
        if not self.is_read_only(inp):
            # A reading command with a word only the shell knows (`cat $F`): say so.
            if hidden := only_hidden_words(inp.command):
                return PermissionCheck(behavior="ask", message=hidden)
            # Writing a git hook, a settings file or ~/.bashrc turns one approval into code that
            # runs later unasked: such commands ask in every mode and whatever the allow rules say.
            if protected := await asyncio.to_thread(protected_write, inp.command, ctx, str(start_cwd(ctx))):
                return PermissionCheck(behavior="ask", always=True, message=protected)
            return PermissionCheck()
        if not sandboxed and not core_read_only(inp.command):
            # Nothing would catch a classifier mistake: only the core runs without asking.
            return PermissionCheck(behavior="ask", message=availability_note(ctx) or "no OS sandbox")
        reason = leaves_working_dirs(inp.command, start_cwd(ctx), ctx)
        if reason is None:
            return PermissionCheck(behavior="allow", message="read-only command")
        if ctx.permission_mode == "bypassPermissions":
            return PermissionCheck()
        return PermissionCheck(behavior="ask", message=reason)

    def suggest_rule(self, inp: BashInput, ctx: ToolContext) -> str:
        """`Bash(<program>[ <subcommand>]:*)` for the first simple command.

        For a compound command this covers only its first part, so "always allow" on
        `cd x && make` still leaves `make` to be approved on its own: a rule for the whole
        line would be too broad, one per part is the person's choice to make."""
        cmds = simple_commands(inp.command)
        first = cmds[0] if cmds else None
        if first is None or first.name is None or first.name.text is None:
            return f"Bash({inp.command.strip()})"
        head = first.name
        exact = f"Bash({first.text})"
        # `timeout 60 pytest` earns `Bash(pytest:*)`: a rule on the wrapper would allow
        # `timeout 1 rm -rf ~`. env, sudo and xargs change what runs, so only the exact command.
        wrappers, real = unwrap([head, *first.args])
        if set(wrappers) & _NEVER_PREFIX or not real or real[0].text is None or real[0].text in _NEVER_PREFIX:
            return exact
        name = real[0].text or ""
        args = [a.text or "" for a in real[1:]]
        words = 1
        if name in _WITH_SUBCOMMAND or name in _INTERPRETERS:
            if not args or (args[0].startswith("-") and args[0] != "-m") or args[0] == "-c":
                return exact
            words = 3 if args[0] == "-m" or (args[0] == "run" and len(args) > 1) else 2
        before = [w.source for w in (head, *first.args)][: len(first.args) + 1 - len(real)]
        start = len(_source_prefix(first.text, before)) if before else 0
        prefix = _source_prefix(first.text[start:], [w.source for w in real][:words]).strip()
        # The rule must cover the command it was suggested for (the runtime looks through
        # `timeout`, `nice`, `time`... but not through every spelling of their options).
        return f"Bash({prefix}:*)" if part_matches(f"{prefix}:*", command_part(first)) else exact

    async def preview(self, inp: BashInput, ctx: ToolContext) -> PermissionPreview:
        try:
            notes = tuple(f"destructive: {r}" for r in destructive_reasons(inp.command))
        except Exception:  # a warning that cannot be computed is a warning
            notes = ("destructive: the command could not be checked for destructive parts",)
        return PermissionPreview(
            title="Run a shell command", command=inp.command, description=inp.description, notes=notes
        )

    # --- execution -------------------------------------------------------------------------
    async def call(self, inp: BashInput, ctx: ToolContext, decision: CallDecision = UNDECIDED) -> BashOutput:
        cwd = start_cwd(ctx)
        if inp.run_in_background:
            shell = await start_background(
                inp.command,
                cwd,
                ctx,
                decision,
                description=inp.description or "",
                unsandboxed=inp.dangerouslyDisableSandbox,
            )
            text = (
                f"Command running in background with ID: {shell.id}. Its output is being written to: {shell.log_path}"
            )
            return BashOutput(command=inp.command, output=text, exit_code=None, background_id=shell.id)
        spill = None
        if ctx.spill_dir is not None:
            spill = Path(ctx.spill_dir) / spill_file_name(ctx.tool_use_id or uuid.uuid4().hex, prefix="bash-")
        async with watching(ctx.checkpoints if decision.approved else None, ctx.all_dirs(), inp.command):
            run, notes = await contained_run(
                inp.command, cwd, inp.timeout / 1000, spill, ctx, decision, unsandboxed=inp.dangerouslyDisableSandbox
            )
        if run.final_cwd is not None and inside_working_dirs(Path(run.final_cwd), ctx):
            ctx.session["bash_cwd"] = run.final_cwd
        elif run.final_cwd is not None:
            ctx.session["bash_cwd"] = str(ctx.cwd)
            notes.append(f"Shell cwd was reset to {ctx.cwd} (it had left the working directories).")
        meaning = exit_one_meaning(inp.command) if run.exit_code == 1 else None
        return BashOutput(
            command=inp.command,
            output=run.output,
            exit_code=run.exit_code,
            timed_out=run.timed_out,
            timeout_ms=inp.timeout,
            lines=run.total_lines,
            spill_path=str(run.spill_path) if run.spill_path else None,
            exit_one_meaning=meaning,
            notes=tuple(notes),
        )

    def map_result(self, output: BashOutput, tool_use_id: str) -> ToolResultBlock:
        body = output.output.rstrip("\n")
        if output.timed_out:
            head = (
                f"Timed out after {output.timeout_ms / 1000:g} s: the command and every process it started "
                "were stopped. Raise `timeout` (max 600000 ms) or run it with `run_in_background: true`."
            )
            text = f"{head}\n{body}" if body else head
        elif output.is_error:
            text = f"Exit code {output.exit_code}\n{body}" if body else f"Exit code {output.exit_code} (no output)"
        elif output.exit_one_meaning:
            note = f"(Exit code 1: {output.exit_one_meaning}. This is an answer, not an error.)"
            text = f"{body}\n{note}" if body else note
        else:
            text = body
        if output.notes:
            text = "\n".join([text, *output.notes]) if text else "\n".join(output.notes)
        block: ToolResultBlock = {"type": "tool_result", "tool_use_id": tool_use_id, "content": text}
        if output.is_error:
            block["is_error"] = True
        return block

    def summarize_use(self, inp: BashInput) -> str:
        if inp.description and inp.description.strip():
            return inp.description.strip()
        line = inp.command.strip().splitlines()[0] if inp.command.strip() else ""
        more = "…" if len(line) > 80 or "\n" in inp.command.strip() else ""
        return line[:79] + more if more else line

    def detail_for_person(self, inp: BashInput, output: BashOutput) -> str:
        """The command and the last lines of its output: where errors and summaries usually are."""
        lines = output.output.rstrip("\n").splitlines()
        shown = lines[-_DETAIL_LINES:]
        cut = f"... ({len(lines) - len(shown)} earlier lines)\n" if len(lines) > len(shown) else ""
        return f"$ {inp.command}\n{cut}" + "\n".join(shown)

    def background_tasks(self, ctx: ToolContext) -> Sequence[BackgroundTask]:
        return shells_of(ctx.session).tasks()

    def take_reminders(self, ctx: ToolContext) -> list[str]:
        return [finished_note(shell) for shell in shells_of(ctx.session).take_finished()]

    def summarize_result(self, output: BashOutput) -> str:
        if output.background_id:
            return f"Started in the background as {output.background_id}"
        if output.timed_out:
            return f"Timed out after {output.timeout_ms / 1000:g} s"
        return f"Exit {output.exit_code}, {output.lines} line{'s' if output.lines != 1 else ''}"


# --- helpers ------------------------------------------------------------------------------------


def _source_prefix(text: str, sources: list[str]) -> str:
    """The part of `text` up to the end of the given words, as written (spacing kept)."""
    end = 0
    for s in sources:
        at = text.find(s, end)
        if at < 0:
            break
        end = at + len(s)
    return text[:end] if end else text
