"""Claude Code plugins in an agent: a real plugin from npm lists every command, agent and skill; a
command's body reaches the model with its arguments; a plugin agent is a Task type with only its
tools; a command's allowed-tools narrows what is offered and never grants a permission; the
plugin's hooks run on their events (a JSON deny, a file written, context for the model, a
notification when a prompt waits)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from ipy_agent import Agent, ScriptedModel
from ipy_agent.runtime.trace import NoticeEvent
from ipy_agent.ui.approver import NonInteractiveApprover
from tests.support.npm_packages import PLUGIN_PACKAGE, npm_package
from tests.support.tools import write_tree
from tests.support.transcript import all_results, result_text, use


@pytest.fixture(scope="module")
def real_plugin() -> Path:
    return npm_package(*PLUGIN_PACKAGE)


def _user_text(request: dict) -> str:
    return "\n".join(
        b["text"] for m in request["messages"] if m["role"] == "user" for b in m["content"] if b.get("type") == "text"
    )


def test_every_command_agent_and_skill_of_the_real_plugin_is_listed(real_plugin, tmp_path):
    agent = Agent(ScriptedModel(["ok"]), cwd=tmp_path, plugins=[real_plugin])
    listing = agent.claude.describe()
    commands = sorted(p.stem for p in (real_plugin / "commands").glob("*.md"))
    agents = sorted(p.stem for p in (real_plugin / "agents").glob("*.md"))
    skills = sorted(p.parent.name for p in real_plugin.glob("skills/*/SKILL.md"))
    assert len(commands) >= 10 and len(agents) >= 2  # the pinned version's
    assert "NOT LOADED" not in listing
    for name in commands:
        assert f"/selfish:{name} " in listing
    for name in agents:
        assert f"  {name}: " in listing
        assert name in agent.tool("Task").types  # a Task subagent_type
    for name in skills:
        assert name in listing
    assert agent.claude.plugins[0].hooks_file == real_plugin / "hooks" / "hooks.json"


def test_a_plugin_command_s_body_reaches_the_model_with_its_arguments(real_plugin, tmp_path):
    model = ScriptedModel(["Reviewed."])
    agent = Agent(model, cwd=tmp_path, plugins=[real_plugin])
    result = agent.run("/selfish:review src/app.py")
    assert result.text == "Reviewed."
    sent = _user_text(model.requests[0])
    assert "# /selfish:review — Code Review" in sent  # the body of commands/review.md
    assert "`src/app.py`" in sent  # its $ARGUMENTS
    assert "$ARGUMENTS" not in sent
    # review.md's allowed-tools narrow the offer for this run only
    offered = {t["name"] for t in model.requests[0]["tools"]}
    assert offered <= {"Read", "Write", "Grep", "Glob", "Bash", "Task"} and "Read" in offered
    assert "Edit" not in offered
    model.turns.append("again")
    agent.run("an ordinary prompt")
    assert "Edit" in {t["name"] for t in model.requests[1]["tools"]}  # the next run offers them all again


def test_a_plugin_agent_runs_as_a_task_type_with_only_its_tools(real_plugin, tmp_path):
    task = use("Task", "t1", description="scan for secrets", prompt="Scan src/", subagent_type="selfish-security")
    model = ScriptedModel([[task], "Nothing found.", "The scan found nothing."])
    agent = Agent(model, cwd=tmp_path, plugins=[real_plugin])
    result = agent.run("scan the project")
    assert result.text == "The scan found nothing."
    child = model.requests[1]
    assert child["system"].startswith("You are") and "security" in child["system"].lower()  # the file's body
    tools = {t["name"] for t in child["tools"]}
    assert tools <= {"Read", "Grep", "Glob", "Bash", "Task", "WebSearch"}  # agents/selfish-security.md's
    assert {"Read", "Grep", "Glob", "Bash"} <= tools
    assert "Write" not in tools and "Edit" not in tools
    assert "Write" in {t["name"] for t in model.requests[0]["tools"]}  # control: the parent has them


def test_slash_commands_from_the_project_with_positional_arguments(tmp_path):
    write_tree(
        tmp_path,
        {
            ".claude/commands/greet.md": "---\ndescription: Greet someone\nargument-hint: NAME PLACE\n---\n"
            "Say hello to $1 in $2. All: $ARGUMENTS\n",
        },
    )
    model = ScriptedModel(["hi"])
    agent = Agent(model, cwd=tmp_path)
    agent.run('/greet Ada "New York"')
    assert 'Say hello to Ada in New York. All: Ada "New York"' in _user_text(model.requests[0])
    assert "/greet NAME PLACE: Greet someone (project)" in agent.claude.describe()
    model.turns.append("sent as it is")
    agent.run("/nothing-by-this-name here")  # no such command: the prompt goes as typed
    assert "/nothing-by-this-name here" in _user_text(model.requests[1])


def _bash_touch(tmp_path: Path, command_file: str, prompt: str, **kw) -> tuple[Agent, dict]:
    write_tree(tmp_path, {".claude/commands/run.md": command_file})
    call = use("Bash", "b1", command="touch made.txt", description="make a file")
    agent = Agent(ScriptedModel([[call], "done"]), cwd=tmp_path, sandbox="off", **kw)
    agent.run(prompt)
    return agent, all_results(agent.messages)["b1"]


def test_allowed_tools_narrows_the_offer_and_a_call_outside_it_is_refused(tmp_path):
    _, result = _bash_touch(tmp_path, "---\nallowed-tools: Read, Grep\n---\nLook around.\n", "/run", allow=["Bash"])
    assert result.get("is_error") and "No such tool" in result_text(result)
    assert not (tmp_path / "made.txt").exists()
    # control: the same call without the command runs (an allow rule grants it)
    shutil.rmtree(tmp_path / ".claude")
    _, result = _bash_touch(tmp_path, "Look around.\n", "look around", allow=["Bash"])
    assert (tmp_path / "made.txt").exists()


def test_allowed_tools_grants_no_permission(tmp_path):
    # The command names Bash(touch:*), but nobody allowed Bash and nobody can be asked: denied.
    _, result = _bash_touch(tmp_path, "---\nallowed-tools: Bash(touch:*)\n---\nMake it.\n", "/run")
    assert result.get("is_error")
    assert not (tmp_path / "made.txt").exists()
    # control: an allow rule (given by the person) is what lets it run
    _, result = _bash_touch(tmp_path, "---\nallowed-tools: Bash(touch:*)\n---\nMake it.\n", "/run", allow=["Bash"])
    assert (tmp_path / "made.txt").exists()


def test_project_agent_files_become_task_types_restricted_to_their_tools(tmp_path):
    write_tree(
        tmp_path,
        {
            ".claude/agents/reader.md": "---\nname: reader\ndescription: Reads files\ntools: Read, Glob\n---\n"
            "You only read.\n",
            "notes.txt": "the answer is 42\n",
        },
    )
    task = use("Task", "t1", description="read notes", prompt="What do the notes say?", subagent_type="reader")
    child_calls = [use("Bash", "c1", command="touch x", description="try"), use("Read", "c2", file_path="notes.txt")]
    model = ScriptedModel([[task], child_calls, "42", "The notes say 42."])
    agent = Agent(model, cwd=tmp_path, allow=["Bash"])
    agent.run("ask the reader")
    assert {t["name"] for t in model.requests[1]["tools"]} == {"Read", "Glob"}
    assert model.requests[1]["system"].startswith("You only read.")
    child_results = {k: v for m in model.requests[2]["messages"] for k, v in all_results([m]).items()}
    assert "No such tool" in result_text(child_results["c1"])  # not its tool, though the parent may run Bash
    assert "42" in result_text(child_results["c2"])
    assert not (tmp_path / "x").exists()


def test_a_malformed_plugin_is_listed_with_its_problem_and_contributes_nothing(tmp_path):
    write_tree(
        tmp_path / "bad",
        {
            ".claude-plugin/plugin.json": "{not json",
            "commands/hello.md": "Say hello.\n",
            "agents/helper.md": "---\nname: helper\ndescription: helps\n---\nHelp.\n",
        },
    )
    agent = Agent(ScriptedModel(["ok"]), cwd=tmp_path, plugins=[tmp_path / "bad"])
    listing = agent.claude.describe()
    assert "NOT LOADED: .claude-plugin/plugin.json is not valid JSON" in listing
    assert agent.claude.expand("/hello") is None and agent.claude.expand("/bad:hello") is None
    assert "helper" not in agent.tool("Task").types


def test_a_plugin_s_skill_is_offered_and_loaded_by_the_skill_tool(tmp_path):
    write_tree(
        tmp_path / "kit",
        {
            ".claude-plugin/plugin.json": '{"name": "kit"}',
            "skills/euro-format/SKILL.md": "---\nname: euro-format\ndescription: Format money in euros\n---\nWhole euros.\n",
        },
    )
    load = use("Skill", "s1", skill="euro-format")
    model = ScriptedModel([[load], "ok"])
    agent = Agent(model, cwd=tmp_path / "kit", plugins=[tmp_path / "kit"])
    agent.run("format the totals")
    assert "- euro-format: Format money in euros" in model.requests[0]["system"]
    assert "Whole euros." in result_text(all_results(agent.messages)["s1"])
    # control: without the plugin the skill is neither listed nor loadable
    model = ScriptedModel([[load], "ok"])
    agent = Agent(model, cwd=tmp_path / "kit")
    agent.run("format the totals")
    assert "euro-format" not in model.requests[0]["system"]
    assert all_results(agent.messages)["s1"].get("is_error")


def test_a_command_s_model_answers_its_prompt_only(tmp_path):
    transcript = tmp_path / "other.json"
    transcript.write_text('{"turns": ["from the command\'s model"]}')
    write_tree(
        tmp_path,
        {
            ".claude/commands/other.md": f"---\nmodel: scripted:{transcript}\n---\nAsk the other model.\n",
            ".claude/commands/sonnet.md": "---\nmodel: sonnet\n---\nAsk Sonnet.\n",
        },
    )
    main = ScriptedModel(["from the main model", "the main model again"])
    agent = Agent(main, cwd=tmp_path)
    notices: list[str] = []
    agent.on_event(lambda e: notices.append(getattr(e, "text", "")))
    assert agent.run("/other").text == "from the command's model"
    assert agent.model is main  # put back at the run's end
    assert agent.run("ordinary").text == "from the main model"
    # an alias names a Claude model: a scripted agent cannot switch to it, and says so
    assert agent.run("/sonnet").text == "the main model again"
    assert any("model 'sonnet' is a Claude model" in n for n in notices)


def _pipeline(tmp_path: Path, phase: str = "plan") -> None:
    """The real plugin's pipeline, active in this project (its hooks read these two files)."""
    write_tree(tmp_path, {".claude/.selfish-active": "checkout-flow\n", ".claude/.selfish-phase": f"{phase}\n"})


