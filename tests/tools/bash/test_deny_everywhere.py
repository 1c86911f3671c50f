"""Deny rules hold in every mode, bypassPermissions included, also when the command hides what
it runs: a program named by an expansion, text piped into a shell, `find -exec`, a wrapper the
rules do not look through, global options before a git subcommand. The model is told why."""

from __future__ import annotations

import pytest

from ipy_agent import Agent, ScriptedModel
from ipy_agent.tools.bash import BashTool
from tests.support.bash import decision, project
from tests.support.transcript import results_of, use


@pytest.mark.parametrize(
    ("command", "why"),
    [
        ("$CMD -rf x", "only known when the shell runs"),
        ('"$(echo rm)" -rf x', "command substitution"),
        ("echo 'rm -rf x' | sh", "runs commands from its input"),
        ("cat script.sh | bash", "runs commands from its input"),
        ("bash script.sh", "runs commands from its input or from a file"),
        ("source script.sh", "runs the commands in a file"),
        ('find . -exec "$P" {} \\;', "only known when the shell runs"),
        ("watch rm x", "not looked through"),
        ("git -c alias.x='!rm y' x", "git -c"),
        ('eval "$X"', "eval runs words"),
        ("cat <<EOF\n`rm y`\nEOF", "parser does not show"),
    ],
)
@pytest.mark.parametrize("mode", ["bypassPermissions", "acceptEdits", "default", "plan"])
def test_a_command_that_hides_what_it_runs_is_denied_when_a_deny_rule_could_apply(tmp_path, command, why, mode):
    d = decision(command, project(tmp_path), mode=mode, deny=["Bash(rm:*)"])
    if "substitution" in why:
        assert d.behavior == "deny"  # `rm` is named inside the substitution, so the rule matches
        return
    assert d.behavior == "deny" and d.rule == "Bash(rm:*)", d
    assert why in d.reason and "could apply" in d.reason


@pytest.mark.parametrize(
    ("command", "rule"),
    [
        ("find . -exec rm {} \\;", "Bash(rm:*)"),
        ("find . -name x -execdir env rm {} +", "Bash(rm:*)"),
        ("git -C sub rm f", "Bash(git rm:*)"),
        ("git --no-pager -C sub push --force", "Bash(git push:*)"),
        ("git --git-dir=.git --work-tree=. rm f", "Bash(git rm:*)"),
        ("trap 'rm x' EXIT; ls", "Bash(rm:*)"),
        ("xargs -0 rm < list", "Bash(rm:*)"),
    ],
)
def test_commands_behind_exec_git_options_and_traps_are_named_for_deny_rules(tmp_path, command, rule):
    d = decision(command, project(tmp_path), mode="bypassPermissions", deny=[rule])
    assert d.behavior == "deny" and d.rule == rule


def test_ask_rules_hold_the_same_way(tmp_path):
    d = decision("$CMD x", project(tmp_path), mode="bypassPermissions", ask=["Bash(curl:*)"])
    assert d.behavior == "ask"


def test_without_content_deny_rules_a_hidden_command_is_just_a_command(tmp_path):
    cwd = project(tmp_path)
    assert decision("bash script.sh", cwd, mode="bypassPermissions").behavior == "allow"
    assert decision("ls", cwd, mode="bypassPermissions", deny=["Bash(rm:*)"]).behavior == "allow"
    assert decision("bash -c 'ls'", cwd, mode="bypassPermissions", deny=["Bash(rm:*)"]).behavior == "allow"


def test_the_model_reads_why_and_nothing_runs(tmp_path):
    cwd = project(tmp_path)
    model = ScriptedModel([[use("Bash", "t", command="echo 'touch pwned' | sh")], "ok"])
    agent = Agent(model=model, tools=[BashTool()], cwd=cwd, permission_mode="bypassPermissions", deny=["Bash(touch:*)"])
    agent.run("go")
    block = results_of(model.requests[1]["messages"][2])["t"]
    assert (
        block["is_error"] and "Bash(touch:*)" in block["content"] and "runs commands from its input" in block["content"]
    )
    assert not (cwd / "pwned").exists()
