"""Which git invocations only read the repository: the git part of Bash's read-only allow-list.

git is the command agents run most, and one subcommand name covers both a read and a write
(`git branch` lists, `git branch x` creates), so each subcommand gets its own rule. Options that
would make a reading subcommand run something or write a file fail: `git -c core.pager=...`,
`--output=FILE`, `git grep -O`, `--ext-diff`, signature checks (gpg). Subcommands that reach a
remote (`fetch`, `ls-remote`, `remote show`) are not on the list. git accepts abbreviated long options, so `--out=f` counts as
`--output=f`.
"""

from __future__ import annotations

from collections.abc import Callable

from .options import Opt, flag_check, parse_options, unknown_problem
from .syntax import Word

__all__ = ["git_problem"]

_READING = frozenset(
    """status diff log show blame annotate ls-files ls-tree rev-parse describe shortlog grep
    cat-file rev-list merge-base name-rev whatchanged show-ref count-objects diff-tree diff-files
    diff-index for-each-ref version check-ignore cherry show-branch
    range-diff""".split()
)
_GLOBAL_FLAGS = frozenset({"--no-pager", "-P", "--no-optional-locks", "--literal-pathspecs", "--no-replace-objects"})
_WRITE_FLAGS = ("--output", "--open-files-in-pager")
# Options of reading subcommands that run programs: an external diff (`diff.external`,
# GIT_EXTERNAL_DIFF) and gpg to check signatures.
_RUN_FLAGS = ("--ext-diff", "--show-signature")

_generic = flag_check(bad_long=_WRITE_FLAGS + _RUN_FLAGS, short_value="nUSGlL", why="writes a file or runs a program")
_grep = flag_check("O", _WRITE_FLAGS, short_value="efABCm", why="runs a pager command")

_BRANCH_LISTING = {
    "-a",
    "-r",
    "--all",
    "--remotes",
    "-l",
    "--list",
    "-v",
    "-vv",
    "--verbose",
    "--show-current",
    "--no-color",
    "--color",
    "--sort",
    "--format",
    "--contains",
    "--no-contains",
    "--merged",
    "--no-merged",
    "--points-at",
    "-i",
    "--ignore-case",
    "--column",
    "--no-column",
    "--abbrev",
    "--no-abbrev",
    "--omit-empty",
    "-q",
    "--quiet",
}
_BRANCH_IMPLIES_LIST = {"-l", "--list", "--contains", "--no-contains", "--merged", "--no-merged", "--points-at"}
_TAG_LISTING = {
    "-l",
    "--list",
    "-n",
    "--sort",
    "--format",
    "--contains",
    "--no-contains",
    "--merged",
    "--no-merged",
    "--points-at",
    "-i",
    "--ignore-case",
    "--column",
    "--no-column",
    "--color",
}
_CONFIG_GETTERS = {
    "--get",
    "--get-all",
    "--get-regexp",
    "--get-urlmatch",
    "-l",
    "--list",
    "--get-color",
    "--get-colorbool",
}
_CONFIG_HARMLESS = _CONFIG_GETTERS | {
    "--show-origin",
    "--show-scope",
    "--global",
    "--local",
    "--system",
    "--worktree",
    "-z",
    "--null",
    "--name-only",
    "--type",
    "--bool",
    "--int",
    "--path",
    "--includes",
    "--no-includes",
    "--default",
    "-f",
    "--file",
    "--blob",
    "--all",
}


def _split(args: list[Word]) -> tuple[set[str], list[Word]]:
    """Option names (with `-vv` kept whole) and positional words."""
    names: set[str] = set()
    positional: list[Word] = []
    for a in args:
        t = a.text or ""
        if t.startswith("-") and t != "-":
            names.add(t.partition("=")[0])
        else:
            positional.append(a)
    return names, positional


def _listing(sub: str, args: list[Word], allowed: set[str], implies_list: set[str]) -> str | None:
    names, positional = _split(args)
    extra = sorted(names - allowed)
    if extra:
        return f"git {sub} {extra[0]} changes the repository"
    if positional and not names & implies_list:
        return f"git {sub} {positional[0].text} creates or changes a {sub}"
    return None


