"""Which argument shapes only read: the allow-list behind Bash's read-only verdict.

A command is read-only when its program is listed here and its arguments have a shape that
program's check proves harmless; everything else fails closed. The list is of shapes, not
names: sed, awk and jq are on it because their scripts are parsed (`sed`, `awk`, `_jq`), git
per subcommand (`git`), a version probe only with the flag that prints a version. Each check
answers with the reason a command may write, run or connect (shown in traces and tests) or None.

Words only the shell knows: a `$X` or `~user` is accepted only by programs whose arguments are
plain text (`echo $HOME`); a glob or a brace list, which expands to names that may start with
`-`, only by programs none of whose flags write or run anything (and the Bash tool then checks
every name it expands to).
"""

from __future__ import annotations

import re

from .awk import awk_problem
from .git import git_problem
from .jq import jq_problem
from .options import Check, Opt, flag_check, long_hit, parse_options, unknown_problem
from .sed import sed_problem
from .syntax import UNKNOWN, SimpleCommand, Word

__all__ = ["HIDDEN_WORD", "TEXT_ARGS", "command_problem", "program_problem"]

HIDDEN_WORD = "is only known when the shell runs"
# Programs whose arguments are only text they print or compute with: no file, no code, no flag
# that writes. A word only the shell knows is harmless to them (`echo $HOME`).
TEXT_ARGS = frozenset(
    "echo true false : basename dirname seq expr sleep pwd uname id whoami groups nproc arch tty".split()
)

# Programs none of whose flags write files or run other programs: any argument is fine.
_ANY_ARGS = frozenset(
    """cat head tail wc ls pwd echo basename dirname realpath readlink stat du df which whereis type
    true false test [ uname id whoami groups printenv cmp diff nl cut tr column comm od hexdump
    strings seq sleep grep egrep fgrep cd : md5sum sha1sum sha224sum sha256sum sha384sum sha512sum
    b2sum cksum base64 base32 tac rev paste fold expand unexpand pgrep nproc uptime free arch tty
    locale lsb_release expr getconf""".split()
)
# Harmless variables in `LANG=C sort x`; anything else (PATH, LD_PRELOAD, GIT_EXTERNAL_DIFF,
# PAGER...) can make a reading program run something else.
_SAFE_VARIABLES = frozenset({"LANG", "LANGUAGE", "TZ", "NO_COLOR", "COLUMNS", "LINES", "CLICOLOR", "TERM"})
# `PROGRAM FLAG` that only prints a version. Not every program: a bare `version` is a file to
# run for python or node and a target for make; `pytest --version` imports conftest.py; yarn,
# pnpm, cargo and go may fetch or run a project-pinned copy of themselves first; kubectl,
# terraform and docker's `version` contact a server.
_VERSION_FLAGS: dict[str, frozenset[str]] = {
    **dict.fromkeys(
        """node npm npx uv gcc g++ clang make cmake gh conda poetry deno bun perl php tsc bash zsh
        git rg jq mypy ruff black ruby docker pip pip3 python python3""".split(),
        frozenset({"--version"}),
    ),
    **dict.fromkeys("python python3 pip pip3 ruff perl".split(), frozenset({"--version", "-V"})),
    **dict.fromkeys("java javac".split(), frozenset({"-version", "--version"})),
    "node": frozenset({"--version", "-v"}),
}


# --- programs with their own rules ------------------------------------------------------------

_FIND_ACTIONS = ("-delete", "-exec", "-execdir", "-ok", "-okdir", "-fls", "-fprint", "-fprint0", "-fprintf")


def _find(name: str, args: list[Word]) -> str | None:
    if problem := unknown_problem(args):
        return problem
    bad = next((a.text for a in args if a.text in _FIND_ACTIONS or (a.text or "").startswith("-fprint")), None)
    return f"find {bad} deletes, writes or runs commands" if bad else None


