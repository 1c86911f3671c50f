"""jq's arguments: options that only shape output, and filters that read neither the
environment nor files (the API key lives in the environment)."""

from __future__ import annotations

import re

from .options import unknown_problem
from .syntax import Word

__all__ = ["jq_problem"]

# jq options that shape output or pass text in; `--arg NAME VALUE` and friends take two words.
_JQ_FLAGS = frozenset(
    """-r --raw-output -j --join-output -a --ascii-output -c --compact-output -n --null-input
    -s --slurp -e --exit-status -S --sort-keys -C --color-output -M --monochrome-output --tab --seq --stream
    --stream-errors -R --raw-input --raw-output0 --unbuffered -h --help --args --jsonargs --version -V""".split()
)
_JQ_TWO_VALUES = frozenset({"--arg", "--argjson"})
# Filters that read the environment (the API key lives there), name or load files, or show
# where the program runs; a filter using them is not judged read-only.
_JQ_FORBIDDEN = re.compile(
    r"\b(env|input_filename|import|include|modulemeta|get_search_list|get_prog_origin|"
    r"get_jq_origin)\b|\$(ENV|__loc__|__prog_args)\b"
)


def jq_problem(name: str, args: list[Word]) -> str | None:
    """None when `jq <args>` only filters its input; otherwise why not (a filter or data file
    option, or a filter that reads the environment or names files)."""
    if problem := unknown_problem(args):
        return problem
    i, program = 0, None
    while i < len(args):
        t = args[i].text or ""
        if t == "--":
            # Everything after is positional (the filter first, if not yet given).
            for rest in args[i + 1 :]:
                program = rest.text if program is None else program
            break
        if t.startswith("-") and t != "-":
            flag = t.partition("=")[0]
            if flag in _JQ_TWO_VALUES:
                i += 3
                continue
            if flag == "--indent":
                i += 2
                continue
            if flag not in _JQ_FLAGS and not (
                len(flag) > 2 and not flag.startswith("--") and all(f"-{c}" in _JQ_FLAGS for c in flag[1:])
            ):
                return f"jq option {t} reads a filter or data file, or is not known to be read-only"
            i += 1
            continue
        if program is None:
            program = t
        i += 1
    if program is None:
        return None  # `jq` alone is `jq .`
    if m := _JQ_FORBIDDEN.search(program):
        return f"the jq filter uses {m.group()!r}, which reads the environment or loads or names files"
    return None
