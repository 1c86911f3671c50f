"""The config a run gets from the magics' configuration and its `%agent` line: computed as a new
`AgentConfig` (magics/run_settings.py), and what the agent has after a `%agent` cell ran."""

from __future__ import annotations

import pytest

from ipy_agent import AgentConfig, ScriptedModel
from ipy_agent.config.options import parse_line
from ipy_agent.magics.run_settings import SessionSettings, new_config, run_config
from ipy_agent.permissions.rules import RuleSpec


@pytest.fixture
def config(tmp_path) -> AgentConfig:
    settings = SessionSettings(max_turns=12, sandbox="off", sandbox_limits=(("processes", 64),), context_window=9_000)
    return new_config(ScriptedModel([]), settings, cwd=tmp_path, tools=[])


def test_a_new_conversation_has_the_configured_settings(config, tmp_path):
    assert (config.cwd, config.max_turns, config.sandbox) == (tmp_path.resolve(), 12, "off")
    assert (config.sandbox_limits.processes, config.context_window, config.tools) == (64, 9_000, ())


def test_the_line_options_win_over_the_configuration_for_one_run(config):
    settings = SessionSettings(permission_mode="acceptEdits", max_turns=12, message_budget=4_000, max_result_chars=900)
    line = parse_line("--mode plan --max-turns 3 --max-budget-usd 0.25 --no-instructions fix it")
    rule = RuleSpec(kind="allow", text="Bash(ls:*)", source="%agent --allow")
    model = ScriptedModel(["x"])
    run = run_config(config, settings, line, rules=[rule], model=model, notebook=None)
    assert (run.permission_mode, run.max_turns, run.max_budget_usd, run.instructions) == ("plan", 3, 0.25, False)
    assert (run.message_budget, run.result_limit, run.rules, run.model) == (4_000, 900, (rule,), model)
    assert config.max_turns == 12  # the config it started from is unchanged

    plain = run_config(run, settings, parse_line("go on"), rules=[], model=None, notebook=None)
    assert (plain.permission_mode, plain.max_turns, plain.max_budget_usd, plain.instructions) == (
        "acceptEdits",
        12,
        None,
        True,
    )
    assert (plain.rules, plain.model) == ((), model)  # no model named: the one it has


def test_a_companion_magic_changes_no_option_of_a_run(config):
    run = run_config(
        config.replace(max_budget_usd=1.0, instructions=False),
        SessionSettings(),
        None,
        rules=[],
        model=None,
        notebook=None,
    )
    assert (run.max_budget_usd, run.instructions) == (1.0, False)


def test_a_configured_value_that_is_not_allowed_is_refused(config):
    with pytest.raises(ValueError, match="message_budget must be at least 1"):
        run_config(config, SessionSettings(message_budget=0), None, rules=[], model=None, notebook=None)


def test_after_a_cell_the_agent_has_the_config_of_its_line(shell, magics, script):
    shell.run_line_magic("config", "AgentMagics.max_turns = 9")
    shell.run_line_magic("agent", f"--script {script('one')} --mode plan --max-budget-usd 0.5 --deny Write hi")
    config = magics.session.agent.config
    assert (config.permission_mode, config.max_turns, config.max_budget_usd) == ("plan", 9, 0.5)
    assert ("deny", "Write") in {(r.kind, r.text) for r in config.rules}
    assert magics.session.agent.managed.max_budget_usd == 0.5

    shell.run_line_magic("agent", f"--script {script('two')} --max-turns 2 again")
    config = magics.session.agent.config
    assert (config.permission_mode, config.max_turns, config.max_budget_usd) == ("default", 2, None)
    assert ("deny", "Write") not in {(r.kind, r.text) for r in config.rules}
    assert not [r for r in magics.session.agent.rules.deny if r.text == "Write"]


def test_a_bad_configured_value_is_a_usage_error(shell, script):
    from IPython.core.error import UsageError

    shell.run_line_magic("config", "AgentMagics.message_budget = 0")
    with pytest.raises(UsageError, match="message_budget must be at least 1, not 0"):
        shell.run_line_magic("agent", f"--script {script('one')} hi")
