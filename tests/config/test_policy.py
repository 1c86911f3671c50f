"""The managed policy: where it is read, that nothing a person sets loosens it (each setting tried
from the person's own file, the project's file and a `%agent` option), and that a policy that
cannot be read stops the agent (fail closed)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError
from traitlets.config import Config

from ipy_agent import Agent, ScriptedModel
from ipy_agent.config.policy import POLICY_ENV, PolicyError, PolicyViolation, load_policy, policy_paths
from tests.support.mcp import stdio
from tests.support.transcript import result_text, results_sent, use


@pytest.fixture
def policy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Write the managed policy (the file IPY_AGENT_MANAGED_SETTINGS names); returns its path."""
    path = tmp_path / "admin" / "managed-settings.json"
    path.parent.mkdir()
    monkeypatch.setenv(POLICY_ENV, str(path))

    def write(data: Any) -> Path:
        path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
        return path

    return write


def user_file(data: dict[str, Any]) -> None:
    """The person's own ~/.ipy_agent/settings.json (IPY_AGENT_CONFIG_DIR in the tests)."""
    import os

    path = Path(os.environ["IPY_AGENT_CONFIG_DIR"]) / "settings.json"
    path.write_text(json.dumps(data), encoding="utf-8")


def project_file(cwd: Path, data: dict[str, Any], name: str = ".ipy_agent/settings.json") -> None:
    path = cwd / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")


def usage_error(shell: Any, line: str) -> str:
    with pytest.raises(UsageError) as info:
        shell.run_line_magic("agent", line)
    return str(info.value)


# --- where it is read ------------------------------------------------------------------------
def test_the_variable_adds_a_file_and_never_hides_the_system_ones(tmp_path, monkeypatch):
    monkeypatch.setenv(POLICY_ENV, str(tmp_path / "extra.json"))
    paths = policy_paths()
    assert paths[:2] == [
        Path("/etc/ipy_agent/managed-settings.json"),
        Path(sys.prefix) / "etc/ipy_agent/managed-settings.json",
    ]
    assert paths[2] == tmp_path / "extra.json"


def test_two_files_combine_to_the_strictest(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps({"availableModels": ["claude-*"], "budget": {"perRunUsd": 2}}))
    b.write_text(json.dumps({"availableModels": ["*-haiku-*"], "budget": {"perRunUsd": 1, "perDayUsd": 5}}))
    p = load_policy([a, b, tmp_path / "missing.json"])
    assert p.budget == {"per_run": 1.0, "per_day": 5.0}
    p.check_model("claude-haiku-4-5", "model")
    with pytest.raises(PolicyViolation, match=r"b\.json"):
        p.check_model("claude-sonnet-4-5", "model")  # allowed by a.json, not by b.json


# --- fail closed -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("{not json", "not valid JSON"),
        ('["deny"]', "expected a JSON object"),
        ('{"permissions": {"deny": "Bash"}}', "permissions.deny must be a list"),
        ('{"permissions": {"deny": ["Bash(unclosed"]}}', "Bash(unclosed"),
        ('{"permisions": {"deny": ["Bash"]}}', "unknown key(s) permisions"),
        ('{"budget": {"perRunUsd": -1}}', "budget.perRunUsd must be a number"),
        ('{"permissions": {"disableBypassPermissionsMode": true}}', "disableBypassPermissionsMode"),
    ],
)
def test_a_broken_policy_stops_the_agent_and_says_why(policy, text, says, tmp_path):
    path = policy(text)
    with pytest.raises(PolicyError) as info:
        Agent(ScriptedModel(["hi"]), cwd=tmp_path)
    assert str(path) in str(info.value) and says in str(info.value)
    assert "will not run" in str(info.value)


def test_a_policy_broken_between_runs_stops_the_next_run(policy, tmp_path):
    policy({"permissions": {"deny": ["Bash"]}})
    agent = Agent(ScriptedModel(["one", "two"]), cwd=tmp_path)
    assert agent.run("first").text == "one"
    policy("{")
    with pytest.raises(PolicyError, match="not valid JSON"):
        agent.run("second")
    assert len(agent.messages) == 2  # nothing was added by the refused run