def test_the_real_plugin_s_hooks_run_on_their_events(real_plugin, tmp_path):
    _pipeline(tmp_path)
    guarded = use("Bash", "b1", command="echo git reset --hard", description="reset the tree")
    write = use("Write", "w1", file_path=str(tmp_path / "plan.md"), content="1. cart\n")
    model = ScriptedModel([[guarded], [write], "Planned."])
    agent = Agent(model, cwd=tmp_path, plugins=[real_plugin], permission_mode="acceptEdits")
    assert agent.run("plan the checkout flow").text == "Planned."
    # UserPromptSubmit (scripts/selfish-user-prompt-submit.sh): its additionalContext reaches the model
    assert "[Pipeline: checkout-flow] [Phase: plan]" in _user_text(model.requests[0])
    # PreToolUse on Bash (scripts/selfish-bash-guard.sh): its JSON deny blocks the call, with its reason
    blocked = all_results(agent.messages)["b1"]
    assert blocked.get("is_error")
    assert "SELFISH GUARD: git reset --hard is blocked during pipeline" in result_text(blocked)
    # PostToolUse on Write (scripts/track-selfish-changes.sh): the file it keeps lists the change
    assert (tmp_path / ".claude" / ".selfish-changes.log").read_text().split() == [str(tmp_path / "plan.md")]
    # control: with the pipeline off the same guard allows, and the command runs
    (tmp_path / ".claude" / ".selfish-active").unlink()
    model = ScriptedModel([[guarded], "Reset."])
    agent = Agent(model, cwd=tmp_path, plugins=[real_plugin])
    agent.run("reset")
    ran = all_results(agent.messages)["b1"]
    assert not ran.get("is_error") and "git reset --hard" in result_text(ran)


