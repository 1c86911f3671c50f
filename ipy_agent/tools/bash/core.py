"""What may run unasked where no sandbox can be made: a few programs, written plainly.

Without an OS sandbox nothing would catch a classifier mistake, so auto-allow shrinks to
`core_read_only`: programs whose every argument form only reads and prints, in a command
written without any shell expansion, that the classifier also judges read-only.
"""

from __future__ import annotations

import re

__all__ = ["CORE_PROGRAMS", "core_read_only"]

# Programs none of whose argument forms writes a file, runs a program or opens a connection,
# for every spelling of their options (GNU coreutils, grep, diff): what may still run without
# asking when there is no sandbox to catch a mistake. `sort` (-o, --compress-program), `uniq`
# (a second operand is written), `file` (-C), `tree` (-o), `date` (-s), `find`, `sed`, `awk`,
# `git`, `jq` and every interpreter are out on purpose.
CORE_PROGRAMS: frozenset[str] = frozenset(
    """cat head tail wc ls pwd echo basename dirname realpath readlink stat du df true false test [
    uname id whoami groups cmp diff nl cut tr comm od hexdump tac rev paste fold expand unexpand
    seq nproc md5sum sha1sum sha256sum sha512sum b2sum cksum base64 grep egrep fgrep cd""".split()
)
# Written without any expansion: no `$`, backquotes, backslashes, `~`, process substitution,
# here-documents or redirections (bar the two spellings of "discard errors").
_CORE_TEXT = re.compile(r"^[A-Za-z0-9 _\-./=:,+@%^*?\[\]'\"|&;]*$")
_DISCARD = re.compile(r"(?<!\S)[12]?>\s*/dev/null(?!\S)")


def core_read_only(command: str) -> bool:
    """The predicate auto-allow falls back to without a sandbox: only CORE_PROGRAMS, written
    without expansions, and read-only by the classifier's judgement too."""
    from .syntax import analyze  # the parser loads tree-sitter
    from .verdict import is_read_only_command

    if not _CORE_TEXT.match(_DISCARD.sub(" ", command)) or not is_read_only_command(command):
        return False
    try:
        a = analyze(command)
    except Exception:
        return False
    if a.line_problem or not a.everything:
        return False
    for cmd in a.everything:
        if cmd.name is None or cmd.name.text not in CORE_PROGRAMS or cmd.assignments:
            return False
        if any(w.text is None for w in cmd.args):
            return False
    return True
