"""Skills: written procedures the model loads when a task matches one (Claude Code's format).

Modules import one way, each only from those above it in this list:
- `catalog`: where skills are found, what a valid `SKILL.md` is, which one wins a name;
- `tool`: `SkillTool`, which lists the skills in the system prompt and loads one's text.

The built-in notebook skills live in `builtin/` (package data, one folder per skill).
"""