def test_the_real_plugin_s_notification_hook_runs_when_a_prompt_waits_for_the_person(
    real_plugin, tmp_path, monkeypatch
):
    # scripts/selfish-notify.sh shows a desktop notification with notify-send: this one writes it down.
    shown = tmp_path / "notifications.txt"
    write_tree(tmp_path, {"bin/notify-send": f'#!/bin/sh\nprintf \'%s|%s\\n\' "$1" "$2" >> {shown}\n'})
    (tmp_path / "bin" / "notify-send").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    write = use("Write", "w1", file_path=str(tmp_path / "plan.md"), content="1. cart\n")
    asked: list[str] = []

    def approver(request):
        asked.append(request.tool_name)
        return "deny"

    agent = Agent(ScriptedModel([[write], "ok"]), cwd=tmp_path, plugins=[real_plugin], approver=approver)
    agent.run("write the plan")
    assert asked == ["Write"]
    assert shown.read_text().splitlines() == [
        f"Permission Approval Required|ipy_agent needs your permission to use Write: {tmp_path / 'plan.md'}"
    ]
    # control: an approver that answers by itself asks no one, so no one is notified
    shown.unlink()
    agent = Agent(
        ScriptedModel([[write], "ok"]), cwd=tmp_path, plugins=[real_plugin], approver=NonInteractiveApprover("test")
    )
    agent.run("write the plan")
    assert not shown.exists()


