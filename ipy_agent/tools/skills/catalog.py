"""Skills on disk: where they are found, what a valid one looks like, which one wins a name.

A skill is a folder with a `SKILL.md`: YAML front matter between `---` lines with at least `name`
and `description`, then the instructions, in Claude Code's format, so existing skills work
unchanged (other front-matter keys, such as `allowed-tools`, are kept but grant nothing: a
skill is text, and changes no permission). Files beside it are the skill's own; the
instructions name them and the model reads them with Read.

Where skills are found, in the order that wins a name:
1. the person's own, `skills/` in their ipy_agent directory (`~/.config/ipy_agent/skills/`);
2. the project's, `.ipy_agent/skills/` then `.claude/skills/`, in the working directory and each
   folder above it up to the project's root (the nearest first);
3. the plugins' `skills/` folders (config/plugins.py), in the order the plugins were given;
4. the built-in notebook skills that ship with the package (`builtin/` beside this module).

A skill that breaks a rule (no front matter, YAML that does not parse, a missing or malformed
name or description, a file too large) is listed with its problem and never offered.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ipy_agent.base.paths import folders_down_to, home_relative, personal_dir

__all__ = [
    "BUILTIN_DIR",
    "MAX_DESCRIPTION",
    "MAX_SKILL_BYTES",
    "Skill",
    "SkillCatalog",
    "SkillProblem",
    "SkillSource",
    "discover_skills",
    "read_skill",
]

SkillSource = Literal["personal", "project", "plugin", "built-in"]
BUILTIN_DIR = Path(__file__).resolve().parent / "builtin"
PROJECT_FOLDERS = (".ipy_agent/skills", ".claude/skills")
NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
MAX_NAME = 64
MAX_DESCRIPTION = 1024
MAX_SKILL_BYTES = 1_000_000  # a SKILL.md larger than this is not a procedure, and is not read
MAX_SKILLS = 200  # skills read from one folder; more are a problem, not a longer prompt


@dataclass(frozen=True, kw_only=True)
class Skill:
    """One valid skill: what the system prompt lists, and where its text is."""

    name: str
    description: str
    path: Path  # its SKILL.md
    source: SkillSource
    where: str  # the folder it was found in, as the person would write it
    body: str = field(repr=False)  # the instructions after the front matter
    body_line: int = 1  # the line of SKILL.md where `body` starts
    extra: dict[str, Any] = field(default_factory=dict, repr=False)  # other front-matter keys

    @property
    def folder(self) -> Path:
        return self.path.parent


@dataclass(frozen=True, kw_only=True)
class SkillProblem:
    """A folder that looks like a skill but is not one, and why."""

    path: Path
    source: SkillSource
    where: str
    problem: str


@dataclass(frozen=True, kw_only=True)
class SkillCatalog:
    """The skills found for one working directory: those offered, those another of the same
    name shadows, and the malformed ones."""

    skills: tuple[Skill, ...] = ()
    shadowed: tuple[tuple[Skill, Skill], ...] = ()  # (the one not offered, the one that wins)
    problems: tuple[SkillProblem, ...] = ()

    def get(self, name: str) -> Skill | None:
        return next((s for s in self.skills if s.name == name), None)


def discover_skills(
    cwd: Path, personal: Path | None = None, *, builtin: bool = True, plugin_dirs: tuple[Path, ...] = ()
) -> SkillCatalog:
    """Every skill for work in `cwd`, in the order of the module's docstring."""
    found: list[Skill] = []
    problems: list[SkillProblem] = []
    folders = _folders(cwd, personal if personal is not None else personal_dir(), builtin)
    plugins: list[tuple[Path, SkillSource, str]] = [(d, "plugin", home_relative(d)) for d in plugin_dirs]
    at = len(folders) - 1 if builtin else len(folders)  # before the built-in skills
    folders[at:at] = plugins
    for folder, source, where in folders:
        for entry in _skill_dirs(folder, source, where, problems):
            parsed = read_skill(entry / "SKILL.md", source=source, where=where)
            if isinstance(parsed, Skill):
                found.append(parsed)
            else:
                problems.append(parsed)
    offered: dict[str, Skill] = {}
    shadowed: list[tuple[Skill, Skill]] = []
    for skill in found:
        if skill.name in offered:
            shadowed.append((skill, offered[skill.name]))
        else:
            offered[skill.name] = skill
    return SkillCatalog(skills=tuple(offered.values()), shadowed=tuple(shadowed), problems=tuple(problems))


