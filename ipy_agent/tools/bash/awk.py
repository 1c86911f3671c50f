"""awk programs, read as programs: which ones only compute and print.

`awk '{print $1}' f` is everyday reading, but an awk program can run commands (`system()`,
`print | "cmd"`, `"cmd" | getline`), write files (`print > "f"`), read files no path check sees
(`getline < "f"`, assigning `ARGV`), and gawk loads code (`@load`, `@include`, `-f`, `-l`). So
the program is tokenised the way awk does it (strings, regular expressions, comments) and passes
only when none of those appear: no `system`, `getline`, `ARGV`/`ARGC`, `@`, no pipe, and no `>`
outside parentheses inside a `print`/`printf` statement (where awk reads it as a redirection).
Anything the tokeniser cannot read fails closed.
"""

from __future__ import annotations

import re

from .options import unknown_problem
from .syntax import Word

__all__ = ["awk_problem", "awk_program_problem"]

# Options that only set the field separator or a variable (both values are text).
_VALUED = frozenset({"-F", "-v", "--field-separator", "--assign"})
_FLAGS = frozenset(
    {
        "--posix",
        "--traditional",
        "-P",
        "-c",
        "-S",
        "--sandbox",
        "-b",
        "--characters-as-bytes",
        "-N",
        "--use-lc-numeric",
        "-r",
        "--re-interval",
    }
)
_FORBIDDEN_WORDS = {
    "system": "system() runs a command",
    "getline": "getline reads a file or a command's output",
    "ARGV": "assigning ARGV makes awk read files no path check sees",
    "ARGC": "assigning ARGC makes awk read files no path check sees",
    "ENVIRON": "ENVIRON reads the environment",
    "PROCINFO": "PROCINFO changes how gawk runs",
}
_TOKEN = re.compile(
    r"""(?P<space>[ \t\r]+|\\\n)
    |(?P<comment>\#[^\n]*)
    |(?P<string>"(?:[^"\\\n]|\\.)*")
    |(?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
    |(?P<name>[A-Za-z_][A-Za-z0-9_]*)
    |(?P<op>\|\||\||>>|>=|>|&&|\+\+|--|[-+*/%^!<=~?:,;(){}\[\]$\n]|@)""",
    re.X,
)
_REGEX = re.compile(r"/(?:[^/\\\n\[]|\\.|\[(?:[^\]\\\n]|\\.)*\])*/")
# After these, `/` divides; after anything else it starts a regular expression.
_OPERAND_END = frozenset({"name", "number", "string", "regex", ")", "]", "$", "++", "--"})


def awk_program_problem(program: str) -> str | None:
    """None when the awk program only computes and prints to standard output."""
    i, n = 0, len(program)
    prev = ""  # kind of the previous meaningful token
    depth = 0  # parentheses
    in_print = False
    while i < n:
        if program[i] == "/" and prev not in _OPERAND_END:
            m = _REGEX.match(program, i)
            if m is None:
                return "awk program with a regular expression that is not closed"
            i, prev = m.end(), "regex"
            continue
        m = _TOKEN.match(program, i)
        if m is None:
            return f"awk program with {program[i]!r}, which is not understood"
        i = m.end()
        kind = m.lastgroup or ""
        text = m.group()
        if kind in ("space", "comment"):
            continue
        if kind == "name":
            if text in _FORBIDDEN_WORDS:
                return f"awk {_FORBIDDEN_WORDS[text]}"
            if text in ("print", "printf"):
                in_print, depth = True, 0
        elif kind == "op":
            if text in ("|", "@"):
                return "awk `|` runs a command" if text == "|" else "awk `@` loads code or calls a function by name"
            if text == "(" or text == "[":
                depth += 1
            elif text in (")", "]"):
                depth -= 1
            elif text in (">", ">>") and in_print and depth <= 0:
                return "awk print with `>` writes a file"
            elif text in (";", "\n", "}", "{"):
                in_print = False
            prev = text if text in (")", "]", "$", "++", "--") else "op"
            continue
        prev = kind
    return None


def awk_problem(name: str, args: list[Word]) -> str | None:
    """None when `awk args...` only prints: known options and a program that only reads."""
    if problem := unknown_problem(args):
        return problem
    i = 0
    while i < len(args) and (args[i].text or "").startswith("-") and args[i].text != "-":
        t = args[i].text or ""
        if t == "--":
            i += 1
            break
        flag, eq, _value = t.partition("=")
        if flag in _VALUED or (len(flag) > 2 and flag[:2] in ("-F", "-v") and not flag.startswith("--")):
            i += 1 if (eq or (len(flag) > 2 and not flag.startswith("--"))) else 2
            continue
        if flag in _FLAGS:
            i += 1
            continue
        return f"{name} option {t} is not known to be read-only (it may load or write files)"
    if i >= len(args):
        return f"{name} without a program it can check"
    program = args[i].text or ""
    if problem := awk_program_problem(program):
        return problem
    # What follows are files, or `var=value` assignments awk makes before reading the next file.
    return None
