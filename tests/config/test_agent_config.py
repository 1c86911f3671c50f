"""`AgentConfig`: every setting of an agent, checked once, changed only by making a new one; and
`Agent` building one from its arguments, keeping it, and putting a new one in force."""

from __future__ import annotations

from pathlib import Path

import pytest

from ipy_agent import Agent, AgentConfig, SandboxLimits, ScriptedModel
from ipy_agent.config.agent_config import FromConfig, setting_names
from ipy_agent.models.recording import RecordingModel
from ipy_agent.permissions.rules import RuleSpec


@pytest.fixture
def model() -> ScriptedModel:
    return ScriptedModel(["Done."])


@pytest.mark.parametrize(
    ("settings", "error", "message"),
    [
        ({"permission_mode": "yolo"}, ValueError, "permission_mode 'yolo' is not one of default, acceptEdits"),
        ({"max_turns": 0}, ValueError, "max_turns must be at least 1, not 0"),
        ({"max_concurrency": 0}, ValueError, "max_concurrency must be at least 1, not 0"),
        ({"cwd": "/no/such/dir"}, ValueError, "cwd '/no/such/dir' is not a directory"),
        ({"sandbox": "sometimes"}, ValueError, "sandbox 'sometimes' is not one of auto, always, off"),
        ({"sandbox_limits": {"cpu": 2}}, ValueError, "sandbox_limits has no cpu: give memory (bytes)"),
        ({"sandbox_limits": {"processes": 1}}, ValueError, "sandbox limit processes must be an integer of at least 8"),
        ({"allow": ["Bash(git status"]}, ValueError, "Bash(git status"),
        ({"max_budget_usd": 0}, ValueError, "max_budget_usd: a budget must be more than $0, not 0"),
        ({"context_window": 10}, ValueError, "context_window must be at least 1000 tokens, not 10"),
        ({"context_threshold": 2.0}, ValueError, "context_threshold must be between 0.1 and 1.0"),
        ({"result_limit": 0}, ValueError, "result_limit must be at least 1"),
        ({"max_turn": 5}, TypeError, "AgentConfig has no setting 'max_turn'"),
    ],
)
def test_a_bad_setting_is_refused_where_it_is_given_with_what_is_allowed(model, settings, error, message):
    with pytest.raises(error) as config_error:
        AgentConfig.build(model, **settings)
    assert message in str(config_error.value)
    with pytest.raises(error) as agent_error:  # Agent's arguments say the same
        Agent(model, **settings)
    assert str(agent_error.value) == str(config_error.value)
    with pytest.raises(error) as replace_error:  # and so does a change
        AgentConfig(model=model).replace(**settings)
    assert str(replace_error.value) == str(config_error.value)


def test_an_agent_needs_a_model_and_takes_a_config_or_settings_not_both(model):
    with pytest.raises(TypeError, match="Agent needs a model"):
        Agent(max_turns=3)
    with pytest.raises(TypeError, match="either config= or the model and settings"):
        Agent(model, config=AgentConfig(model=model))
    with pytest.raises(TypeError, match="either config= or the model and settings"):
        Agent(config=AgentConfig(model=model), max_turns=3)


def test_given_forms_are_made_exact(model, tmp_path):
    config = AgentConfig.build(
        model,
        cwd=str(tmp_path),
        allow=["Read"],
        working_dirs=[str(tmp_path)],
        sandbox_limits={"processes": 64},
        spill_dir=str(tmp_path / "spill"),
    )
    assert config.cwd == tmp_path.resolve()
    assert config.allow == ("Read",)
    assert config.working_dirs == (tmp_path.resolve(),)
    assert config.sandbox_limits == SandboxLimits(processes=64)
    assert config.spill_dir == tmp_path / "spill"


def test_replace_makes_a_new_checked_config_and_leaves_the_old_one(model):
    config = AgentConfig(model=model, max_turns=10)
    changed = config.replace(max_turns=3, permission_mode="plan")
    assert (changed.max_turns, changed.permission_mode) == (3, "plan")
    assert (config.max_turns, config.permission_mode) == (10, "default")
    assert config.changed(changed) == {"max_turns", "permission_mode"}
    with pytest.raises(AttributeError):
        config.max_turns = 4  # type: ignore[misc]  # frozen