def _xargs(name: str, args: list[Word]) -> str | None:
    if problem := unknown_problem(args):
        return problem
    required = {
        "-a",
        "-d",
        "-E",
        "-I",
        "-L",
        "-n",
        "-P",
        "-s",
        "--arg-file",
        "--delimiter",
        "--max-args",
        "--max-procs",
        "--max-chars",
        "--process-slot-var",
    }
    optional = {"-e", "-i", "-l", "--eof", "--replace", "--max-lines"}
    known_flags = (
        required
        | optional
        | {
            "-0",
            "-p",
            "-r",
            "-t",
            "-x",
            "--null",
            "--interactive",
            "--no-run-if-empty",
            "--verbose",
            "--exit",
            "--show-limits",
        }
    )
    replace: str | None = None
    i = 0
    while i < len(args):
        t = args[i].text or ""
        if t == "--":
            i += 1
            break
        if not t.startswith("-") or t == "-":
            break
        i += 1
        # Every letter of a cluster (`-0P4`): only the last may take its value from the next word.
        for opt in parse_options([args[i - 1]], short_value="adEILnPseil"):
            assert isinstance(opt, Opt)
            if opt.name not in known_flags:
                return f"xargs option {opt.name} is not known to be read-only"
            if opt.name in ("-P", "--max-procs"):
                return f"xargs {opt.name} runs many commands at once (a fan-out), which is not a read"
            value = opt.value
            if opt.name in required and value is None:
                value = args[i].text if i < len(args) else None
                i += 1
            if opt.name in ("-I", "-i", "--replace"):
                replace = value or "{}"
    inner = args[i:]
    if not inner:
        return None  # runs echo
    if replace is not None:
        inner = [Word(source=a.source, text=None) if replace in (a.text or "") else a for a in inner]
    else:
        inner = [*inner, UNKNOWN]  # items from stdin may start with `-`
    return program_problem(inner[0], inner[1:], via="xargs ")


def _env(name: str, args: list[Word]) -> str | None:
    if problem := unknown_problem(args):
        return problem
    for a in args:
        t = a.text or ""
        if t in ("-0", "--null", "-i", "--ignore-environment", "-"):
            continue
        if "=" in t and not t.startswith("-"):
            continue
        return f"{name} {t} runs a command or is not known to be read-only"
    return None


def _date(name: str, args: list[Word]) -> str | None:
    if problem := flag_check("s", ("--set",), short_value="dfrI", why="sets the clock")(name, args):
        return problem
    items = list(parse_options(args, short_value="dfrI"))
    for prev, item in zip([None, *items], items):
        if isinstance(item, Word) and not (item.text or "").startswith("+"):
            if (
                isinstance(prev, Opt)
                and prev.value is None
                and prev.name in ("-d", "-f", "-r", "--date", "--file", "--reference")
            ):
                continue
            return f"date {item.text} sets the clock"
    return None


_ARITHMETIC_TESTS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})
_INTEGER = re.compile(r"^\s*[-+]?[0-9]+\s*$")
_PLAIN_VARIABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[([0-9]+|@|\*)\])?$")


def _test_args(name: str, args: list[Word]) -> str | None:
    # bash evaluates `a[$(cmd)]` inside arithmetic: in the operands of `[[ x -eq y ]]` (a plain
    # word there is a variable whose value is evaluated in turn) and in the name `-v` checks.
    bad = next((a for a in args if a.text is not None and ("$(" in a.text or "`" in a.text)), None)
    if bad is not None:
        return f"{name} operand {bad.source!r} can run a command in arithmetic"
    for i, a in enumerate(args):
        if a.text in ("-v", "-R") and i + 1 < len(args) and not _PLAIN_VARIABLE.match(args[i + 1].text or ""):
            return f"{name} {a.text} {args[i + 1].source} evaluates an array index, which can run a command"
        if name == "[[" and a.text in _ARITHMETIC_TESTS:
            for operand in (args[i - 1] if i else None, args[i + 1] if i + 1 < len(args) else None):
                if operand is None or not _INTEGER.match(operand.text or ""):
                    source = operand.source if operand else "nothing"
                    return f"[[ {a.text} ]] evaluates {source!r} as arithmetic, which can run a command"
    return None


