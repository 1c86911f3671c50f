"""sed scripts, read as programs: which ones only print.

sed is on the allow-list because `sed -n 1,20p f` is how people page through files, but a sed
script can write files (`w`, `W`, `s///w`) and run commands (`e`, `s///e`), and `-i` edits in
place. So the script itself is parsed, command by command, and only the commands known to read
pass.
"""

from __future__ import annotations

from .options import long_hit, parse_options, unknown_problem
from .syntax import UNKNOWN, Word

__all__ = ["sed_problem", "sed_script_problem"]


def sed_problem(name: str, args: list[Word]) -> str | None:
    if problem := unknown_problem(args):
        return problem
    scripts: list[str] = []
    items = list(parse_options(args, short_value="efl"))
    positional = [i for i in items if isinstance(i, Word)]
    detached = iter(positional)
    for item in items:
        if isinstance(item, Word):
            continue
        if item.name == "-i" or long_hit(item.name, ("--in-place",)):
            return "sed -i edits files in place"
        if item.name == "-f" or long_hit(item.name, ("--file",)):
            return "sed -f runs a script file that was not checked"
        if item.name == "-e" or long_hit(item.name, ("--expression",)):
            value = item.value if item.value is not None else next(detached, UNKNOWN).text
            if value is None:
                return "sed -e without a script"
            scripts.append(value)
            positional = positional[1:] if item.value is None else positional
    if not scripts:
        if not positional or positional[0].glob:
            return "sed without a script it can check"
        scripts.append(positional[0].text or "")
    for s in scripts:
        if problem := sed_script_problem(s):
            return problem
    return None


def sed_script_problem(script: str) -> str | None:
    """None when a sed script has no `w`, `W` or `e` command and no `s///w` or `s///e` flag."""
    s, i, n = script, 0, len(script)

    def skip_delimited(j: int, parts: int) -> int:
        delim = s[j]
        j += 1
        for _ in range(parts):
            while j < n and s[j] != delim:
                j += 2 if s[j] == "\\" else 1
            j += 1
        return j

    def skip_address(j: int) -> int:
        if j < n and (s[j].isdigit() or s[j] in "+~"):
            j += 1
            while j < n and (s[j].isdigit() or s[j] == "~"):
                j += 1
        elif j < n and s[j] == "$":
            j += 1
        elif j < n and s[j] in "/\\":
            j = skip_delimited(j + (s[j] == "\\"), 1)
            while j < n and s[j] in "IM":
                j += 1
        return j

    while i < n:
        if s[i] in " \t\n;}{":
            i += 1
            continue
        i = skip_address(i)
        if i < n and s[i] == ",":
            i = skip_address(i + 1)
        while i < n and s[i] in " \t!":
            i += 1
        if i >= n:
            break
        c = s[i]
        if c in "wWe":
            return f"sed command {c!r} writes a file or runs a command"
        if c in "#aicrR:btTv":  # text, file to read, or label: the rest of the line
            while i < n and s[i] != "\n" and not (c in "btTv" and s[i] == ";"):
                i += 1
        elif c in "pPdDnNgGhHxlLqQz=F{}":
            i += 1
            while i < n and s[i].isdigit():
                i += 1
        elif c in "sy" and i + 1 < n:
            i = skip_delimited(i + 1, 2 if c == "s" else 2)
            if c == "s":
                while i < n and s[i] not in ";\n}":
                    if s[i] in "we":
                        return f"sed s///{s[i]} writes a file or runs a command"
                    if s[i] not in "gpiImM0123456789 \t":
                        return f"sed flag {s[i]!r} is not known to be read-only"
                    i += 1
        else:
            return f"sed command {c!r} is not known to be read-only"
    return None
