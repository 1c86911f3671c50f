"""Shell words whose value bash computes: `$'...'` strings, and expansions that run code.

Two facts the Bash classifier needs about single words, kept apart from the tree walk in
`syntax`: the value of an ANSI-C string (`$'.e\\x6ev'` names `.env`, and a Read deny rule must
see that), and which `${...}` / `$((...))` forms evaluate a variable's value as code. Bash's
arithmetic is recursive: with `TZ='a[$(cmd)]'` in the environment, `$((TZ))`, `${x:TZ}` and
`${a[TZ]}` all run `cmd`, and `${TZ@P}` runs it as a prompt string would. A command line is only
read-only when none of those forms appear on anything but literals.
"""

from __future__ import annotations

import re

__all__ = ["ansi_c", "evaluation_problem"]

_ANSI_C = re.compile(r"\\(x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|[0-7]{1,3}|c.|.)", re.S)
_ANSI_C_SIMPLE = {
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}


def ansi_c(body: str) -> str:
    """The value of `$'...'` as bash computes it: `$'.e\\x6ev'` is `.env` (a deny rule must see
    that). Bash ends the word at a NUL byte."""

    def one(m: re.Match[str]) -> str:
        e = m.group(1)
        if e[0] in "xuU":
            return chr(min(int(e[1:], 16), 0x10FFFF))
        if e[0] in "01234567":
            return chr(int(e, 8) & 0xFF)
        if e[0] == "c" and len(e) == 2:
            return chr(ord(e[1].upper()) ^ 0x40) if e[1] != "?" else "\x7f"
        return _ANSI_C_SIMPLE.get(e, "\\" + e)

    return _ANSI_C.sub(one, body).split("\0", 1)[0]


# `${name}`, `${#name}`, `${name[index]...}` and what follows the name (operator and word).
_EXPANSION = re.compile(r"^\$\{(#?)([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])(\[([^\]]*)\])?(.*)\}$", re.S)
# What an arithmetic context may hold without reading a variable: numbers and operators.
_ARITHMETIC_LITERAL = re.compile(r"^[\s0-9+\-*/%()<>=!&|^~?:,]*$")


def evaluation_problem(node_type: str, src: str) -> str:
    """Why the `${...}` or `$((...))` / `$[...]` text `src` may run a command held in a
    variable's value, or "" when it only reads literals and plain values."""
    if node_type == "arithmetic_expansion":
        inner = src[3:-2] if src.startswith("$((") else src[2:-1]
        ok = _ARITHMETIC_LITERAL.match(inner)
        return "" if ok else f"arithmetic {src!r} evaluates variables, whose values can run commands"
    m = _EXPANSION.match(src)
    if m is None or (m.group(2) == "!" and m.group(5)):
        return f"the expansion {src!r} is not understood (indirection or nesting can run commands)"
    index, rest = m.group(4), m.group(5)
    if index is not None and index not in ("@", "*") and not _ARITHMETIC_LITERAL.match(index):
        return f"the array index in {src!r} is arithmetic on variables, which can run commands"
    if rest.startswith("@"):
        return f"the transformation in {src!r} expands the value again, which can run commands"
    if rest.startswith(":") and rest[1:2] not in ("-", "=", "?", "+") and not _ARITHMETIC_LITERAL.match(rest[1:]):
        return f"the substring bounds in {src!r} are arithmetic on variables, which can run commands"
    return ""
