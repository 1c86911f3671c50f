"""Output styles: built-in and custom, chosen in code, on the %agent line or in settings."""

from __future__ import annotations

import json

import pytest

from ipy_agent import Agent, ScriptedModel
from ipy_agent.config.options import parse_line
from ipy_agent.config.output_styles import list_output_styles
from ipy_agent.loop.system_prompt import GUIDE
from ipy_agent.magics.run_settings import SessionSettings, run_config

DEFAULT_STYLE = next(g.text for g in GUIDE if g.style)
RULES = [g.text for g in GUIDE if g.rule and "{" not in g.text and not g.tools]


def _system(tmp_path, turns=("ok",), **kw):
    model = ScriptedModel(list(turns))
    agent = Agent(model=model, cwd=tmp_path, tools=[], **kw)
    agent.run("hi")
    return model.requests[0]["system"], agent, model


def test_explanatory_replaces_the_style_line_and_keeps_the_rules(tmp_path):
    plain, _, _ = _system(tmp_path)
    styled, _, _ = _system(tmp_path, output_style="explanatory")
    assert DEFAULT_STYLE in plain and DEFAULT_STYLE not in styled
    assert "★ Insight" in styled and "★ Insight" not in plain
    assert all(rule in styled for rule in RULES)


def test_a_custom_style_from_claude_output_styles(tmp_path):
    folder = tmp_path / ".claude/output-styles"
    folder.mkdir(parents=True)
    (folder / "pirate.md").write_text(
        "---\nname: Pirate\ndescription: Talks like a pirate\n---\nSpeak like a pirate.\n"
    )
    styles, problems = list_output_styles(tmp_path)
    assert problems == [] and styles[0].name == "Pirate" and styles[0].description == "Talks like a pirate"
    system, _, _ = _system(tmp_path, output_style="Pirate")
    assert "# Output style\nSpeak like a pirate." in system and DEFAULT_STYLE not in system


def test_an_unknown_style_says_which_there_are(tmp_path):
    with pytest.raises(ValueError, match="Explanatory, Learning"):
        Agent(model=ScriptedModel([]), cwd=tmp_path, output_style="Nope")


def test_the_settings_key_chooses_a_style(tmp_path):
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude/settings.json").write_text(json.dumps({"outputStyle": "Learning"}))
    system, _, _ = _system(tmp_path)
    assert "TODO(human)" in system


def test_the_agent_line_sets_the_style_from_this_run_on(tmp_path):
    agent = Agent(model=ScriptedModel([]), cwd=tmp_path)
    settings = SessionSettings()
    styled = run_config(agent.config, settings, parse_line("--style Learning go"), rules=[], model=None, notebook=None)
    assert styled.output_style == "Learning"
    after = run_config(styled, settings, parse_line("go on"), rules=[], model=None, notebook=None)
    assert after.output_style == "Learning"
    with pytest.raises(ValueError, match="not found"):
        run_config(agent.config, settings, parse_line("--style Nope go"), rules=[], model=None, notebook=None)


def test_the_system_prompt_stays_byte_stable_within_a_run(tmp_path):
    # The style file changes while the run goes on (the agent could write it): the run's requests
    # keep the text they started with; the next prompt reads the new one.
    folder = tmp_path / ".claude/output-styles"
    folder.mkdir(parents=True)
    style = folder / "mine.md"
    style.write_text("---\nname: Mine\ndescription: d\n---\nFirst text.\n")
    model = ScriptedModel([[{"type": "tool_use", "id": "1", "name": "Nothing", "input": {}}], "done", "again"])
    agent = Agent(model=model, cwd=tmp_path, tools=[], output_style="Mine")
    agent.on_event(lambda e: style.write_text("---\nname: Mine\ndescription: d\n---\nSecond text.\n"))
    agent.run("go")
    assert model.requests[0]["system"] == model.requests[1]["system"]
    assert "First text." in model.requests[1]["system"]
    agent.run("again")
    assert "Second text." in model.requests[2]["system"]
