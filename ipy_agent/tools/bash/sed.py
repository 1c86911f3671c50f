"""sed scripts, read as programs: which ones only print.

sed is on the allow-list because `sed -n 1,20p f` is how people page through files, but a sed
script can write files (`w`, `W`, `s///w`) and run commands (`e`, `s///e`), and `-i` edits in
place. So the script itself is parsed, command by command, and only the commands known to read
pass.
"""

from __future__ import annotations

from .options import long_hit, parse_options, unknown_problem
from .syntax import Word

__all__ = ["sed_problem", "sed_script_problem"]

# Options that change how sed reads and prints, never what it writes or runs. (`-e SCRIPT` and
# `-l N` take values and are handled on their own.)
_HARMLESS = frozenset(
    {
        "-n",
        "--quiet",
        "--silent",
        "-E",
        "-r",
        "--regexp-extended",
        "-s",
        "--separate",
        "-z",
        "--null-data",
        "-u",
        "--unbuffered",
        "--posix",
        "--debug",
        "--sandbox",
    }
)


def sed_problem(name: str, args: list[Word]) -> str | None:
    """None when `sed args...` only prints: known options, scripts that only read and print."""
    if problem := unknown_problem(args):
        return problem
    scripts: list[str] = []
    items = list(parse_options(args, short_value="el"))
    taken: set[int] = set()  # positions of detached option values (`-e SCRIPT`, `-l N`)
    for k, item in enumerate(items):
        if isinstance(item, Word):
            continue
        if item.name == "-i" or long_hit(item.name, ("--in-place",)):
            return "sed -i edits files in place"
        if item.name == "-f" or long_hit(item.name, ("--file",)):
            return "sed -f runs a script file that was not checked"
        is_script = item.name == "-e" or long_hit(item.name, ("--expression",))
        is_width = item.name == "-l" or long_hit(item.name, ("--line-length",))
        if not (
            is_script
            or is_width
            or item.name in _HARMLESS
            or any(long_hit(item.name, (f,)) for f in _HARMLESS if f.startswith("--"))
        ):
            return f"sed option {item.name} is not known to be read-only"
        if (is_script or is_width) and item.value is None:
            following = items[k + 1] if k + 1 < len(items) else None
            if not isinstance(following, Word) or following.text is None:
                return f"sed {item.name} without a value it can check"
            taken.add(k + 1)
            value: str | None = following.text
        else:
            value = item.value
        if is_script:
            scripts.append(value or "")
    positional = [it for k, it in enumerate(items) if isinstance(it, Word) and k not in taken]
    if not scripts:
        if not positional or positional[0].glob or positional[0].text is None:
            return "sed without a script it can check"
        scripts.append(positional[0].text)
    for s in scripts:
        if problem := sed_script_problem(s):
            return problem
    return None


def sed_script_problem(script: str) -> str | None:
    """None when a sed script has no `w`, `W`, `e`, `r` or `R` command and no `s///w` or
    `s///e` flag, and every command in it is one sed only reads or prints with."""
    scan = _Script(script)
    i, n = 0, len(script)
    while i < n:
        if script[i] in " \t\n;}{":
            i += 1
            continue
        i = scan.skip_address(i)
        if i < n and script[i] == ",":
            i = scan.skip_address(i + 1)
        while i < n and script[i] in " \t!":
            i += 1
        if i >= n:
            break
        i, problem = scan.command(i)
        if problem:
            return problem
    return None


class _Script:
    """A sed script read one command at a time: where each part ends, and what a command does."""

    def __init__(self, script: str) -> None:
        self.s, self.n = script, len(script)

    def skip_delimited(self, j: int, parts: int) -> int:
        s, n = self.s, self.n
        delim = s[j]
        j += 1
        for _ in range(parts):
            while j < n and s[j] != delim:
                j += 2 if s[j] == "\\" else 1
            j += 1
        return j

    def skip_address(self, j: int) -> int:
        s, n = self.s, self.n
        if j < n and (s[j].isdigit() or s[j] in "+~"):
            j += 1
            while j < n and (s[j].isdigit() or s[j] == "~"):
                j += 1
        elif j < n and s[j] == "$":
            j += 1
        elif j < n and s[j] in "/\\":
            j = self.skip_delimited(j + (s[j] == "\\"), 1)
            while j < n and s[j] in "IM":
                j += 1
        return j

    def command(self, i: int) -> tuple[int, str | None]:
        """The command at `i`: where the next one may start, and why it is not read-only."""
        s, n, c = self.s, self.n, self.s[i]
        if c in "wWe":
            return i, f"sed command {c!r} writes a file or runs a command"
        if c in "rR":
            return i, f"sed command {c!r} reads a file that the path checks do not see"
        if c in "#aicrR:btTv":  # text, file to read, or label: the rest of the line
            # GNU sed ends a label (`:a;w f`) and a branch at `;` too: stop there, or a `w`
            # after it would be read as part of the label.
            while i < n and s[i] != "\n" and not (c in "btTv:" and s[i] == ";"):
                i += 1
            return i, None
        if c in "pPdDnNgGhHxlLqQz=F{}":
            i += 1
            while i < n and s[i].isdigit():
                i += 1
            return i, None
        if c in "sy" and i + 1 < n:
            i = self.skip_delimited(i + 1, 2)
            return self._s_flags(i) if c == "s" else (i, None)
        return i, f"sed command {c!r} is not known to be read-only"

    def _s_flags(self, i: int) -> tuple[int, str | None]:
        """The flags after `s///`: `w` and `e` write or run; the rest are known to only read."""
        s, n = self.s, self.n
        while i < n and s[i] not in ";\n}":
            if s[i] in "we":
                return i, f"sed s///{s[i]} writes a file or runs a command"
            if s[i] not in "gpiImM0123456789 \t":
                return i, f"sed flag {s[i]!r} is not known to be read-only"
            i += 1
        return i, None