def _command_builtin(name: str, args: list[Word]) -> str | None:
    if args and args[0].text in ("-v", "-V"):
        return unknown_problem(args)
    rest = args[1:] if args and args[0].text == "-p" else args
    if not rest:
        return None
    return program_problem(rest[0], rest[1:], via=f"{name} ")


def _wrapper(short_value: str, leading: int, bad_short: str = "", bad_long: tuple[str, ...] = ()) -> Check:
    """`timeout 5 ls`, `nice -n 5 ls`: options, `leading` fixed arguments, then the command.
    Options in `bad_short`/`bad_long` make the wrapper itself write (`time -o FILE`)."""

    def check(name: str, args: list[Word]) -> str | None:
        i = 0
        while i < len(args) and (args[i].text or "").startswith("-") and args[i].text != "--":
            opt = args[i].text or ""
            for item in parse_options([args[i]], short_value):
                if isinstance(item, Opt) and (
                    (len(item.name) == 2 and item.name[1] in bad_short) or long_hit(item.name, bad_long)
                ):
                    return f"{name} {item.name} writes a file"
            i += 2 if (len(opt) == 2 and opt[1] in short_value) else 1
        if i < len(args) and args[i].text == "--":
            i += 1
        i += leading
        if i >= len(args):
            return f"{name} without a command"
        return program_problem(args[i], args[i + 1 :], via=f"{name} ")

    return check


_HOSTNAME_SHOWS = frozenset(
    {
        "-a",
        "-A",
        "-d",
        "-f",
        "-i",
        "-I",
        "-s",
        "-y",
        "--alias",
        "--all-fqdns",
        "--domain",
        "--fqdn",
        "--long",
        "--ip-address",
        "--all-ip-addresses",
        "--short",
        "--yp",
        "--nis",
    }
)


def _hostname(name: str, args: list[Word]) -> str | None:
    # Anything but the flags that show a name sets it: `hostname x`, `hostname -F file`, `-b`.
    if problem := unknown_problem(args):
        return problem
    for item in parse_options(args):
        if isinstance(item, Word) or item.name not in _HOSTNAME_SHOWS or item.value is not None:
            shown = item.source if isinstance(item, Word) else item.name
            return f"hostname {shown} sets the host name"
    return None


def _version_probe(name: str, args: list[Word]) -> str | None:
    if len(args) == 1 and args[0].text in _VERSION_FLAGS[name]:
        return None
    return f"{name} runs code or changes things; only `{name} --version` is read-only"


_PIP_READS: dict[str, frozenset[str]] = {
    "list": frozenset(
        """-l --local --user -e --editable --exclude-editable --include-editable --not-required
        --format -v --verbose -q --quiet --no-color --disable-pip-version-check --exclude""".split()
    ),
    "freeze": frozenset("-l --local --user --all --exclude-editable --exclude -q --quiet --no-color".split()),
    "show": frozenset("-f --files -v --verbose -q --quiet --no-color".split()),
    "check": frozenset({"-q", "--quiet", "--no-color"}),
}


def _pip(name: str, args: list[Word]) -> str | None:
    """`pip list`, `pip freeze`, `pip show`, `pip check`: local metadata only. (The Bash tool's
    environment turns pip's once-a-week version check, a network call, off.)"""
    if problem := unknown_problem(args):
        return problem
    if len(args) == 1 and args[0].text in _VERSION_FLAGS[name]:
        return None
    sub = args[0].text if args else None
    if sub not in _PIP_READS:
        return f"{name} {sub or ''} installs, downloads or reaches the network; only list, freeze, show and check read".replace(
            "  ", " "
        )
    for a in args[1:]:
        t = a.text or ""
        if t.startswith("-") and t.partition("=")[0] not in _PIP_READS[sub]:
            return f"{name} {sub} {t} is not known to be read-only (it may reach the network)"
    return None


