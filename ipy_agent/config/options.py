"""The options of the `%agent` line: one table, read by both its splitter and its argparse parser.

The line is split here rather than by argparse alone because the prompt that follows the
options is free text: it is never tokenized (an apostrophe in it must not break anything), and
a rule value runs to its closing parenthesis, so `--allow Bash(git status:*)` needs no quotes.
`parse_line` parses a line once, into a typed `AgentLine`; the magics build `%agent?`'s help
from the same table, so an option is declared once. Plain Python (no IPython): errors are ValueErrors with a message for the person.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, NoReturn

from ipy_agent.contract.decision import PERMISSION_MODES, PermissionMode
from ipy_agent.permissions.rules import RuleSpec

from .settings import rules_from_lists

__all__ = ["AGENT_OPTIONS", "AgentLine", "AgentOption", "option_rules", "parse_line", "split_options"]


@dataclass(frozen=True, kw_only=True)
class AgentOption:
    flag: str
    help: str
    example: str = ""  # a value, for options that take one (shown when the value is missing)
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    type: Callable[[str], Any] | None = None
    repeatable: bool = False

    @property
    def takes_value(self) -> bool:
        return bool(self.example)

    def argparse_kwargs(self) -> dict[str, Any]:
        if not self.takes_value:
            return {"action": "store_true", "help": self.help}
        kwargs: dict[str, Any] = {"help": self.help}
        if self.repeatable:
            kwargs.update(action="append", default=[])
        for key in ("metavar", "choices", "type"):
            if (value := getattr(self, key)) is not None:
                kwargs[key] = list(value) if key == "choices" else value
        return kwargs


AGENT_OPTIONS: tuple[AgentOption, ...] = (
    AgentOption(
        flag="--new",
        help='Start a fresh conversation (the old one is dropped; rules granted with "Always allow" stay).',
    ),
    AgentOption(flag="--mode", help="Permission mode for this run.", example="acceptEdits", choices=PERMISSION_MODES),
    AgentOption(
        flag="--model",
        help="Model for this run: a Claude name, or PROVIDER:NAME (bedrock:, vertex:, foundry:, openai:, "
        "ollama:, vllm:, llamacpp:, lmstudio:); '?' lists the providers and what each needs.",
        example="ollama:llama3.2",
    ),
    AgentOption(
        flag="--style",
        help="Output style from this run on: Explanatory, Learning, a .claude/output-styles name, or default.",
        example="Learning",
        metavar="NAME",
    ),
    AgentOption(flag="--max-turns", help="Model requests before the run stops.", example="20", type=int),
    AgentOption(
        flag="--max-budget-usd",
        help="What this run may spend (estimated, US dollars); it stops before the next model request.",
        example="0.50",
        metavar="USD",
        type=float,
    ),
    AgentOption(
        flag="--script",
        help='Replay a ScriptedModel transcript {"turns": [...]} (offline).',
        example="demo.json",
        metavar="PATH",
    ),
    AgentOption(
        flag="--record",
        help="Record this conversation from here on into a transcript that --script replays.",
        example="session.json",
        metavar="PATH",
    ),
    AgentOption(
        flag="--allow",
        help="Allow rule for this run (repeatable).",
        example="'Bash(git status:*)'",
        metavar="RULE",
        repeatable=True,
    ),
    AgentOption(
        flag="--ask",
        help="Ask rule for this run: always prompt for these calls, even where a rule or the mode allows (repeatable).",
        example="'Bash(git push:*)'",
        metavar="RULE",
        repeatable=True,
    ),
    AgentOption(
        flag="--deny",
        help="Deny rule for this run (repeatable).",
        example="'Read(**/.env)'",
        metavar="RULE",
        repeatable=True,
    ),
    AgentOption(flag="--background", help="Kernel: start the run and return at once."),
    AgentOption(
        flag="--verify",
        help="Before the run ends, if it changed the notebook, run NotebookVerify (a new kernel, top to bottom) "
        "and give the model its report.",
    ),
    AgentOption(flag="--no-widgets", help="Text output; only what rules and mode allow runs."),
    AgentOption(
        flag="--no-instructions",
        help="This run's requests carry no AGENTS.md, CLAUDE.md or notebook instructions (%%agent_instructions).",
    ),
    AgentOption(
        flag="--resume",
        help="Continue a conversation saved with %%agent_save.",
        example="conversation.json",
        metavar="PATH",
    ),
)
_BY_FLAG = {o.flag: o for o in AGENT_OPTIONS}
_TOKEN = re.compile(r"""\s*("(?:[^"\\]|\\.)*"|'[^']*'|\S+)""")


