"""The read-only verdict on a whole command line: what lets a Bash call run without a prompt.

A command only reads when the line as a whole hides nothing (`syntax`: no substitution, no
redirection to a file, nothing the parser could not take apart) and every simple command in it
passes the allow-list (`readonly`). Any error on the way is a "no": a classifier bug must never
make a command look safe.
"""

from __future__ import annotations

from .readonly import HIDDEN_WORD, command_problem
from .syntax import analyze

__all__ = ["MAX_READ_ONLY_LENGTH", "is_read_only_command", "only_hidden_words", "read_only_reason"]

# Longer commands always prompt: nobody reviews 10,000 characters of shell by eye either.
MAX_READ_ONLY_LENGTH = 10_000


def read_only_reason(command: str) -> str | None:
    """None when the command only reads; otherwise why it may not (for tests and traces)."""
    if not command.strip():
        return "the command is empty"
    if len(command) > MAX_READ_ONLY_LENGTH:
        return f"commands over {MAX_READ_ONLY_LENGTH} characters are always reviewed"
    a = analyze(command)
    if a.line_problem:
        return a.line_problem
    for cmd in a.commands:
        problem = command_problem(cmd)
        if problem:
            return problem
    return None


def only_hidden_words(command: str) -> str | None:
    """When the one thing keeping the command from being read-only is a word only the shell
    knows (`cat $F`), that reason; else None. Such a command reads, whatever `$F` is."""
    try:
        a = analyze(command)
        if a.line_problem or not command.strip() or len(command) > MAX_READ_ONLY_LENGTH:
            return None
        problems = [p for cmd in a.commands if (p := command_problem(cmd))]
    except Exception:
        return None
    return problems[0] if problems and all(HIDDEN_WORD in p for p in problems) else None


def is_read_only_command(command: str) -> bool:
    try:
        return read_only_reason(command) is None
    except Exception:  # a classifier bug must never make a command look safe
        return False