def test_the_agent_keeps_the_config_its_arguments_make(model, tmp_path):
    agent = Agent(model, cwd=tmp_path, max_turns=7, allow=["Bash(ls:*)"], simple=True, instructions=False)
    config = agent.config
    assert (config.model, config.cwd, config.max_turns, config.allow) == (model, tmp_path.resolve(), 7, ("Bash(ls:*)",))
    assert (agent.cwd, agent.max_turns, agent.simple, agent.instructions) == (tmp_path.resolve(), 7, True, False)
    assert any(r.text == "Bash(ls:*)" for r in agent.rules.allow)

    same = Agent(config=config)
    assert same.config is config
    assert (same.max_turns, same.simple) == (7, True)
    assert same.run("go").text == "Done."


def test_every_setting_the_agent_reads_from_its_config_is_a_field():
    attributes = {name for name, value in vars(Agent).items() if isinstance(value, FromConfig)}
    assert attributes and attributes <= set(setting_names())


def test_setting_an_attribute_makes_a_new_config_checked_like_any(model):
    agent = Agent(model)
    before = agent.config
    agent.max_turns = 4
    agent.permission_mode = "acceptEdits"
    assert (agent.config.max_turns, agent.config.permission_mode) == (4, "acceptEdits")
    assert before.max_turns == 50  # the old config is unchanged
    with pytest.raises(ValueError, match="max_turns must be at least 1"):
        agent.max_turns = 0
    assert agent.max_turns == 4


def test_configure_keeps_its_arguments_and_puts_a_replaced_config_in_force(model, tmp_path):
    agent = Agent(model, cwd=tmp_path)
    agent.configure(max_turns=3, message_budget=5_000, result_limit=2_000, instructions=False)
    assert (agent.config.max_turns, agent.config.instructions) == (3, False)
    assert agent.budget.message_limit == 5_000
    assert agent.registry.result_limit_override == 2_000

    spec = RuleSpec(kind="deny", text="Bash(rm:*)", source="configured")
    agent.configure(agent.config.replace(rules=[spec], max_budget_usd=0.5, result_limit=None))
    assert [r.text for r in agent.rules.deny if r.source == "configured"] == ["Bash(rm:*)"]
    assert agent.managed.max_budget_usd == 0.5
    assert agent.registry.result_limit_override is None
    agent.configure(rules=[])  # the config's rules go, the constructor's and the built-in ones stay
    assert not [r for r in agent.rules.deny if r.source == "configured"]
    assert agent.config.rules == ()


def test_settings_the_agent_builds_its_state_from_cannot_change_afterwards(model, tmp_path):
    agent = Agent(model, cwd=tmp_path)
    with pytest.raises(ValueError, match="context_window cannot change once the agent is made"):
        agent.configure(agent.config.replace(context_window=50_000))
    assert agent.config.context_window is None


def test_a_recorded_conversation_goes_on_recording_with_the_new_model(model, tmp_path):
    agent = Agent(model, cwd=tmp_path, record=tmp_path / "t.json")
    assert isinstance(agent.model, RecordingModel) and agent.config.model is model
    other = ScriptedModel(["Other."])
    agent.configure(model=other)
    assert isinstance(agent.model, RecordingModel) and agent.model.model is other
    assert agent.config.model is other
    assert agent.config.record == Path(tmp_path / "t.json")


def test_a_new_config_with_other_rules_in_code_replaces_those_alone(model, tmp_path):
    agent = Agent(model, cwd=tmp_path, deny=["Write"], allow=["Bash(ls:*)"])
    agent.rules.add("allow", "Read(./notes/**)", source="granted")  # as "Always allow" does
    agent.configure(agent.config.replace(deny=["Bash(rm:*)"]))
    assert [r.text for r in agent.rules.deny if r.source == "argument"] == ["Bash(rm:*)"]
    assert {r.text for r in agent.rules.allow} >= {"Bash(ls:*)", "Read(./notes/**)"}
    assert any(r.source == "built-in" for r in agent.rules.deny)
