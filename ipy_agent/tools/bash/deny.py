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
import re
import shlex
from collections import Counter
from dataclasses import dataclass, replace

from ipy_agent.base.gitignore import is_exception
from ipy_agent.contract.tool_context import ToolContext, realpath_via

from .options import PATTERN_FIRST, path_candidates, supplies_pattern
from .syntax import SimpleCommand, Word, analyze
from .wrappers import program_name, unwrap

__all__ = ["NO_PATH_ARGS", "ReadCheck", "denied_read"]

# Arguments of these are text, never files they read (`echo .env >> .gitignore` is fine).
# Wrappers that run another command (env, command, nice, timeout, xargs) are not here on purpose.
NO_PATH_ARGS = frozenset(
    "echo printf which type true false sleep seq expr uname id whoami printenv pwd basename dirname".split()
)
# `$X`, `${X...}`, `$(...)` (one level of nested parentheses), backticks, `$1`, `$@`...
_EXPANSION = re.compile(r"\$\{[^}]*\}|\$\((?:[^()]|\([^()]*\))*\)|`[^`]*`|\$[A-Za-z_][A-Za-z0-9_]*|\$[0-9@*#?$!-]")
_GIT_STAGE = re.compile(r"^:[0-3]:|^:")  # `:0:path` (a stage of the index), `:path` (the index)
_BRACES = re.compile(r"\{([^{}]*,[^{}]*)\}")
_MAX_BRACES = 8  # brace lists expanded per word; the doubt still asks about the rest
_MAX_GLOB_MATCHES = 1000  # a glob over a huge folder: the first thousand names are checked
_LIST_FROM = 8  # words naming one directory from which it is listed once rather than lstat-ed per word


@dataclass(frozen=True)
class ReadCheck:
    """A deny (`rule` set: the word as written and the rule covering it), or a doubt (`unsure`:
    the command may read a denied file that no word of it names before the shell runs)."""

    path: str = ""
    rule: str = ""
    unsure: str = ""


def denied_read(
    command: str, start: str, ctx: ToolContext, *, masked: frozenset[str] = frozenset()
) -> ReadCheck | None:
    """The first path in `command` a Read deny rule covers; else a doubt when an argument of a
    program that reads files is only known when the shell runs and a rule could cover what it
    names; else None. `masked`: specifiers the OS sandbox will mask for this command, which
    need no doubt (a deny is still a deny)."""
    if not ctx.read_deny:
        return None
    try:
        a = analyze(command)
    except Exception:  # the parser failing must not let the command through unchecked
        found = _check_words(_loose_words(command), [start], ctx)
        return ReadCheck(*found) if found else ReadCheck(unsure="the command could not be parsed")
    # Every command node, those inside $(...) and loops included, in source order.
    cmds = list(a.commands) if not a.structure_problem else list(reversed(a.everything))
    dirs = _directories(cmds, start)
    # `echo .env | xargs cat`: what xargs runs gets its operands from the other commands, so
    # every word of the line may be a path, `echo`'s included.
    xargs = any(_feeds_xargs(cmd) for cmd in cmds)
    words: list[Word] = []
    git_paths: list[str] = []
    for cmd in cmds:
        w, g = _path_words(cmd, every_word=xargs)
        words += w
        git_paths += g
    words += [r.target for r in a.redirects if r.op in ("<", "<>") and r.target is not None]
    unknown = [w for w in words if w.text is None]
    # A word only the shell knows is checked as the glob it could become (`*/.env`).
    patterns = {g: w.source for w in unknown for g in _as_globs(w.source)}
    found = (
        _check_words([w.text for w in words if w.text is not None], dirs, ctx)
        or (_check_words(git_paths, [*dirs, *_repo_roots(dirs)], ctx) if git_paths else None)
        or _check_words(list(patterns), dirs, ctx)
    )
    if found is None and a.structure_problem:
        # Parse errors and hidden commands: also try every word of the line, as a shell might split it.
        found = _check_words(_loose_words(command), dirs, ctx)
    if found is not None:
        return ReadCheck(path=patterns.get(found[0], found[0]), rule=found[1])
    return _doubt(unknown, xargs, dirs, ctx, masked)


