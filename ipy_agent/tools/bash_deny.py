"""Bash and Read deny rules: a shell command that names a denied file does not run.

A `Read(**/.env)` rule is the person saying "no tool reads this file". Read and the searches
honour it by path; without this module `cat .env` would be a read-only command that runs with no
prompt at all (anthropics/claude-code#6002). So before Bash runs anything, every word of the
command that may be a path is resolved (against the shell's directory, and the directories its
`cd`s go to) and checked with `ToolContext.is_read_denied`. A match is a deny, not a question:
the rule is explicit, and it wins in every mode, bypassPermissions included.

What this can and cannot see, so nobody reads more into it:
- paths written in the command: arguments, `--opt=path`, `< path`, a command run by its path,
  globs (expanded here as the shell would), words inside `$(...)` and backticks;
- not paths that only exist when the shell runs (`"$HOME/x"`, `$(ls)` output) and not files a
  program opens by itself: `grep -r KEY .` names no denied file, and ripgrep-level filtering of
  what a program walks is out of reach of a permission check.
Where a command's directory is not certain (`(cd a; cat x); cat y`), a relative path is checked
against every directory the command may be in: refusing one harmless command is cheaper than
leaking a file.
"""

from __future__ import annotations

import glob
import os
import shlex

from ..runtime.tool import ToolContext
from .bash_parse import SimpleCommand, Word, analyze

__all__ = ["NO_PATH_ARGS", "denied_read"]

# Arguments of these are text, never files they read (`echo .env >> .gitignore` is fine).
# Wrappers that run another command (env, command, nice, timeout, xargs) are not here on purpose.
NO_PATH_ARGS = frozenset(
    "echo printf which type date true false sleep seq expr uname id whoami printenv pwd basename dirname".split()
)
# Their first operand is a pattern or a script, unless `-e` / `-f` (alone or in a cluster such as
# `-ie`) or one of these long flags supplies it; then every operand is checked.
_PATTERN_FIRST = frozenset("grep egrep fgrep rg ag ack sed awk gawk".split())
_PATTERN_FLAGS = ("--regexp", "--file", "--expression")
_MAX_GLOB_MATCHES = 1000  # a glob over a huge folder: the first thousand names are checked


def denied_read(command: str, start: str, ctx: ToolContext) -> tuple[str, str] | None:
    """(the path as written, the rule) for the first path in `command` a Read deny rule covers."""
    if not ctx.read_deny:
        return None
    try:
        a = analyze(command)
    except Exception:  # the parser failing must not let the command through unchecked
        return _check_words(_loose_words(command), [start], ctx)
    # Every command node, those inside $(...) and loops included, in source order.
    cmds = list(a.commands) if not a.structure_problem else list(reversed(a.everything))
    dirs = _directories(cmds, start)
    words: list[Word] = []
    for cmd in cmds:
        words += _path_words(cmd)
    words += [r.target for r in a.redirects if r.op in ("<", "<>") and r.target is not None]
    found = _check_words([w.text for w in words if w.text is not None], dirs, ctx)
    if found is None and a.structure_problem:
        # Parse errors and hidden commands: also try every word of the line, as a shell might split it.
        found = _check_words(_loose_words(command), dirs, ctx)
    return found


def _directories(cmds: list[SimpleCommand], start: str) -> list[str]:
    """The start directory and every `cd` target the command may reach, resolved in order."""
    dirs, cur = [start], start
    for cmd in cmds:
        if cmd.name is None or cmd.name.text != "cd":
            continue
        target = next((w.text for w in cmd.args if w.text and not w.text.startswith("-")), None)
        if target is None:
            continue  # `cd`, `cd $X`: not knowable here; the other directories are still checked
        cur = os.path.normpath(os.path.join(cur, os.path.expanduser(target)))
        dirs.append(cur)
    return dirs


def _path_words(cmd: SimpleCommand) -> list[Word]:
    """The words of one simple command that may name a file it reads."""
    name = cmd.name.text if cmd.name else None
    if name in NO_PATH_ARGS or name == "cd":
        return []
    words: list[Word] = []
    if cmd.name is not None and name and "/" in name:
        words.append(cmd.name)  # `./secrets/run.sh` reads the script to run it
    skip_pattern = name in _PATTERN_FIRST and not any(_supplies_pattern(w.text or "") for w in cmd.args)
    for w in cmd.args:
        text = w.text
        if text is None:
            continue
        if text.startswith("-"):
            if text.startswith("--") and "=" in text:
                words.append(Word(source=w.source, text=text.split("=", 1)[1], glob=w.glob))
            continue
        if skip_pattern:
            skip_pattern = False
            continue
        words.append(w)
    return words


def _supplies_pattern(flag: str) -> bool:
    if flag.startswith("--"):
        return flag.split("=", 1)[0] in _PATTERN_FLAGS
    return flag.startswith("-") and bool(set(flag[1:]) & {"e", "f"})


def _check_words(words: list[str], dirs: list[str], ctx: ToolContext) -> tuple[str, str] | None:
    for text in words:
        if not text or text.startswith("/dev/"):
            continue
        expanded = os.path.expanduser(text)
        bases = [""] if os.path.isabs(expanded) else dirs
        for base in bases:
            path = os.path.join(base, expanded)
            for candidate in [path, *_expand(path)]:
                rule = ctx.is_read_denied(candidate)
                if rule is not None:
                    return text, rule
    return None


def _expand(path: str) -> list[str]:
    if not glob.has_magic(path):
        return []
    out: list[str] = []
    for match in glob.iglob(path, recursive=True):
        out.append(match)
        if len(out) >= _MAX_GLOB_MATCHES:
            break
    return out


def _loose_words(command: str) -> list[str]:
    """A conservative split for lines the parser could not take apart: quotes honoured, shell
    operators and substitution marks dropped, every remaining word treated as a possible path."""
    flat = command.replace("`", " ").replace("$(", " ( ")
    try:
        lexer = shlex.shlex(flat, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        words = list(lexer)
    except ValueError:  # an unclosed quote
        words = flat.replace('"', " ").replace("'", " ").split()
    out = []
    for w in words:
        if w.startswith("-"):
            w = w.split("=", 1)[1] if w.startswith("--") and "=" in w else ""
        if w and not set(w) <= set("();<>|&$"):
            out.append(w)
    return out