def _folders(cwd: Path, personal: Path, builtin: bool) -> list[tuple[Path, SkillSource, str]]:
    out: list[tuple[Path, SkillSource, str]] = [(personal / "skills", "personal", home_relative(personal / "skills"))]
    for folder in reversed(folders_down_to(cwd)):
        for sub in PROJECT_FOLDERS:
            where = sub if folder == cwd else home_relative(folder / sub)
            out.append((folder / sub, "project", where))
    if builtin:
        out.append((BUILTIN_DIR, "built-in", "built in"))
    return out


def _skill_dirs(folder: Path, source: SkillSource, where: str, problems: list[SkillProblem]) -> list[Path]:
    try:
        entries = sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError:
        return []  # no such folder: nothing found there
    if len(entries) > MAX_SKILLS:
        problems.append(
            SkillProblem(
                path=folder,
                source=source,
                where=where,
                problem=f"{len(entries)} folders; only the first {MAX_SKILLS} (by name) were read",
            )
        )
        entries = entries[:MAX_SKILLS]
    return entries


def read_skill(path: Path, *, source: SkillSource, where: str) -> Skill | SkillProblem:
    """The skill whose SKILL.md is `path`, or the problem that keeps it from being offered."""

    def problem(text: str) -> SkillProblem:
        return SkillProblem(path=path, source=source, where=where, problem=text)

    try:
        if path.stat().st_size > MAX_SKILL_BYTES:
            return problem(f"SKILL.md is larger than {MAX_SKILL_BYTES:,} bytes")
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return problem("the folder has no SKILL.md")
    except UnicodeDecodeError:
        return problem("SKILL.md is not UTF-8 text")
    except OSError as e:
        return problem(f"SKILL.md could not be read ({e.strerror or e})")
    front = _front_matter(text)
    if isinstance(front, str):
        return problem(front)
    meta, body, body_line = front
    name, description = meta.get("name"), meta.get("description")
    if not isinstance(name, str) or not name.strip():
        return problem("the front matter has no `name`")
    if len(name) > MAX_NAME or not NAME.fullmatch(name):
        return problem(f"`name` {name!r} must be lowercase letters, digits and hyphens, at most {MAX_NAME} characters")
    if not isinstance(description, str) or not description.strip():
        return problem("the front matter has no `description` (it says when to use the skill)")
    if len(description) > MAX_DESCRIPTION:
        return problem(f"`description` is {len(description):,} characters; at most {MAX_DESCRIPTION:,}")
    extra = {k: v for k, v in meta.items() if k not in ("name", "description")}
    return Skill(
        name=name,
        description=" ".join(description.split()),
        path=path,
        source=source,
        where=where,
        body=body,
        body_line=body_line,
        extra=extra,
    )


def _front_matter(text: str) -> tuple[dict[str, Any], str, int] | str:
    """(the front matter as a mapping, the text after it, the line that text starts on), or
    what is wrong."""
    lines = text.lstrip("\ufeff").splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return "SKILL.md does not start with YAML front matter (a line `---`, then `name:` and `description:`)"
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:
        return "the front matter has no closing `---` line"
    import yaml

    try:
        meta = yaml.safe_load("".join(lines[1:end]))
    except yaml.YAMLError as e:
        # Where the broken construct began (an unclosed bracket), else where parsing stopped.
        mark = getattr(e, "context_mark", None) or getattr(e, "problem_mark", None)
        at = f" at line {mark.line + 2}" if mark is not None else ""  # the file's line: `---` is line 1
        return f"the front matter is not valid YAML{at} ({getattr(e, 'problem', None) or e})"
    if not isinstance(meta, dict):
        return "the front matter is not a mapping of keys to values"
    start = end + 1
    while start < len(lines) and not lines[start].strip():
        start += 1
    return meta, "".join(lines[start:]).rstrip("\n") + "\n", start + 1