def _doubt(
    unknown: list[Word], xargs: bool, dirs: list[str], ctx: ToolContext, masked: frozenset[str]
) -> ReadCheck | None:
    """Why a command that names no denied file may still read one, or None. A relative glob
    (`*.py`, `src/*`) names only files under the command's directories, each already checked
    as the glob expands now: it is a doubt only when a rule covers something there."""
    rules = tuple(s for s in ctx.read_deny if s not in masked)
    if not any(not is_exception(s) for s in rules):
        return None
    scoped = replace(ctx, read_deny=rules)
    inside: bool | None = None
    for w in unknown:
        if _confined(w.source):
            if inside is None:
                inside = scoped.read_deny_inside(dirs)
            if not inside:
                continue
        return ReadCheck(
            unsure=f"argument {w.source!r} is only known when the shell runs, and it may name a file a Read rule denies"
        )
    if xargs:
        return ReadCheck(
            unsure="xargs hands a program that reads files names only known when the shell runs, "
            "and they may include a file a Read rule denies"
        )
    return None


def _confined(source: str) -> bool:
    """A glob with no expansion that stays under the directory it is resolved in."""
    bare = source.replace('"', "").replace("'", "")
    return not _EXPANSION.search(source) and "`" not in source and ".." not in bare and not bare.startswith(("/", "~"))


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


def _feeds_xargs(cmd: SimpleCommand) -> bool:
    wrappers, words = unwrap([cmd.name, *cmd.args] if cmd.name else [])
    return "xargs" in wrappers and (not words or program_name(words[0]) not in NO_PATH_ARGS)


def _path_words(cmd: SimpleCommand, every_word: bool = False) -> tuple[list[Word], list[str]]:
    """The words of one simple command that may name a file it reads, and the paths in git's
    `REV:path` arguments (`git show HEAD:.env` prints the committed file)."""
    if cmd.name is None:
        return [], []
    _wrappers, real = unwrap([cmd.name, *cmd.args])
    if every_word:
        return [w for w in (cmd.name, *cmd.args) if not (w.text or "").startswith("-")], []
    name = program_name(real[0]) if real else None
    if not real or name in NO_PATH_ARGS or name == "cd":
        return [], []
    # The wrappers' own operands (`timeout 5`, `sudo -u x`) are checked too: over-careful, cheap.
    words = [w for w in cmd.args if w not in real and not (w.text or "").startswith("-")]
    if real[0].text and "/" in real[0].text:
        words.append(real[0])  # `./secrets/run.sh` reads the script to run it
    args = real[1:]
    skip_pattern = name in PATTERN_FIRST and not any(supplies_pattern(w.text or "") for w in args)
    git_paths: list[str] = []
    for w in args:
        text = w.text
        if text is not None and text.startswith("-"):
            # `--file=.env`, and `-f.env` / `-rf.env` (a value attached to a short option).
            words += [Word(source=w.source, text=value, glob=w.glob) for value in path_candidates(text)]
            continue
        if skip_pattern:
            skip_pattern = False
            continue
        words.append(w)
        if name == "git" and text and ":" in text:
            git_paths.append(_GIT_STAGE.sub("", text.split(":", 1)[1] if not text.startswith(":") else text))
    return words, git_paths


