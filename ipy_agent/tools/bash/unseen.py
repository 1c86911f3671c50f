"""What the bash parser may not show: substitutions in contexts tree-sitter reads as plain text.

tree-sitter's bash grammar reports `$(...)` and backticks in most places, but not everywhere bash
runs them: a backtick inside a heredoc body or a `${x:-...}` default comes out as text. A
classifier that trusts the tree would call such a command read-only. So the source itself is
scanned for every substitution mark; one outside single quotes (and quoted heredoc bodies), not
escaped, and not where the tree reports a substitution, means the tree missed a command.
"""

from __future__ import annotations

import re

from tree_sitter import Node

__all__ = ["unseen_substitution"]

# What starts a substitution, wherever it is: tree-sitter does not report every one (backticks
# in heredoc bodies and in `${x:-...}` defaults come out as plain text).
# (`$((` is arithmetic, judged by `evaluation_problem`: a body that is not plain numbers fails.)
_BARE_NEWLINE = re.compile(rb"(?<!\\)\n")
_SUBSTITUTION_MARK = re.compile(rb"`|\$\((?!\()|[<>]\(")


def unseen_substitution(root: Node, command: str) -> str:
    """A parse error, or a substitution mark outside single quotes that the tree did not report:
    the parser is not trusted to have seen every context bash substitutes in."""
    data = command.encode("utf-8")
    literal: list[tuple[int, int]] = []
    seen: set[int] = set()  # where the substitutions the tree reports open and close
    stack = [root]
    while stack:
        n = stack.pop()
        if n.type == "ERROR" or n.is_missing:
            return "part of the command could not be parsed"
        if n.type == "word" and _BARE_NEWLINE.search(n.text or b""):
            # `pwd\n\\env x` is one word to tree-sitter, two commands to bash.
            return "a line break inside a word: bash ends the command there, the parser does not"
        if n.type in ("raw_string", "ansi_c_string"):
            literal.append((n.start_byte, n.end_byte))
        elif n.type == "heredoc_redirect" and _quoted_heredoc(n):
            # `<<'EOF'`: bash substitutes nothing in the body.
            literal += [(c.start_byte, c.end_byte) for c in n.children if c.type == "heredoc_body"]
            stack.extend(c for c in n.children if c.type != "heredoc_body")
        else:
            if n.type in ("command_substitution", "process_substitution"):
                seen.update((n.start_byte, n.end_byte - 1))
            stack.extend(n.children)
    for m in _SUBSTITUTION_MARK.finditer(data):
        at = m.start()
        if at in seen or any(start <= at < end for start, end in literal):
            continue
        backslashes = len(data[:at]) - len(data[:at].rstrip(b"\\"))
        if backslashes % 2:
            continue  # `\``, `\$(`: escaped, outside single quotes, so literal
        return f"{m.group().decode()!r} may run a hidden command the parser does not show"
    return ""


def _quoted_heredoc(node: Node) -> bool:
    start = next((c for c in node.children if c.type == "heredoc_start"), None)
    return start is not None and any(q in (start.text or b"").decode("utf-8", "replace") for q in "'\"\\")
