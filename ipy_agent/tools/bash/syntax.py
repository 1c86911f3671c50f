"""Bash commands as a syntax tree: which simple commands a command line runs, and what they do.

The Bash tool decides three things before it runs anything: is the command read-only (then it
runs in parallel with other reads and without a prompt), is it destructive (the prompt warns),
and which simple commands make it up (a permission rule such as `Bash(git diff:*)` must match
each of them). Splitting on `&&` with a regex is how agents get talked into running
`ls $(rm -rf ~)`, so the command is parsed with tree-sitter's bash grammar instead, and anything
the walker below does not understand fails closed: not read-only, not splittable.

This module is the bottom of the package: it turns source text into `SimpleCommand` records and
finds what concerns the command line as a whole (substitutions, redirections, parse errors).
What each program's arguments mean is judged above it: `readonly` (the allow-list), `git`,
`destructive`, `deny`, and `verdict`, which puts them together.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass

import tree_sitter_bash
from tree_sitter import Language, Node, Parser

from .expansions import ansi_c, evaluation_problem
from .unseen import unseen_substitution

__all__ = [
    "UNKNOWN",
    "Analysis",
    "Redirect",
    "SimpleCommand",
    "Word",
    "analyze",
    "redirect_problem",
    "simple_commands",
    "split_command",
]

_LANGUAGE = Language(tree_sitter_bash.language())

# Nodes that only group simple commands: walking through them loses nothing.
_GROUPING = {"program", "list", "pipeline", "subshell", "compound_statement", "negated_command"}
# Redirect outputs that write nothing anyone keeps.
_HARMLESS_TARGETS = {"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"}
# `a\<newline>b` is one word to bash but two to tree-sitter; `-del\<newline>ete` would hide.
_GLUED_CONTINUATION = re.compile(r"\S\\\r?\n\S")
_BRACE_EXPANSION = re.compile(r"\{[^{}]*(,|\.\.)[^{}]*\}")
# Tilde forms other than `~` and `~/...` (`~root`, `~+`, `~-` read $PWD and $OLDPWD), and a tilde
# after `=` or `:`, which bash expands in words that look like assignments.
_SHELL_TILDE = re.compile(r"^~[^/]|[=:]~")


@dataclass(frozen=True)
class Word:
    """One shell word. `text` is its value after quote removal, or None when only the shell
    knows it (a `$VAR`, `$((...))`, a brace expansion, a glob that may expand to `-flag`)."""

    source: str
    text: str | None
    glob: bool = False

    @property
    def known(self) -> bool:
        return self.text is not None


# An item xargs reads from stdin: a list of names, like a glob's (so only programs none of whose
# flags write or run anything take it).
UNKNOWN = Word(source="<stdin item>", text=None, glob=True)


@dataclass(frozen=True)
class Redirect:
    op: str
    target: Word | None


@dataclass(frozen=True)
class SimpleCommand:
    """One simple command: `FOO=1 git -C x log >out` and the like."""

    text: str
    name: Word | None
    args: tuple[Word, ...] = ()
    assignments: tuple[tuple[str, Word], ...] = ()
    kind: str = "command"  # "command", "test" ([[ ... ]]) or "assignment"


@dataclass(frozen=True)
class Analysis:
    commands: tuple[SimpleCommand, ...]
    # Why the command line cannot be split into simple commands, or "" when it can.
    structure_problem: str
    # Why it is not read-only as a whole (substitution, redirection to a file, ...), or "".
    line_problem: str
    redirects: tuple[Redirect, ...]
    # Every command node anywhere, including inside substitutions and loops (for warnings).
    everything: tuple[SimpleCommand, ...]
    # Why `everything` may miss a command bash would run (a parse error, a substitution the tree
    # does not show, a word bash and the parser split differently), or "".
    unseen: str = ""


# --- words ----------------------------------------------------------------------------------


def _unescape_unquoted(s: str) -> str:
    return re.sub(r"\\(.)", r"\1", s.replace("\\\n", ""), flags=re.S)


def _unescape_double(s: str) -> str:
    s = s.replace("\\\n", "")
    return re.sub(r'\\([$`"\\])', r"\1", s)


def _parts(node: Node) -> tuple[str | None, bool, bool]:
    """(value, has unquoted glob chars, starts with an unquoted glob char)."""
    t, src = node.type, _text(node)
    if t == "word":
        glob_at = [i for i, c in enumerate(src) if c in "*?[" and (i == 0 or src[i - 1] != "\\")]
        if _BRACE_EXPANSION.search(src):
            return None, True, False  # a list of words, like a glob's
        if _SHELL_TILDE.search(src):
            return None, False, False  # `~user`, `~+`, `~-`, `x=~/y`: only the shell knows where
        return _unescape_unquoted(src), bool(glob_at), bool(glob_at) and glob_at[0] == 0
    if t in ("number", "test_operator"):
        return src, False, False
    if t == "raw_string":
        return src[1:-1], False, False
    if t == "ansi_c_string":
        return ansi_c(src[2:-1]), False, False
    if t == "string":
        out = []
        for c in node.named_children:
            if c.type != "string_content":
                return None, False, False
            out.append(_unescape_double(_text(c)))
        return "".join(out), False, False
    if t == "concatenation":
        if _BRACE_EXPANSION.search(src):
            return None, True, False
        values, any_glob, first_glob = [], False, False
        for i, c in enumerate(node.children):
            v, g, starts = _parts(c)
            if v is None:
                return None, False, False
            values.append(v)
            any_glob = any_glob or g
            first_glob = first_glob or (i == 0 and starts)
        return "".join(values), any_glob, first_glob
    return None, False, False


def _word(node: Node) -> Word:
    value, glob, starts_with_glob = _parts(node)
    # A glob that may expand to a name starting with `-` could become any flag.
    if starts_with_glob:
        value = None
    return Word(source=_text(node), text=value, glob=glob)


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")


# --- walking the tree -------------------------------------------------------------------------


def _simple(node: Node, problems: list[str]) -> SimpleCommand:
    name: Word | None = None
    args: list[Word] = []
    assigns: list[tuple[str, Word]] = []
    for i, child in enumerate(node.children):
        field = node.field_name_for_child(i)
        if field == "name":
            inner = child.named_children
            name = _word(inner[0]) if len(inner) == 1 else Word(source=_text(child), text=None)
        elif field == "argument":
            args.append(_word(child))
        elif child.type == "variable_assignment":
            assigns.append(_assignment(child))
        elif child.type == "file_redirect":
            args += _words_after_redirect(child)  # judged line-wide in `_scan`, but see there
        elif child.type in ("herestring_redirect", "comment"):
            pass  # judged line-wide in `_scan`
        else:
            problems.append(f"{child.type!r} in a command is not understood")
    parent = node.parent
    if parent is not None and parent.type == "redirected_statement" and parent.child_by_field_name("body") == node:
        for sibling in parent.named_children:
            if sibling.type in ("file_redirect", "heredoc_redirect"):
                args += _words_after_redirect(sibling)
    if name is not None and name.text is None:
        problems.append(f"the command name {name.source!r} is only known when the shell runs")
    return SimpleCommand(text=_text(node), name=name, args=tuple(args), assignments=tuple(assigns))


def _words_after_redirect(node: Node) -> list[Word]:
    """Arguments written after a redirection: `cat </dev/null secret` passes `secret` to cat,
    but tree-sitter files it under the redirection (a second destination, or a heredoc's
    argument), where no check would look for it."""
    if node.type == "file_redirect":
        return [_word(d) for d in node.children_by_field_name("destination")[1:]]
    return [_word(a) for a in node.children_by_field_name("argument")]


def _assignment(node: Node) -> tuple[str, Word]:
    var = node.child_by_field_name("name")
    value = node.child_by_field_name("value")
    return (_text(var) if var else "", _word(value) if value is not None else Word(source="", text=""))


def _test_command(node: Node) -> SimpleCommand:
    leaves: list[Word] = []

    def collect(n: Node) -> None:
        if n.type in ("word", "string", "raw_string", "number", "test_operator", "concatenation"):
            leaves.append(_word(n))
        elif n.type in ("simple_expansion", "expansion", "arithmetic_expansion"):
            leaves.append(Word(source=_text(n), text=None))
        else:
            for c in n.children:
                collect(c)

    collect(node)
    return SimpleCommand(text=_text(node), name=Word(source="[[", text="[["), args=tuple(leaves), kind="test")


def _walk(node: Node, out: list[SimpleCommand], problems: list[str]) -> None:
    t = node.type
    if t in _GROUPING:
        for c in node.named_children:
            _walk(c, out, problems)
    elif t == "redirected_statement":
        _walk_redirected(node, out, problems)
    elif t == "command":
        out.append(_simple(node, problems))
    elif t == "test_command":
        out.append(_test_command(node))
    elif t == "variable_assignment":
        name, value = _assignment(node)
        out.append(SimpleCommand(text=_text(node), name=None, assignments=((name, value),), kind="assignment"))
    elif t != "comment":
        problems.append(f"{t.replace('_', ' ')} is more than a list of simple commands")


def _walk_redirected(node: Node, out: list[SimpleCommand], problems: list[str]) -> None:
    """A command with redirections: its own text keeps them (the rules see `cmd > f`), and the
    commands of a pipeline that tree-sitter nests in a heredoc are walked as the line's own."""
    body = node.child_by_field_name("body")
    before = len(out)
    if body is not None:
        _walk(body, out, problems)
    trailing = []
    own_end = node.end_byte  # where this command's own text stops
    for c in node.named_children:
        if c == body:
            continue
        if c.type == "heredoc_redirect":
            own_end = _walk_heredoc(c, out, problems, own_end)
        trailing.append(_text(c).split("\n", 1)[0])
    if len(out) == before:
        out.append(SimpleCommand(text=_text(node), name=None, kind="redirect"))
    elif body is not None and body.type == "command":
        whole = node.text or b""
        own = whole[: own_end - node.start_byte].decode("utf-8", "replace").split("\n", 1)[0]
        out[before] = _retext(out[before], own.strip())
    elif trailing:
        out[-1] = _retext(out[-1], out[-1].text + " " + " ".join(trailing))