def _check_words(words: list[str], dirs: list[str], ctx: ToolContext) -> tuple[str, str] | None:
    """The first word (as written) that names a file a Read deny rule covers, with the rule."""
    wanted: list[tuple[str, str]] = []  # (the word, an absolute normalised path it may name)
    bases = [os.path.normpath(os.path.join(str(ctx.cwd), d)) for d in dirs]
    for text in words:
        if not text or text.startswith("/dev/"):
            continue
        expanded = os.path.expanduser(text) if text.startswith("~") else text
        for base in [""] if expanded.startswith("/") else bases:
            path = _joined(base, expanded)
            wanted.append((text, path))
            if glob.has_magic(path):
                wanted += [(text, os.path.normpath(m)) for m in _expand(path)]
    links = _Links([path for _, path in wanted])
    denied_by = ctx.read_deny_matcher()
    for text, path in wanted:
        real = links.real(path)
        rule = denied_by([path] if real == path else [path, real])
        if rule is not None:
            return text, rule
    return None


def _joined(base: str, word: str) -> str:
    """normpath(join(base, word)) for an absolute normalised `base`; a plain relative word
    (no `.`, `..` or doubled slash in it: most of them) needs only the join."""
    if base and word and not word.startswith(".") and "/." not in word and "//" not in word and not word.endswith("/"):
        return base + word if base.endswith("/") else base + "/" + word
    return os.path.normpath(os.path.join(base, word))


class _Links:
    """Where each of many paths really leads (`cat link-to-.env` reads .env), with one realpath
    per directory and, for a directory many words name, one listing instead of an lstat per
    word: a 10 KB command names hundreds of files, and a check per word must stay cheap."""

    def __init__(self, paths: list[str]) -> None:
        self._real_dirs: dict[str, str] = {}
        per_dir = Counter(p.rpartition("/")[0] or "/" for p in paths)
        # A listing costs about one lstat per 8 entries; past 8 entries per word it is dearer.
        self._links = {d: _symlinks_in(d, 8 * n) for d, n in per_dir.items() if n >= _LIST_FROM}

    def real(self, path: str) -> str:
        head, _, tail = path.rpartition("/")
        head = head or "/"
        links = self._links.get(head)
        if links is None or not tail or tail in (".", ".."):
            return realpath_via(path, self._real_dirs)
        if tail in links:
            return os.path.realpath(path)
        real_head = self._real_dirs.get(head)
        if real_head is None:
            real_head = self._real_dirs[head] = os.path.realpath(head)
        return path if real_head == head else os.path.join(real_head, tail)


def _symlinks_in(directory: str, most: int) -> set[str] | None:
    """The names of the symlinks in `directory` (none in one that does not exist), or None
    when it has more than `most` entries or cannot be listed: then each path is lstat-ed."""
    found: set[str] = set()
    try:
        with os.scandir(directory) as entries:
            for count, entry in enumerate(entries):
                if count >= most:
                    return None
                if entry.is_symlink():
                    found.add(entry.name)
    except (FileNotFoundError, NotADirectoryError):
        return found  # nothing can exist there, links included
    except OSError:
        return None
    return found


def _repo_roots(dirs: list[str]) -> list[str]:
    """The git work trees `dirs` are in: `REV:path` is relative to the top of the repository."""
    roots: list[str] = []
    for d in dirs:
        cur = os.path.abspath(d)
        while not os.path.exists(os.path.join(cur, ".git")) and os.path.dirname(cur) != cur:
            cur = os.path.dirname(cur)
        if os.path.exists(os.path.join(cur, ".git")) and cur not in roots:
            roots.append(cur)
    return roots


def _as_globs(source: str) -> list[str]:
    """The shell word as globs: each expansion may become anything, quotes go, and a brace
    list gives one glob per choice (`.e{n,x}v` is `.env` and `.exv`)."""
    globs = [_EXPANSION.sub("*", source).replace('"', "").replace("'", "")]
    for _ in range(_MAX_BRACES):
        m = next((m for g in globs if (m := _BRACES.search(g))), None)
        if m is None:
            break
        g = m.string
        globs.remove(g)
        globs += [g[: m.start()] + choice + g[m.end() :] for choice in m.group(1).split(",")]
    return globs


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