def _ps(name: str, args: list[Word]) -> str | None:
    # BSD-style `e` (`ps auxe`) and `-o environ` print other processes' environments, where
    # API keys live; everything else ps shows is a process table.
    if problem := unknown_problem(args):
        return problem
    for a in args:
        t = a.text or ""
        if "env" in t or (not t.startswith("-") and "e" in t):
            return f"ps {t} shows processes' environments, which hold secrets"
    return None


_CHECKS: dict[str, Check] = {
    "ps": _ps,
    "sort": flag_check("o", ("--output", "--compress-program"), short_value="kStT"),
    "uniq": flag_check(short_value="fsw", max_positional=1),
    "printf": flag_check("v", why="assigns a shell variable"),
    "file": flag_check("C", ("--compile",), short_value="eFfmP"),
    "tree": flag_check("oR", ("--output",), short_value="LIPHTo"),
    "rg": flag_check(
        "z",
        ("--pre", "--pre-glob", "--search-zip", "--hostname-bin"),
        why="runs a preprocessor, a decompressor or another program",
    ),
    "jq": jq_problem,
    "pip": _pip,
    "pip3": _pip,
    "awk": awk_problem,
    "gawk": awk_problem,
    "mawk": awk_problem,
    "nawk": awk_problem,
    "hostname": _hostname,
    "find": _find,
    "sed": sed_problem,
    "xargs": _xargs,
    "env": _env,
    "date": _date,
    "test": _test_args,
    "[": _test_args,
    "[[": _test_args,
    "command": _command_builtin,
    "timeout": _wrapper("sk", 1),
    "nice": _wrapper("n", 0),
    "stdbuf": _wrapper("ioe", 0),
    "time": _wrapper("fo", 0, bad_short="oa", bad_long=("--output", "--append")),
}


def program_problem(name_word: Word, args: list[Word], via: str = "") -> str | None:
    """Why `name_word args...` may write or run something unchecked; None when it only reads.
    `via` names the wrapper it runs under (`xargs `), for the message."""
    name = name_word.text
    # `$X`, `"$X"`, `~user`: a word only the shell knows may be anything: a path outside, a
    # denied file, a flag. Only programs whose arguments are plain text take one. (A glob or a
    # brace list is a list of names, judged by the program's own check.)
    hidden = next((a for a in args if a.text is None and not a.glob), None)
    if name is None:
        return f"the command name {name_word.source!r} is only known when the shell runs"
    if "/" in name:
        return f"{via}{name} runs a program by path; only programs found on PATH are on the allow-list"
    if name != "git" and name not in _CHECKS and name not in _ANY_ARGS and name not in _VERSION_FLAGS:
        return f"{via}{name} is not on the read-only allow-list"
    if hidden is not None and name not in TEXT_ARGS:
        return f"{via}argument {hidden.source!r} {HIDDEN_WORD}"
    if name == "git":
        return git_problem(args)
    if name in _CHECKS:
        problem = _CHECKS[name](name, args)
        return f"{via}{problem}" if problem and via else problem
    if name in _ANY_ARGS:
        return None
    if name in _VERSION_FLAGS:
        return _version_probe(name, args)
    return f"{via}{name} is not on the read-only allow-list"


def command_problem(cmd: SimpleCommand) -> str | None:
    """Why one simple command may write or run something unchecked; None when it only reads."""
    for var, value in cmd.assignments:
        if var not in _SAFE_VARIABLES and not var.startswith("LC_"):
            return f"setting {var} can change what the command runs"
        # `TZ='a[$(cmd)]'` runs nothing yet, but any later arithmetic on TZ runs cmd.
        if value.text is not None and ("$(" in value.text or "`" in value.text):
            return f"the value of {var} holds a command that arithmetic on it would run"
    if cmd.kind == "assignment":
        return None
    if cmd.kind == "redirect" or cmd.name is None:
        return "a redirection without a command creates or truncates a file"
    return program_problem(cmd.name, list(cmd.args))
