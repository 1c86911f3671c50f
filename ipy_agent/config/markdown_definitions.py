"""Claude Code's Markdown definitions, read as they are: slash commands and agent files.

Both are a Markdown file with optional YAML front matter between `---` lines:

- a slash command (`.claude/commands/NAME.md`, `~/.claude/commands/NAME.md`, a plugin's
  `commands/NAME.md`): its body is the prompt `/NAME args` stands for, with `$ARGUMENTS` (all the
  arguments), `$1`, `$2`, ... (one word each) substituted. Front matter: `description`,
  `argument-hint`, `model` (for this prompt's run), `allowed-tools` (narrows the tools offered
  for this prompt's run; it never grants a permission).
- an agent file (`.claude/agents/NAME.md`, `~/.claude/agents/NAME.md`, a plugin's `agents/`):
  front matter `name`, `description`, `tools` (a list, or a comma-separated string; none: the
  parent's), `model`; the body is the subagent's system prompt. Each becomes a Task
  `subagent_type`.

The name of a command is its file's name (`review.md` is `/review`); a plugin's command is also
`/PLUGIN:NAME`. A file that cannot be read or parsed is a `DefinitionProblem`, listed and not used.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

__all__ = [
    "AgentFile",
    "DefinitionProblem",
    "SlashCommand",
    "parse_front_matter",
    "read_agent_file",
    "read_command",
    "read_folder",
    "substitute_arguments",
    "tool_names",
]

DefinitionKind = Literal["command", "agent"]
MAX_BYTES = 500_000
Meta = dict[str, object]


@dataclass(frozen=True, kw_only=True)
class DefinitionProblem:
    """A command or agent file that is not used, and why."""

    path: Path
    kind: DefinitionKind
    problem: str


@dataclass(frozen=True, kw_only=True)
class SlashCommand:
    name: str  # `/name` (the file's name, without .md)
    path: Path
    body: str
    source: str  # "project", "personal" or "plugin NAME"
    plugin: str | None = None  # the plugin's name: also reachable as `/plugin:name`
    description: str = ""
    argument_hint: str = ""
    model: str | None = None
    allowed_tools: tuple[str, ...] | None = None  # None: every tool the run offers

    @property
    def qualified_name(self) -> str:
        return f"{self.plugin}:{self.name}" if self.plugin else self.name

    def expand(self, arguments: str) -> str:
        """The prompt `/name arguments` stands for."""
        return substitute_arguments(self.body, arguments)


@dataclass(frozen=True, kw_only=True)
class AgentFile:
    name: str
    description: str
    system_prompt: str
    path: Path
    source: str
    tools: tuple[str, ...] | None = None  # None: the parent's tools
    model: str | None = None


def parse_front_matter(text: str) -> tuple[Meta, str] | str:
    """(the front matter, the body after it) or what is wrong; no front matter is an empty one."""
    lines = text.lstrip("\ufeff").splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return {}, text.lstrip("\ufeff")
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:
        return "the front matter has no closing `---` line"
    import yaml

    try:
        meta = yaml.safe_load("".join(lines[1:end])) or {}
    except yaml.YAMLError as e:
        return f"the front matter is not valid YAML ({getattr(e, 'problem', None) or e})"
    if not isinstance(meta, dict):
        return "the front matter is not a mapping of keys to values"
    return {str(k): v for k, v in meta.items()}, "".join(lines[end + 1 :]).strip("\n") + "\n"


def tool_names(value: object) -> tuple[str, ...] | None:
    """`allowed-tools` / `tools` as tool names: a list or a comma-separated string; a rule's
    specifier is dropped (`Bash(git add:*)` names Bash: it narrows to the tool, and grants
    nothing). None when not given."""
    if value is None:
        return None
    items = value if isinstance(value, list) else re.split(r",(?![^(]*\))", str(value))
    return tuple(dict.fromkeys(n for item in items if (n := str(item).split("(", 1)[0].strip())))


def substitute_arguments(body: str, arguments: str) -> str:
    """`$ARGUMENTS` becomes all of `arguments`; `$1`, `$2`, ... one word each (shell quoting
    groups words; a missing one is empty)."""
    try:
        words = shlex.split(arguments)
    except ValueError:
        words = arguments.split()
    out = body.replace("$ARGUMENTS", arguments)
    return re.sub(r"\$(\d+)", lambda m: words[int(m[1]) - 1] if 0 < int(m[1]) <= len(words) else "", out)


def _read(path: Path, kind: DefinitionKind) -> tuple[Meta, str] | DefinitionProblem:
    try:
        if path.stat().st_size > MAX_BYTES:
            return DefinitionProblem(path=path, kind=kind, problem=f"larger than {MAX_BYTES:,} bytes")
        parsed = parse_front_matter(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        return DefinitionProblem(path=path, kind=kind, problem=f"could not be read ({e})")
    return DefinitionProblem(path=path, kind=kind, problem=parsed) if isinstance(parsed, str) else parsed


def _text(meta: Meta, key: str) -> str:
    value = meta.get(key)
    return " ".join(str(value).split()) if value is not None else ""


def read_command(path: Path, *, source: str, plugin: str | None = None) -> SlashCommand | DefinitionProblem:
    read = _read(path, "command")
    if isinstance(read, DefinitionProblem):
        return read
    meta, body = read
    if not body.strip():
        return DefinitionProblem(path=path, kind="command", problem="the command has no body")
    model = _text(meta, "model")
    return SlashCommand(
        name=path.stem,
        path=path,
        body=body,
        source=source,
        plugin=plugin,
        description=_text(meta, "description") or body.strip().splitlines()[0].lstrip("# ")[:100],
        argument_hint=_text(meta, "argument-hint"),
        model=model if model and model != "inherit" else None,
        allowed_tools=tool_names(meta.get("allowed-tools")),
    )


def read_agent_file(path: Path, *, source: str) -> AgentFile | DefinitionProblem:
    read = _read(path, "agent")
    if isinstance(read, DefinitionProblem):
        return read
    meta, body = read

    def problem(text: str) -> DefinitionProblem:
        return DefinitionProblem(path=path, kind="agent", problem=text)

    name, description = _text(meta, "name"), _text(meta, "description")
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}", name):
        return problem("the front matter needs a `name` (letters, digits, - _ . :)")
    if not description:
        return problem("the front matter needs a `description` (it says when to use the agent)")
    if not body.strip():
        return problem("the file has no body (the agent's system prompt)")
    model = _text(meta, "model")
    return AgentFile(
        name=name,
        description=description,
        system_prompt=body,
        path=path,
        source=source,
        tools=tool_names(meta.get("tools")),
        model=model if model and model != "inherit" else None,
    )


def read_folder(
    folder: Path, kind: DefinitionKind, *, source: str, plugin: str | None = None
) -> tuple[list[SlashCommand | AgentFile], list[DefinitionProblem]]:
    """Every `*.md` of `folder` (sorted by name) as `kind`; a missing folder has none."""
    try:
        files = sorted(p for p in folder.glob("*.md") if p.is_file())
    except OSError:
        return [], []
    found: list[SlashCommand | AgentFile] = []
    problems: list[DefinitionProblem] = []
    for path in files:
        item = (
            read_command(path, source=source, plugin=plugin)
            if kind == "command"
            else read_agent_file(path, source=source)
        )
        (problems if isinstance(item, DefinitionProblem) else found).append(item)  # type: ignore[arg-type]
    return found, problems
