"""Programs that run another program (`env`, `sudo`, `timeout 5`, `xargs -n1`...), looked through.

A rule or a check that reads only the first word of a command sees `timeout` in
`timeout 1 rm -rf ~`, `env` in `env rm x` and `/bin/rm` in `/bin/rm x`. Everything that asks
"which program really runs, and with which arguments" goes through `unwrap`: the deny check on
paths, the working-directory check, the destructive warning, the suggested "always allow" rule,
and `normalized_commands`, which deny and ask permission rules also match.

Each wrapper's options are skipped with their values (`timeout -s KILL 5`, `sudo -u root`,
`xargs -I {}`), so the program after them is found even when an option takes a detached value.
A word only the shell knows stops the walk: what follows cannot be named.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
from dataclasses import dataclass

from .syntax import Word, analyze

__all__ = [
    "RUNNERS",
    "SHELLS",
    "TIMING_WRAPPERS",
    "WRAPPERS",
    "hidden_reason",
    "normalized_commands",
    "program_name",
    "unwrap",
]


@dataclass(frozen=True)
class _Spec:
    short_values: str = ""  # short options that take a value (`-n 5`, `-n5`)
    long_values: frozenset[str] = frozenset()  # long options whose value may be the next word
    leading: int = 0  # fixed operands before the command (timeout's duration)
    assignments: bool = False  # VAR=value words before the command (env, sudo)


WRAPPERS: dict[str, _Spec] = {
    "env": _Spec("uCS", frozenset({"--unset", "--chdir", "--split-string"}), assignments=True),
    "sudo": _Spec(
        "CDghpRrtTUu",
        frozenset(
            {
                "--close-from",
                "--chdir",
                "--group",
                "--host",
                "--prompt",
                "--chroot",
                "--role",
                "--type",
                "--command-timeout",
                "--other-user",
                "--user",
            }
        ),
        assignments=True,
    ),
    "doas": _Spec("uC"),
    "command": _Spec(),
    "builtin": _Spec(),
    "exec": _Spec("a"),
    "nice": _Spec("n", frozenset({"--adjustment"})),
    "nohup": _Spec(),
    "timeout": _Spec("sk", frozenset({"--signal", "--kill-after"}), leading=1),
    "time": _Spec("fo", frozenset({"--format", "--output"})),
    "stdbuf": _Spec("ioe", frozenset({"--input", "--output", "--error"})),
    "xargs": _Spec(
        "adEILnPs",
        frozenset(
            {
                "--arg-file",
                "--delimiter",
                "--max-args",
                "--max-procs",
                "--max-chars",
                "--process-slot-var",
                "--max-lines",
            }
        ),
    ),
}
SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh"})
# Wrappers that only time, schedule or buffer the program they run: an allow rule for
# `git status` also covers `timeout 5 git status`, never `env X=1 git status` or `sudo ...`.
TIMING_WRAPPERS = frozenset({"timeout", "time", "nice", "nohup", "stdbuf", "command", "builtin"})
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_MAX_DEPTH = 4  # `bash -c "bash -c '...'"` nesting followed for deny rules


def program_name(word: Word) -> str | None:
    """The program a command word runs, by name: `/bin/rm` and `\\rm` are both `rm`."""
    return os.path.basename(word.text) if word.text else None


def unwrap(words: list[Word], only: frozenset[str] | None = None) -> tuple[list[str], list[Word]]:
    """(the wrappers in front, in order; the real program's words). `command -v x` only looks
    a program up, so it is not looked through. With `only`, other wrappers are not either, nor
    one named by a path (`./timeout` is whatever that file is)."""
    wrappers: list[str] = []
    while words:
        name = program_name(words[0])
        spec = WRAPPERS.get(name or "")
        if (
            spec is None
            or (only is not None and (name not in only or words[0].text != name))
            or (name == "command" and len(words) > 1 and words[1].text in ("-v", "-V"))
        ):
            break
        wrappers.append(name or "")
        words = _skip_options(name or "", spec, words[1:])
    return wrappers, words


def _skip_options(name: str, spec: _Spec, words: list[Word]) -> list[Word]:
    i = 0
    while i < len(words):
        t = words[i].text
        if t is None:
            return words[i:]
        if t == "--":
            i += 1
            break
        if t.startswith("--"):
            opt, eq, value = t.partition("=")
            if name == "env" and opt == "--split-string":
                return _split_string(value if eq else _text_at(words, i + 1), words[i + (1 if eq else 2) :])
            i += 2 if (not eq and opt in spec.long_values) else 1
        elif t.startswith("-") and t != "-":
            letters = t[1:]
            step = 1
            for j, ch in enumerate(letters):
                if ch in spec.short_values:
                    attached = letters[j + 1 :]
                    if name == "env" and ch == "S":
                        return _split_string(attached or _text_at(words, i + 1), words[i + (1 if attached else 2) :])
                    step = 1 if attached else 2
                    break
            i += step
        elif spec.assignments and _ASSIGNMENT.match(t):
            i += 1
        else:
            break
    return words[i + spec.leading :]


def _text_at(words: list[Word], i: int) -> str | None:
    return words[i].text if i < len(words) else None


def _split_string(value: str | None, rest: list[Word]) -> list[Word]:
    """`env -S 'A=1 rm x'`: the string is split into words, as env does."""
    if value is None:
        return [Word(source="<env -S>", text=None)]
    try:
        parts = shlex.split(value)
    except ValueError:
        return [Word(source=value, text=None)]
    spec = _Spec(assignments=True)
    return _skip_options("env -S", spec, [Word(source=p, text=p) for p in parts] + rest)


def normalized_commands(command: str) -> list[str]:
    """Every simple command the line may run, rewritten as `program arg...` with quotes and
    backslashes removed, the path cut to the program's name and wrappers looked through:
    `env rm x`, `'rm' x`, `\\rm x` and `/bin/rm x` all give `rm x`. Bodies of `bash -c '...'`,
    `eval '...'` and `trap '...'` are split in turn, `find -exec` commands are named, and git's
    global options are dropped (`git -C x rm f` is also `git rm f`). For deny and ask rules,
    which must catch a command however it is written; never for allow rules (a rule for `rm`
    allows nothing it was not written for)."""
    return list(_runs(command, 0)[0])


def hidden_reason(command: str) -> str:
    """Why the line may run a program `normalized_commands` cannot name, or "": a program only
    known when the shell runs, a shell reading commands from its input or a file, `source`, a
    command runner not looked through, git configuration given on the command line."""
    return _runs(command, 0)[1]


# Programs that run a command they are given in a form not looked through here.
RUNNERS = frozenset(
    """watch su runuser script parallel flock chroot unshare nsenter systemd-run strace ltrace
    busybox toybox pkexec at batch setsid ionice taskset chrt fakeroot firejail""".split()
)
_FIND_RUNS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
# git's global options that take a value as the next word.
_GIT_VALUED = frozenset(
    {
        "-C",
        "-c",
        "--git-dir",
        "--work-tree",
        "--namespace",
        "--super-prefix",
        "--config-env",
        "--list-cmds",
        "--attr-source",
    }
)


@functools.lru_cache(maxsize=256)  # asked once per deny or ask rule for the same command
def _runs(command: str, depth: int) -> tuple[tuple[str, ...], str]:
    out: list[str] = []
    hidden = ""
    try:
        a = analyze(command)
    except Exception:  # a parser failure: the command may run anything
        return (), "the command could not be parsed"
    hidden = a.unseen
    for cmd in reversed(a.everything):  # `everything` runs last to first
        if cmd.name is None:
            continue
        _wrappers, words = unwrap([cmd.name, *cmd.args])
        for run in [words, *_find_exec_commands(words)]:
            spelled, why = _one_run(run, depth)
            out += spelled
            hidden = hidden or why
    return tuple(dict.fromkeys(out)), hidden


def _one_run(words: list[Word], depth: int) -> tuple[list[str], str]:
    """The spellings of one program run, and why it may run something unnamed."""
    if not words:
        return [], ""
    if words[0].text is None:
        return [" ".join(w.source for w in words)], f"the program {words[0].source!r} is only known when the shell runs"
    name = program_name(words[0]) or words[0].source
    args = words[1:]
    out = [" ".join([name, *(w.text if w.text is not None else w.source for w in args)])]
    why = ""
    if name == "git":
        sub, global_why = _git_without_globals(args)
        out += [" ".join(["git", *(w.text or w.source for w in sub)])] if sub is not args else []
        why = global_why
    elif name in ("source", "."):
        why = f"{name} runs the commands in a file"
    elif name in RUNNERS:
        why = f"{name} runs a command in a way not looked through here"
    scripts, script_why = _inner_scripts(name, args)
    why = why or script_why
    if depth < _MAX_DEPTH:
        for script in scripts:
            spelled, inner_why = _runs(script, depth + 1)
            out += spelled
            why = why or inner_why
    elif scripts:
        why = why or "commands nested this deep are not followed"
    return out, why


def _find_exec_commands(words: list[Word]) -> list[list[Word]]:
    """The commands `find ... -exec CMD ... ;` runs, each looked through its wrappers."""
    if not words or program_name(words[0]) != "find":
        return []
    runs: list[list[Word]] = []
    i = 1
    while i < len(words):
        if words[i].text in _FIND_RUNS:
            j = i + 1
            while j < len(words) and words[j].text not in (";", "+"):
                j += 1
            runs.append(unwrap(words[i + 1 : j])[1])
            i = j
        i += 1
    return runs


def _git_without_globals(args: list[Word]) -> tuple[list[Word], str]:
    """git's words from the subcommand on (`-C x`, `--no-pager` dropped), and why git may run
    something unnamed (`-c alias.x='!rm v'`, `-c core.pager=...`)."""
    i, why = 0, ""
    while i < len(args) and (args[i].text or "-").startswith("-"):
        t = args[i].text
        if t is None:
            return args, f"git option {args[i].source!r} is only known when the shell runs"
        flag = t.partition("=")[0]
        if flag in ("-c", "--config-env") or t.startswith("-c"):
            why = "git -c sets configuration that can run any program (aliases, pager, diff drivers)"
        if flag == "--exec-path" and "=" in t:
            why = "git --exec-path runs git's subcommands from another directory"
        i += 2 if (t in _GIT_VALUED) else 1
    return args[i:], why


def _inner_scripts(name: str, args: list[Word]) -> tuple[list[str], str]:
    """The command text a shell runs with `-c`, `eval` or `trap` with their words; and why the
    program may run something unnamed (a shell reading its input or a script file)."""
    texts = [a.text for a in args]
    if name == "eval":
        if any(t is None for t in texts):
            return [], "eval runs words only known when the shell runs"
        return [" ".join(t for t in texts if t is not None)], ""
    if name == "trap":
        if texts and texts[0] is None:
            return [], "trap runs a command only known when the shell runs"
        return ([texts[0]] if texts and texts[0] and not texts[0].startswith("-") else []), ""
    if name not in SHELLS:
        return [], ""
    for i, t in enumerate(texts):
        if t is None:
            return [], f"{name} gets an option only known when the shell runs"
        if not t.startswith("-") or t.startswith("--"):
            break
        if "c" in t[1:]:
            script = next((s for s in texts[i + 1 :] if s != "--"), None)
            if script is None:
                return [], f"{name} -c runs a script only known when the shell runs"
            return [script], ""
    if any(t in ("--version", "--help") for t in texts) and len(texts) == 1:
        return [], ""
    return [], f"{name} runs commands from its input or from a file"