def test_the_real_plugin_s_stop_gate_sends_the_agent_on_once_with_its_stderr(real_plugin, tmp_path):
    _pipeline(tmp_path, phase="implement")  # no .claude/.selfish-ci-passed: scripts/selfish-stop-gate.sh exits 2
    model = ScriptedModel(["Done.", "CI has not run yet: run it before calling this done."])
    agent = Agent(model, cwd=tmp_path, plugins=[real_plugin])
    result = agent.run("finish the checkout flow")
    # Exit 2: the model reads its stderr and goes on; the second Stop says stop_hook_active, and
    # the gate lets it stop (without that it would block every stop until max_turns).
    assert len(model.requests) == 2
    assert "SELFISH GATE: CI has not been run. Pipeline 'checkout-flow' Phase 'implement'" in _user_text(
        model.requests[1]
    )
    assert result.text == "CI has not run yet: run it before calling this done."


def test_problems_of_a_plugin_given_in_code_are_told_at_the_first_run(tmp_path):
    """Found when the Agent is built, before anyone listens: said as warnings when the first run
    starts (where the person's listener, a cell's view, hears them), and once."""
    write_tree(
        tmp_path / "kit",
        {
            ".claude-plugin/plugin.json": '{"name": "kit"}',
            "hooks/hooks.json": '{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "prompt"}]}]}}',
            "agents/fast.md": "---\nname: fast\ndescription: quick\nmodel: opus\n---\nBe quick.\n",
        },
    )
    write_tree(tmp_path / "broken", {".claude-plugin/plugin.json": "{not json"})
    agent = Agent(ScriptedModel(["ok", "again"]), cwd=tmp_path, plugins=[tmp_path / "kit", tmp_path / "broken"])
    warnings: list[str] = []
    agent.on_event(lambda e: warnings.append(e.text) if isinstance(e, NoticeEvent) and e.level == "warning" else None)
    agent.run("hi")
    hooks = str(tmp_path / "kit" / "hooks" / "hooks.json")
    assert [w for w in warnings if w.startswith(hooks)] == [
        f'{hooks}: hooks.PreToolUse: only {{"type": "command"}} hooks run here; skipped'
    ]
    assert [w for w in warnings if "Agent fast" in w] and [w for w in warnings if "broken" in w]
    assert "plugin.json is not valid JSON" in next(w for w in warnings if "broken" in w)
    told = len(warnings)
    agent.run("and again")
    assert len(warnings) == told  # said once, not at every run