def _walk_heredoc(node: Node, out: list[SimpleCommand], problems: list[str], own_end: int) -> int:
    """`cat <<EOF | grep x`: the rest of the pipeline sits inside the heredoc node. Walks it and
    returns where the redirected command's own text ends (`own_end`, or earlier)."""
    for cc in node.named_children:
        if cc.type in _GROUPING or cc.type in ("command", "redirected_statement"):
            own_end = min(own_end, cc.start_byte)
            _walk(cc, out, problems)
        elif cc.type == "heredoc_body":
            own_end = min(own_end, cc.start_byte)
    return own_end


def _retext(cmd: SimpleCommand, text: str) -> SimpleCommand:
    return SimpleCommand(text=text, name=cmd.name, args=cmd.args, assignments=cmd.assignments, kind=cmd.kind)


def _scan(root: Node) -> tuple[str, list[Redirect], list[SimpleCommand], str]:
    """Line-wide facts: the first hidden-command or parse problem, redirects, all commands, and
    the first expansion that evaluates a variable's value as code."""
    problem = evaluation = ""
    redirects: list[Redirect] = []
    everything: list[SimpleCommand] = []
    stack = [root]
    while stack:
        n = stack.pop()
        t = n.type
        if (t == "ERROR" or n.is_missing) and not problem:
            problem = "part of the command could not be parsed"
        elif t == "command_substitution" and not problem:
            problem = "command substitution runs a hidden command"
        elif t == "process_substitution" and not problem:
            problem = "process substitution runs a hidden command"
        elif t == "file_redirect":
            dest = n.child_by_field_name("destination")
            op = next((_text(c) for c in n.children if not c.is_named), "")
            redirects.append(Redirect(op=op, target=_word(dest) if dest is not None else None))
        elif t == "command":
            everything.append(_simple(n, []))
        elif t in ("expansion", "arithmetic_expansion") and not evaluation:
            evaluation = evaluation_problem(n.type, _text(n))
        elif t == "&" and not n.is_named and not evaluation:
            # Nobody asked for a process that outlives the call (`wc f & sleep 0.01`).
            evaluation = "a command put in the background with `&` may outlive the call"
        stack.extend(reversed(n.children))
    everything.reverse()
    return problem, redirects, everything, evaluation


