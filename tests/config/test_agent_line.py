"""The `%agent` line is parsed once, into a typed `AgentLine`, from the one table of options."""

from __future__ import annotations

import dataclasses

import pytest

from ipy_agent.config.options import AGENT_OPTIONS, AgentLine, parse_line


def test_the_parsed_line_has_a_field_for_every_option_in_the_table():
    fields = {f.name for f in dataclasses.fields(AgentLine)} - {"prompt"}
    assert fields == {o.flag.lstrip("-").replace("-", "_") for o in AGENT_OPTIONS}


def test_options_come_before_the_request_and_rules_need_no_quotes():
    line = parse_line("--mode acceptEdits --allow Bash(git status:*) --max-turns 3 fix it, don't wait")
    assert line.mode == "acceptEdits" and line.max_turns == 3
    assert line.allow == ("Bash(git status:*)",)
    assert line.prompt == "fix it, don't wait"
    assert [(r.kind, r.text, r.source) for r in line.rules()] == [("allow", "Bash(git status:*)", "%agent --allow")]


def test_a_cell_body_joins_the_request():
    assert parse_line("--new", "summarise\nthe notebook\n").prompt == "summarise\nthe notebook"
    assert parse_line("first", "second").prompt == "first\nsecond"


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("--mode fast go", "invalid choice: 'fast'"),
        ("--max-turns 0 go", "--max-turns must be at least 1"),
        ("--max-turns many go", "invalid int value: 'many'"),
        ("--foo go", "%agent has no option '--foo'"),
        ("--allow Bash( go", "--allow: permission rule 'Bash( go' is not valid"),
        ("--model", "--model needs a value"),
    ],
)
def test_bad_lines_say_what_is_wrong(line, says):
    with pytest.raises(ValueError, match=None) as err:
        parse_line(line)
    assert says in str(err.value)