def test_magics_refuse_to_run_with_a_broken_policy(policy, shell, script, capsys):
    path = policy('{"permissions": ')
    message = usage_error(shell, f"--script {script('hi')} hello")
    assert str(path) in message and "not valid JSON" in message


# --- each setting, tried from the person's file, the project's file and an option ------------
def test_deny_rules_hold_against_allow_rules_from_every_source(policy, shell, script, tmp_path):
    path = policy({"permissions": {"deny": ["Write(**/*.txt)"]}})
    user_file({"permissions": {"allow": ["Write(**/*.txt)"]}})
    project_file(tmp_path, {"permissions": {"allow": ["Write(**/*.txt)"]}})
    write = use("Write", "w1", file_path=str(tmp_path / "notes.txt"), content="x")
    s = script([write], "done")
    shell.run_line_magic("agent", f"--no-widgets --mode acceptEdits --allow Write(**/*.txt) --script {s} write it")
    assert not (tmp_path / "notes.txt").exists()
    agent = shell.magics_manager.registry["AgentMagics"].session.agent
    text = result_text(results_sent(agent.model, 1)["w1"])
    assert "denied" in text.lower() and str(path) in text


def test_ask_rules_hold_against_allow_rules_from_every_source(policy, shell, script, tmp_path):
    policy({"permissions": {"ask": ["Write"]}})
    user_file({"permissions": {"allow": ["Write"]}})
    project_file(tmp_path, {"permissions": {"allow": ["Write"]}}, ".claude/settings.json")
    write = use("Write", "w1", file_path=str(tmp_path / "a.py"), content="x = 1\n")
    s = script([write], "done")
    # Without widgets nobody can answer a prompt, so a call that asks does not run.
    shell.run_line_magic("agent", f"--no-widgets --allow Write --script {s} write it")
    assert not (tmp_path / "a.py").exists()


def test_bash_taken_away_by_the_policy_is_not_offered_whatever_allows_it(policy, shell, script, tmp_path):
    path = policy({"permissions": {"deny": ["Bash"]}})
    user_file({"permissions": {"allow": ["Bash(ls:*)"]}})
    project_file(tmp_path, {"permissions": {"allow": ["Bash(ls:*)"]}})
    shell.run_line_magic("agent", f"--no-widgets --allow Bash(ls:*) --script {script('ok')} hi")
    agent = shell.magics_manager.registry["AgentMagics"].session.agent
    offered = [t["name"] for t in agent.model.requests[0]["tools"]]
    assert "Bash" not in offered and "Read" in offered
    assert str(path) in agent.exposure().hidden["Bash"]


def test_a_forbidden_mode_is_refused_from_config_and_option(policy, make_shell, script):
    path = policy({"permissions": {"disableBypassPermissionsMode": "disable", "disallowedModes": ["acceptEdits"]}})
    sh = make_shell()
    message = usage_error(sh, f"--mode bypassPermissions --script {script('x')} hi")
    assert "bypassPermissions" in message and str(path) in message
    message = usage_error(sh, f"--mode acceptEdits --script {script('x')} hi")
    assert "acceptEdits" in message and str(path) in message
    cfg = Config()
    cfg.AgentMagics.permission_mode = "bypassPermissions"  # the person's ipython_config.py
    message = usage_error(make_shell(cfg), f"--script {script('x')} hi")
    assert str(path) in message
    with pytest.raises(PolicyViolation, match="bypassPermissions"):
        Agent(ScriptedModel(["x"]), permission_mode="bypassPermissions")


def test_a_required_sandbox_cannot_be_switched_off(policy, make_shell, script, tmp_path):
    path = policy({"sandbox": {"enabled": True}})
    cfg = Config()
    cfg.AgentMagics.sandbox = "off"
    message = usage_error(make_shell(cfg), f"--script {script('x')} hi")
    assert "sandbox" in message and str(path) in message
    assert Agent(ScriptedModel(["x"]), cwd=tmp_path, sandbox="auto").sandbox == "always"
    with pytest.raises(PolicyViolation):
        Agent(ScriptedModel(["x"]), cwd=tmp_path, sandbox="off")