def redirect_problem(r: Redirect) -> str:
    """Why a redirection writes to a file or opens a connection (bash's `/dev/tcp/host/port`),
    or "" when it only reads or writes nowhere lasting."""
    if r.op in ("<<", "<<-", "<<<"):
        return ""
    if r.op == "<":
        if r.target is None or r.target.text is None:
            return f"redirection <{r.target.source if r.target else ''} reads a file only known when the shell runs"
        if not re.match(r"/dev/(tcp|udp)/", os.path.normpath(r.target.text)):
            return ""
    if r.op in (">&", "<&", ">&-", "<&-") and (
        r.target is None or (r.target.text or "").rstrip("-").isdigit() or r.target.text == "-"
    ):
        return ""  # duplicating or closing a file descriptor writes nothing
    target = r.target.text if r.target is not None else None
    if target is not None and re.match(r"/dev/(tcp|udp)/", os.path.normpath(target)):
        return f"redirection {r.op}{target} opens a network connection"
    if target in _HARMLESS_TARGETS:
        return ""
    return f"redirection {r.op}{r.target.source if r.target else ''} writes to a file"


@functools.lru_cache(maxsize=512)
def analyze(command: str) -> Analysis:
    """Parse once; every question about the same command reuses the answer."""
    tree = Parser(_LANGUAGE).parse(command.encode("utf-8"))
    problems: list[str] = []
    commands: list[SimpleCommand] = []
    _walk(tree.root_node, commands, problems)
    hidden, redirects, everything, evaluation = _scan(tree.root_node)
    unseen = unseen_substitution(tree.root_node, command)
    if _GLUED_CONTINUATION.search(command):
        unseen = unseen or "a backslash-newline inside a word is read differently by bash and the parser"
    structure = hidden or (problems[0] if problems else "") or unseen
    line = structure or evaluation
    if not line:
        line = next((p for p in map(redirect_problem, redirects) if p), "")
    return Analysis(
        commands=tuple(commands),
        structure_problem=structure,
        line_problem=line,
        redirects=tuple(redirects),
        everything=tuple(everything),
        unseen=unseen,
    )


# --- public questions ---------------------------------------------------------------------------


def split_command(command: str) -> list[str] | None:
    """The source texts of the simple commands in `command`, in order; None when it cannot be
    split safely (parse errors, `$(...)`/`<(...)`, expansions in command position, loops and
    functions). A permission rule must match every returned text. Redirections stay with the
    command they follow, so `echo x > f` is one text, not two."""
    a = analyze(command)
    if a.structure_problem:
        return None
    return [c.text.strip() for c in a.commands]


def simple_commands(command: str) -> tuple[SimpleCommand, ...] | None:
    """The parsed simple commands, or None when the command cannot be split safely."""
    a = analyze(command)
    return None if a.structure_problem else a.commands
