"""Options of a command's words, as the programs on the allow-list read them.

GNU tools and git share a grammar: `-abc` is three short options unless one of them takes a
value (`sort -k1o` has no `-o`), `--long=value`, unambiguous abbreviations of long options
(`--out=f` is `--output=f`), and `--` ending the options. Every allow-list check (`readonly`,
`git`, `sed`) and the destructive warnings read words through these helpers, so the grammar is
written once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from .syntax import Word

__all__ = [
    "PATTERN_FIRST",
    "PATTERN_FLAGS",
    "Check",
    "Opt",
    "flag_check",
    "long_hit",
    "parse_options",
    "path_candidates",
    "supplies_pattern",
    "unknown_problem",
]

# A program's check: (program name, its arguments) -> why it may write or run something, or None.
Check = Callable[[str, list[Word]], "str | None"]


@dataclass(frozen=True)
class Opt:
    name: str  # "-x" or "--long"
    value: str | None  # attached value (`-k1`, `--out=f`), if any


def parse_options(args: list[Word], short_value: str = "") -> Iterator[Opt | Word]:
    """Yield options (clusters split into letters) and positional words; stop at `--`.

    A short option listed in `short_value` takes the rest of its cluster as its value, so in
    `sort -k1o` there is no `-o`. A detached value (`-k 1`) comes out as a positional.
    """
    rest = False
    for a in args:
        t = a.text
        if rest or t is None or not t.startswith("-") or t == "-":
            yield a
        elif t == "--":
            rest = True
        elif t.startswith("--"):
            name, eq, value = t.partition("=")
            yield Opt(name, value if eq else None)
        else:
            for i, ch in enumerate(t[1:], 1):
                if ch in short_value:
                    yield Opt("-" + ch, t[i + 1 :] or None)
                    break
                yield Opt("-" + ch, None)


def unknown_problem(args: list[Word]) -> str | None:
    bad = next((a for a in args if not a.known), None)
    return f"argument {bad.source!r} is only known when the shell runs" if bad else None


def long_hit(given: str, bad: tuple[str, ...]) -> bool:
    # GNU and git accept unambiguous abbreviations: `--out=f` is `--output=f`.
    return len(given) > 2 and any(b.startswith(given) for b in bad)


def flag_check(
    bad_short: str = "",
    bad_long: tuple[str, ...] = (),
    short_value: str = "",
    max_positional: int | None = None,
    why: str = "can write files",
) -> Check:
    def check(name: str, args: list[Word]) -> str | None:
        if problem := unknown_problem(args):
            return problem
        positional = 0
        for item in parse_options(args, short_value):
            if isinstance(item, Word):
                positional += 1
            elif (len(item.name) == 2 and item.name[1] in bad_short) or long_hit(item.name, bad_long):
                return f"{name} {item.name} {why}"
        if max_positional is not None and positional > max_positional:
            return f"{name} with {positional} file arguments writes to the last one"
        return None

    return check


def path_candidates(text: str) -> list[str]:
    """What in one word may be a path a program opens: the word itself, the value of
    `--opt=value`, and for a short-option cluster every tail after its first letter (`-f/x`,
    `-rf../x`: which letter takes a value depends on the program, so each is tried)."""
    if not text:
        return []
    if text.startswith("--"):
        value = text.partition("=")[2]
        return [value] if value else []
    if text.startswith("-") and len(text) > 2:
        # `cut -d/`, `sort -t/`: a lone `/` is a delimiter; as a path it is a directory that no
        # listed program takes as an attached value.
        return [tail for k in range(2, len(text)) if (tail := text[k:]) != "/"]
    if text == "-":
        return []
    return [text]


# Their first operand is a pattern or a program, unless `-e` / `-f` (alone or in a cluster such
# as `-ie`) or one of these long flags supplies it; then every operand may be a file.
PATTERN_FIRST = frozenset("grep egrep fgrep rg ag ack sed awk gawk mawk nawk jq".split())
PATTERN_FLAGS = ("--regexp", "--file", "--expression", "--from-file")


def supplies_pattern(flag: str) -> bool:
    if flag.startswith("--"):
        return flag.split("=", 1)[0] in PATTERN_FLAGS
    return flag.startswith("-") and bool(set(flag[1:]) & {"e", "f"})