def _config(args: list[Word]) -> str | None:
    names, positional = _split(args)
    if positional and positional[0].text in ("get", "list") and names <= _CONFIG_HARMLESS:
        return None
    if positional and positional[0].text in ("set", "unset", "rename-section", "remove-section", "edit"):
        return f"git config {positional[0].text} changes configuration"  # whatever flags come with it
    # git config reads options only up to its first operand: in `git config user.email --get`,
    # `--get` is the value user.email is set to.
    if not _config_leading_options(args) & _CONFIG_GETTERS or not names <= _CONFIG_HARMLESS:
        return "git config without --get or --list before the name can change configuration"
    return None


_CONFIG_VALUED = {"--type", "--default", "-f", "--file", "--blob"}


def _config_leading_options(args: list[Word]) -> set[str]:
    """The option names before git config's first operand (values of `--file x` skipped)."""
    names: set[str] = set()
    i = 0
    while i < len(args):
        t = args[i].text or ""
        if not t.startswith("-") or t in ("-", "--"):
            break
        name = t.partition("=")[0]
        names.add(name)
        i += 2 if name in _CONFIG_VALUED and "=" not in t else 1
    return names


def _subcommand_only(sub: str, args: list[Word], allowed: tuple[str | None, ...]) -> str | None:
    _names, positional = _split(args)
    first = positional[0].text if positional else None
    if first in allowed:
        # `git stash show` and `git reflog` take diff and log options, `--output=FILE` included.
        return _generic(f"git {sub}", args)
    return f"git {sub} {first or ''} changes the repository".replace("  ", " ")


def git_problem(args: list[Word]) -> str | None:
    """None when `git <args>` only reads; otherwise why not."""
    if problem := unknown_problem(args):
        return problem
    i, problem = _global_flags(args)
    if i < 0 or problem:
        return problem
    if i >= len(args):
        return "git without a subcommand"
    if signed := next((a.text for a in args if "%G" in (a.text or "")), None):
        return f"git {signed} checks signatures, which runs gpg"
    sub, rest = args[i].text or "", args[i + 1 :]
    if sub in _READING:
        return _grep("git grep", rest) if sub == "grep" else _generic(f"git {sub}", rest)
    check = _SUBCOMMANDS.get(sub)
    return check(sub, rest) if check is not None else f"git {sub} is not a read-only git subcommand"


def _global_flags(args: list[Word]) -> tuple[int, str | None]:
    """Where the subcommand starts after git's own options, or (-1, None) for `git --version`
    alone, or a reason when an option may run commands or is unknown."""
    i = 0
    while i < len(args) and (args[i].text or "").startswith("-"):
        flag = args[i].text or ""
        if flag == "--version" and len(args) == 1:
            return -1, None
        if flag == "-C" and i + 1 < len(args):
            i += 2
            continue
        if flag in _GLOBAL_FLAGS:
            i += 1
            continue
        if flag.startswith(("-c", "--config-env", "--exec-path")):
            return i, f"git {flag} sets configuration that can run commands (pager, aliases, diff drivers)"
        return i, f"git option {flag} is not known to be read-only"
    return i, None


def _remote(sub: str, rest: list[Word]) -> str | None:
    if any(
        isinstance(o, Opt) and o.name not in ("-v", "--verbose", "-n", "--push", "--all") for o in parse_options(rest)
    ):
        return "git remote option is not known to be read-only"
    if any(a.text == "show" for a in rest) and not any(a.text == "-n" for a in rest):
        return "git remote show contacts the remote (only `git remote show -n` stays local)"
    return _subcommand_only(sub, rest, (None, "get-url", "show"))


# Subcommands that read only in some of their forms, each with the check of its arguments.
_SUBCOMMANDS: dict[str, Callable[[str, list[Word]], str | None]] = {
    "branch": lambda sub, rest: _listing(sub, rest, _BRANCH_LISTING, _BRANCH_IMPLIES_LIST),
    "tag": lambda sub, rest: _listing(sub, rest, _TAG_LISTING, {"-l", "--list"}),
    "config": lambda sub, rest: _config(rest),
    "remote": _remote,
    "stash": lambda sub, rest: _subcommand_only(sub, rest, ("list", "show")),
    "reflog": lambda sub, rest: _subcommand_only(sub, rest, (None, "show", "exists")),
    "worktree": lambda sub, rest: _subcommand_only(sub, rest, ("list",)),
    "submodule": lambda sub, rest: _subcommand_only(sub, rest, ("status",)),
}
