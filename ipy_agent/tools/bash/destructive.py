"""Commands that lose work for good, so the approval prompt can say so before anyone clicks.

A warning, not a guard: a command this misses still goes through the permission prompt like any
other write. Wrappers (`sudo`, `xargs`, `env`...) are looked through and `bash -c '...'` is
parsed, since that is where a careless `rm -rf` usually hides. `> file` is not flagged: whether
it truncates anything depends on a file existing, which a verdict on text cannot know.
"""

from __future__ import annotations

import functools

from .options import Opt, parse_options
from .syntax import SimpleCommand, Word, analyze
from .wrappers import SHELLS, program_name, unwrap

__all__ = ["destructive_problem", "destructive_reasons"]


def destructive_reasons(command: str) -> list[str]:
    """Why the approval prompt should call this command dangerous; [] when nothing stands out."""
    return list(_destructive_reasons(command))


@functools.lru_cache(maxsize=256)  # asked per call by the lifecycle, the preview and the trace
def _destructive_reasons(command: str) -> tuple[str, ...]:
    reasons: list[str] = []
    for cmd in analyze(command).everything:
        reason = destructive_problem(cmd)
        if reason and reason not in reasons:
            reasons.append(reason)
    return tuple(reasons)


def _has_short(args: list[Word], letters: str, long: tuple[str, ...] = ()) -> bool:
    for item in parse_options(args):
        if isinstance(item, Opt) and ((len(item.name) == 2 and item.name[1] in letters) or item.name in long):
            return True
    return False


def destructive_problem(cmd: SimpleCommand) -> str | None:
    """A short reason when the command destroys data or history for good, else None."""
    # Look through wrappers: `sudo rm -rf x`, `xargs rm -r`, `env FOO=1 git push -f`, `/bin/rm`.
    _wrappers, words = unwrap([cmd.name, *cmd.args] if cmd.name else [])
    if not words:
        return None
    name, args = program_name(words[0]) or "", words[1:]
    texts = [a.text or "" for a in args]
    if name in SHELLS and "-c" in texts:
        script = texts[texts.index("-c") + 1] if texts.index("-c") + 1 < len(texts) else ""
        inner = destructive_reasons(script) if script else []
        return inner[0] if inner else None
    if name == "rm" and _has_short(args, "rR", ("--recursive",)):
        return "rm -r deletes whole directory trees"
    if name in ("shred", "mkfs", "wipefs") or name.startswith("mkfs."):
        return f"{name} destroys data beyond recovery"
    if name == "dd":
        return "dd overwrites whatever of= names"
    if name == "truncate":
        return "truncate cuts files to a size"
    if name in ("chmod", "chown", "chgrp") and _has_short(args, "R", ("--recursive",)):
        return f"{name} -R changes every file in a tree"
    if name == "find" and any(t in ("-delete",) for t in texts):
        return "find -delete deletes every match"
    if name == "find" and any(t in ("-exec", "-execdir") for t in texts) and "rm" in texts:
        return "find -exec rm deletes every match"
    if name == "git":
        return _git_destructive(texts)
    return None


def _git_destructive(texts: list[str]) -> str | None:
    sub = next((t for t in texts if not t.startswith("-")), "")
    rest = texts[texts.index(sub) + 1 :] if sub else []
    if sub == "push" and (
        any(t in ("-f", "--force", "--mirror", "--delete", "-d") or t.startswith("--force") for t in rest)
        or any(t.startswith("+") for t in rest)
    ):
        return "git push --force rewrites or deletes history on the remote"
    if sub == "reset" and "--hard" in rest:
        return "git reset --hard throws away uncommitted changes"
    if sub == "clean" and any(
        t == "--force" or (t.startswith("-") and not t.startswith("--") and "f" in t) for t in rest
    ):
        return "git clean -f deletes untracked files"
    if sub in ("checkout", "restore") and ("--" in rest or "." in rest or "-f" in rest or "--force" in rest):
        return f"git {sub} discards uncommitted changes to the named files"
    if sub == "branch" and any(t == "-D" or (t.startswith("-") and not t.startswith("--") and "D" in t) for t in rest):
        return "git branch -D deletes a branch even if it is not merged"
    if sub == "stash" and rest[:1] in (["drop"], ["clear"]):
        return f"git stash {rest[0]} deletes stashed changes"
    return None