def split_options(line: str) -> tuple[list[str], str]:
    """Leading options as argv tokens, and the rest of the line verbatim as the prompt."""
    tokens: list[str] = []
    pos = 0
    while (m := _TOKEN.match(line, pos)) is not None:
        tok = m.group(1)
        if tok == "--":
            return tokens, line[m.end() :].strip()
        if not tok.startswith("-") or tok == "-":
            return tokens, line[m.start(1) :].strip()
        name, eq, value = tok.partition("=")
        option = _BY_FLAG.get(name)
        if option is None:
            flags = ", ".join(o.flag for o in AGENT_OPTIONS)
            raise ValueError(
                f"%agent has no option {name!r}. Options: {flags} "
                "(see %agent?). To start a prompt with '-', put '--' before it."
            )
        pos = m.end()
        tokens.append(name)
        if not option.takes_value:
            continue
        if not eq:
            if (v := _TOKEN.match(line, pos)) is None:
                raise ValueError(f"{name} needs a value, e.g. {name} {option.example}")
            value, pos = v.group(1), v.end()
            while (
                option.metavar == "RULE"
                and value[0] not in "'\""
                and value.count("(") > value.count(")")
                and (more := _TOKEN.match(line, pos)) is not None
            ):
                value, pos = value + line[pos : more.end()], more.end()
        tokens.append(value[1:-1] if len(value) > 1 and value[0] == value[-1] and value[0] in "'\"" else value)
    return tokens, ""


@dataclass(frozen=True, kw_only=True)
class AgentLine:
    """A `%agent` line (and `%%agent` cell body), parsed once: its options and the request.

    One field per option of `AGENT_OPTIONS` (its flag without dashes); a test keeps them equal."""

    prompt: str
    new: bool = False
    mode: PermissionMode | None = None
    model: str | None = None
    style: str | None = None
    max_turns: int | None = None
    max_budget_usd: float | None = None
    script: str | None = None
    record: str | None = None
    allow: tuple[str, ...] = ()
    ask: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    background: bool = False
    verify: bool = False
    no_widgets: bool = False
    no_instructions: bool = False
    resume: str | None = None

    def rules(self) -> list[RuleSpec]:
        """The rules given with --allow, --ask and --deny; ValueError names the option and the bad rule."""
        return option_rules(allow=self.allow, ask=self.ask, deny=self.deny)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise ValueError(f"%agent: {message} (see %agent?)")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="%agent", add_help=False)
    for option in AGENT_OPTIONS:
        parser.add_argument(option.flag, **option.argparse_kwargs())
    return parser


_PARSER = _parser()


def parse_line(line: str, cell: str | None = None) -> AgentLine:
    """The options and the request of `%agent LINE` (with `%%agent`, the cell body joins the
    request). ValueError, with a message for the person, for anything that is not right."""
    tokens, prompt = split_options(line)
    ns = _PARSER.parse_args(tokens)
    if cell is not None:
        prompt = "\n".join(p for p in (prompt, cell.strip()) if p)
    values = {k.replace("-", "_"): v for k, v in vars(ns).items()}
    fields: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in values.items()}
    parsed = AgentLine(prompt=prompt, **fields)
    if parsed.max_turns is not None and parsed.max_turns < 1:
        raise ValueError(f"--max-turns must be at least 1, not {parsed.max_turns!r}")
    if parsed.max_budget_usd is not None and not parsed.max_budget_usd > 0:
        raise ValueError(f"--max-budget-usd must be more than 0, not {parsed.max_budget_usd!r}")
    parsed.rules()  # a bad rule is reported now, where it was typed
    return parsed


def option_rules(*, allow: Iterable[str] = (), ask: Iterable[str] = (), deny: Iterable[str] = ()) -> list[RuleSpec]:
    """Rules given with --allow / --ask / --deny; ValueError names the option and the bad rule."""
    out: list[RuleSpec] = []
    for kind, texts in (("allow", allow), ("ask", ask), ("deny", deny)):
        try:
            out += rules_from_lists(f"%agent --{kind}", **{kind: texts})
        except ValueError as e:
            raise ValueError(f"--{kind}: {e}") from None
    return out