def test_only_the_models_allowed_run(policy, make_shell, monkeypatch, tmp_path):
    path = policy({"availableModels": ["claude-haiku-*"]})
    sh = make_shell()
    message = usage_error(sh, "--model claude-sonnet-4-5 hi")
    assert "claude-sonnet-4-5" in message and str(path) in message and "claude-haiku-*" in message
    cfg = Config()
    cfg.AgentMagics.model = "claude-opus-4-1"
    assert str(path) in usage_error(make_shell(cfg), "hi")
    monkeypatch.setenv("IPY_AGENT_MODEL", "claude-sonnet-4-5")
    assert "claude-sonnet-4-5" in usage_error(make_shell(), "hi")
    scripted = ScriptedModel(["x"])
    with pytest.raises(PolicyViolation):
        Agent(scripted, cwd=tmp_path).run("hi")  # a scripted model's name is not allowed either


def test_mcp_servers_outside_the_policy_do_not_start(policy, shell, script, tmp_path):
    path = policy({"deniedMcpServers": [{"serverName": "tool*"}], "allowedMcpServers": [{"serverName": "*"}]})
    user_file({"mcpServers": {"toolbox_user": stdio()}})
    project_file(tmp_path, {"mcpServers": {"toolbox_project": stdio()}}, ".mcp.json")
    shell.run_line_magic("agent", f"--no-widgets --script {script('ok')} hi")
    agent = shell.magics_manager.registry["AgentMagics"].session.agent
    assert agent.mcp.configs == {}
    blocked = agent.mcp.policy_blocked()
    assert set(blocked) == {"toolbox_user", "toolbox_project"} and str(path) in blocked["toolbox_user"]
    in_code = Agent(ScriptedModel(["x"]), cwd=tmp_path, mcp_servers={"toolbox": stdio()})
    assert in_code.mcp.configs == {}


def test_mcp_allowed_by_command_only(policy, tmp_path):
    allowed = stdio()
    policy({"allowedMcpServers": [{"serverCommand": [allowed["command"], *allowed["args"]]}]})
    other = {"command": sys.executable, "args": ["-c", "pass"]}
    agent = Agent(ScriptedModel(["x"]), cwd=tmp_path, mcp_servers={"good": allowed, "other": other})
    assert list(agent.mcp.configs) == ["good"]
    assert "allowedMcpServers" in agent.mcp.policy_blocked()["other"]


def test_a_budget_option_cannot_raise_the_policys_limit(policy, shell, script, tmp_path):
    policy({"budget": {"perRunUsd": 0.25}})
    project_file(tmp_path, {"permissions": {"allow": ["Read"]}})
    shell.run_line_magic("agent", f"--no-widgets --max-budget-usd 100 --script {script('ok')} hi")
    agent = shell.magics_manager.registry["AgentMagics"].session.agent
    (limit,) = agent.managed.meter.limits
    assert limit.usd == 0.25 and "managed policy" in limit.source
    shell.run_line_magic("agent", f"--no-widgets --max-budget-usd 0.1 --script {script('ok')} hi")
    assert agent.managed.meter.limits[0].usd == 0.1  # stricter is fine
    with pytest.raises(UsageError, match="more than 0"):
        shell.run_line_magic("agent", "--max-budget-usd 0 hi")


def test_rules_and_tools_say_what_comes_from_the_policy(policy, shell, script, capsys):
    path = policy({"permissions": {"deny": ["Bash"], "ask": ["Edit"]}, "budget": {"perDayUsd": 3}})
    shell.run_line_magic("agent", f"--no-widgets --script {script('ok')} hi")
    capsys.readouterr()
    shell.run_line_magic("agent_rules", "")
    out = capsys.readouterr().out
    assert f"managed policy {path}" in out and "deny  Bash" in out and "budget per day: $3.00" in out
    shell.run_line_magic("agent_tools", "")
    out = capsys.readouterr().out
    assert f"managed policy {path}" in out
