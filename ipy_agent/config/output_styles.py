"""Output styles: how the agent talks to the person, chosen by name, in Claude Code's format.

`Agent(output_style="Explanatory")`, `%agent --style Learning`, or the `outputStyle` key of a
settings file choose one. A style's text replaces the guide's default style line ("Be concise..."):
the rules of the system prompt (what the runtime enforces) stay as they are, and so does
everything else. The style is read with the standing text, once per prompt, so the system prompt
stays byte for byte the same while a run goes on.

Built in: `Explanatory` (short insight notes on why) and `Learning` (the person writes small,
marked pieces themselves: `TODO(human)`). Custom styles are Markdown files in
`.claude/output-styles/*.md` of the project or of the person's home (`~/.claude/output-styles`),
with front matter `name` and `description`; the body is the style's text. A style is found by its
name, case-insensitively; the project's file wins over the person's, and both over a built-in.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ipy_agent.base.paths import settings_dir

__all__ = ["BUILTIN_STYLES", "OutputStyle", "find_output_style", "list_output_styles", "settings_output_style"]


@dataclass(frozen=True, kw_only=True)
class OutputStyle:
    name: str
    description: str
    text: str  # what replaces the default style line of the system prompt
    source: str = "built-in"


BUILTIN_STYLES: tuple[OutputStyle, ...] = (
    OutputStyle(
        name="Explanatory",
        description="Explains the choices it makes with short insight notes.",
        text="Explain your reasoning as you work, for a person who wants to understand the choices. Before or "
        "after a step that involves a choice, add a short insight note, at most three lines:\n\n"
        "★ Insight ─────────────────────────────────────\n"
        "[why this approach; what the alternative would have cost; a detail of this codebase or library]\n"
        "─────────────────────────────────────────────────\n\n"
        "Keep the notes about this notebook and this code, not general programming. Otherwise be concise, "
        "and when you are done, stop and summarise in a few sentences.",
    ),
    OutputStyle(
        name="Learning",
        description="Leaves small, marked pieces for the person to write, and explains as it goes.",
        text="The person is learning: work with them, not for them. Do the scaffolding yourself, and for each "
        "small piece that teaches something (a function body of 2-10 lines, a key decision, a formula), leave it "
        "to the person: write it as code marked with a `# TODO(human)` comment and a short brief of what to "
        "write and why (inputs, expected result, one hint). In a notebook, put the piece in a code cell of its "
        "own with the TodoHuman tool, which waits until the person has run the cell: then read what they wrote, "
        "build on it, and say in one or two sentences what it shows. Leave at most one piece at a time. Add short "
        "insight notes (★ Insight, at most three lines) on why, about this notebook and this code. Otherwise be "
        "concise, and when you are done, stop and summarise in a few sentences.",
    ),
)


def _front_matter(text: str) -> tuple[dict[str, object], str] | str:
    lines = text.lstrip("\ufeff").splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return "it does not start with front matter (a line `---`, then `name:` and `description:`)"
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:
        return "its front matter has no closing `---` line"
    import yaml

    try:
        meta = yaml.safe_load("".join(lines[1:end]))
    except yaml.YAMLError as e:
        return f"its front matter is not valid YAML ({e})"
    if not isinstance(meta, dict):
        return "its front matter is not a mapping of keys to values"
    return meta, "".join(lines[end + 1 :]).strip() + "\n"


def read_style_file(path: Path, source: str) -> OutputStyle | str:
    """The style a Markdown file defines, or what is wrong with it."""
    try:
        parsed = _front_matter(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        return f"{path}: could not be read ({e})"
    if isinstance(parsed, str):
        return f"{path}: {parsed}"
    meta, body = parsed
    name = meta.get("name") or path.stem
    description = meta.get("description") or ""
    if not isinstance(name, str) or not isinstance(description, str) or not body.strip():
        return f"{path}: needs a string name and description, and a body (the style's text)"
    return OutputStyle(name=name.strip(), description=description.strip(), text=body.strip(), source=source)


def _folders(cwd: Path) -> list[tuple[Path, str]]:
    return [
        (cwd / ".claude" / "output-styles", "project"),
        (Path.home() / ".claude" / "output-styles", "person"),
    ]


def list_output_styles(cwd: str | Path) -> tuple[list[OutputStyle], list[str]]:
    """Every style that can be chosen in `cwd` (the project's first, then the person's, then the
    built-in ones; a name seen before is hidden), and a problem for each file that is not one."""
    styles: list[OutputStyle] = []
    problems: list[str] = []
    seen: set[str] = set()
    for folder, source in _folders(Path(cwd)):
        for path in sorted(folder.glob("*.md")) if folder.is_dir() else []:
            style = read_style_file(path, source)
            if isinstance(style, str):
                problems.append(style)
            elif style.name.lower() not in seen:
                seen.add(style.name.lower())
                styles.append(style)
    styles += [s for s in BUILTIN_STYLES if s.name.lower() not in seen]
    return styles, problems


def find_output_style(name: str, cwd: str | Path) -> OutputStyle | None:
    """The style called `name` ("default": None, our own style line), or ValueError that lists
    the styles there are."""
    if name.strip().lower() in ("", "default"):
        return None
    styles, problems = list_output_styles(cwd)
    for style in styles:
        if style.name.lower() == name.strip().lower():
            return style
    names = ", ".join(["default", *(s.name for s in styles)])
    extra = f" ({'; '.join(problems)})" if problems else ""
    raise ValueError(f"output style {name!r} not found; there are: {names}{extra}")


def settings_output_style(cwd: str | Path) -> str | None:
    """The `outputStyle` key of the settings files (the project's local file first, then the
    project's, then the person's), or None."""
    base = Path(cwd)
    files = [
        base / ".claude" / "settings.local.json",
        base / ".claude" / "settings.json",
        base / ".ipy_agent" / "settings.json",
        settings_dir() / "settings.json",
    ]
    for path in files:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            continue
        value = data.get("outputStyle") if isinstance(data, dict) else None
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None
