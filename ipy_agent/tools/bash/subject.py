"""What a Bash command means for permission rules: the `RuleSubject` the Bash tool hands over.

The runtime matches rules against text and parses no shell. This module gives it, from the one
tree-sitter parse, everything a rule needs:
- `parts`: the simple commands an allow rule must each cover (`git status && rm x` is two), each
  also behind wrappers that only time or schedule it (`timeout 5 git status` is `git status`);
  None, so that no allow rule vouches for it, when the line hides commands (`$(...)`, `<(...)`),
  cannot be split, or writes a file by redirection (`git status > f` is an edit of `f`);
- `spellings`: every command the line may run, those inside substitutions included, as written
  and normalised (`\\rm x`, `env rm x`, `/bin/rm x`, `bash -c 'rm x'` all give `rm x`), which deny
  and ask rules match;
- `hidden`: why the line may run a program no spelling names (`$CMD x`, `sh < script`,
  `find -exec "$p" {} ;`, `git -c alias.x=...`): then every deny and ask rule holds, in every
  mode, since any of them could be the one that applies.
"""

from __future__ import annotations

from ipy_agent.contract.tool import CommandPart, RuleSubject

from .syntax import SimpleCommand, analyze, redirect_problem
from .wrappers import TIMING_WRAPPERS, hidden_reason, normalized_commands, unwrap

__all__ = ["command_part", "command_subject"]


def command_subject(command: str) -> RuleSubject:
    """The rule subject of one Bash command line. A parser failure leaves only the raw text,
    which deny and ask rules still match and no allow rule covers."""
    try:
        a = analyze(command)
        spellings = [c.text.strip() for c in reversed(a.everything)] + normalized_commands(command)
        writes = any(redirect_problem(r) for r in a.redirects)
        parts = None if a.structure_problem or writes else tuple(command_part(c) for c in a.commands)
        hidden = hidden_reason(command)
    except Exception:  # a parser bug must not lift a deny rule or grant an allow
        return RuleSubject(kind="command", value=command, hidden="the command could not be parsed")
    return RuleSubject(
        kind="command", value=command, parts=parts, spellings=tuple(dict.fromkeys(spellings)), hidden=hidden
    )


def command_part(cmd: SimpleCommand) -> CommandPart:
    """One simple command for allow rules: as written, and without timing wrappers in front."""
    text = cmd.text.strip()
    if cmd.name is None:
        return CommandPart(text=text)
    wrappers, real = unwrap([cmd.name, *cmd.args], only=TIMING_WRAPPERS)
    if not wrappers or not real or real[0].text is None:
        return CommandPart(text=text)
    in_front = [w.text or "" for w in [cmd.name, *cmd.args][: len(cmd.args) + 1 - len(real)]]
    if "time" in wrappers and any(t.startswith(("-o", "--o", "-a", "--a")) for t in in_front):
        return CommandPart(text=text)  # `time -o FILE` writes FILE: not only timing any more
    # The form is the text from the real program on, as written (quotes and spacing kept):
    # step over the words in front of it in order, so an option value that happens to equal
    # the program's name is not taken for it.
    words = [cmd.name, *cmd.args]
    at = 0
    for w in words[: len(words) - len(real)]:
        found = text.find(w.source, at)
        if found < 0:
            return CommandPart(text=text)
        at = found + len(w.source)
    rest = text[at:].lstrip()
    return CommandPart(text=text, forms=(rest,) if rest.startswith(real[0].source) else ())
