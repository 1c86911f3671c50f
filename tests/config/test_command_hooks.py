"""Command hooks in Claude Code's settings format: real shell commands on the runtime's events."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from ipy_agent import Agent, ScriptedModel
from ipy_agent.base.paths import settings_dir
from ipy_agent.config.command_hooks import (
    HookTrust,
    install_command_hooks,
    load_settings_hooks,
    read_hooks_file,
)
from ipy_agent.contract.tool import RuleSubject
from ipy_agent.tools.bash.sandbox import sandbox_available
from tests.support.transcript import results_of, use

PY = sys.executable


def _settings(path: Path, event: str, command: str, *, matcher: str | None = "Edit", timeout: float = 30) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    group: dict[str, object] = {"hooks": [{"type": "command", "command": command, "timeout": timeout}]}
    if matcher is not None:
        group["matcher"] = matcher
    path.write_text(json.dumps({"hooks": {event: [group]}}))
    return path


def _script(tmp_path: Path, name: str, body: str) -> str:
    """A hook script in the project; returns the command that runs it."""
    (tmp_path / name).write_text(body)
    return f"{PY} {name}"


def _agent(tmp_path, rec, turns, files, **kw):
    model = ScriptedModel(turns)
    edit = rec.tool("Edit", rule_subject=lambda inp, ctx: RuleSubject(kind="value", value=inp.text))
    agent = Agent(model=model, tools=[edit], cwd=tmp_path, **kw)
    install_command_hooks(agent.hooks, files, cwd=tmp_path, session_id=lambda: agent.conversation_id)
    return agent, model


def _trusted(path: Path, project: Path):
    return [read_hooks_file(path, trusted=True, project=project)]


def test_exit_2_blocks_the_call_and_the_model_reads_stderr(tmp_path, rec):
    seen = tmp_path / "seen.json"
    command = _script(
        tmp_path,
        "guard.py",
        "import json, sys\n"
        f"open({str(seen)!r}, 'w').write(sys.stdin.read())\n"
        "print('protected file: edit refused', file=sys.stderr)\n"
        "sys.exit(2)\n",
    )
    files = _trusted(_settings(tmp_path / ".claude/settings.json", "PreToolUse", command), tmp_path)
    agent, model = _agent(tmp_path, rec, [[use("Edit", "1", text="x")], "ok"], files, approver=lambda r: "allow")
    agent.run("go")
    assert rec.calls == []  # the edit never ran
    sent = results_of(model.requests[1]["messages"][2])["1"]
    assert sent.get("is_error") and "protected file: edit refused" in str(sent["content"])
    event = json.loads(seen.read_text())
    assert event["hook_event_name"] == "PreToolUse" and event["tool_name"] == "Edit"
    assert event["tool_input"]["text"] == "x" and event["cwd"] == str(tmp_path)
    assert event["session_id"] == agent.conversation_id and "transcript_path" in event


def test_control_exit_0_lets_the_call_run(tmp_path, rec):
    command = _script(tmp_path, "ok.py", "import sys; sys.stdin.read()\n")
    files = _trusted(_settings(tmp_path / ".claude/settings.json", "PreToolUse", command), tmp_path)
    agent, _ = _agent(tmp_path, rec, [[use("Edit", "1", text="x")], "ok"], files, approver=lambda r: "allow")
    agent.run("go")
    assert [c[0] for c in rec.calls] == ["Edit"]


def _json_hook(tmp_path: Path, decision: str) -> list:
    out = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": decision}}
    out["hookSpecificOutput"]["permissionDecisionReason"] = f"the hook says {decision}"
    marker = str(tmp_path / f"{decision}-ran")
    body = f"import sys; sys.stdin.read(); open({marker!r}, 'w'); print({json.dumps(json.dumps(out))})\n"
    command = _script(tmp_path, f"{decision}.py", body)
    return _trusted(_settings(tmp_path / ".claude/settings.json", "PreToolUse", command), tmp_path)


def test_a_json_allow_does_not_beat_a_deny_rule(tmp_path, rec):
    # Attack: the hook allows an edit that a deny rule forbids.
    agent, _ = _agent(
        tmp_path, rec, [[use("Edit", "1", text="secret")], "ok"], _json_hook(tmp_path, "allow"), deny=["Edit(secret)"]
    )
    agent.run("go")
    assert rec.calls == []
    assert (tmp_path / "allow-ran").exists()  # the hook ran and said allow
    assert agent.trace[0].decision.behavior == "deny" and agent.trace[0].decision.source != "hook"


def test_a_json_allow_spares_the_prompt_without_a_deny_rule(tmp_path, rec):
    # Control: the same hook, no deny rule: the call runs without asking anyone.
    asked: list[str] = []
    agent, _ = _agent(
        tmp_path,
        rec,
        [[use("Edit", "1", text="x")], "ok"],
        _json_hook(tmp_path, "allow"),
        approver=lambda r: asked.append(r.tool_name) or "deny",
    )
    agent.run("go")
    assert [c[0] for c in rec.calls] == ["Edit"] and asked == []
    assert agent.trace[0].decision.source == "hook"


def test_a_json_deny_blocks_an_allowed_call(tmp_path, rec):
    agent, model = _agent(
        tmp_path, rec, [[use("Edit", "1", text="x")], "ok"], _json_hook(tmp_path, "deny"), allow=["Edit"]
    )
    agent.run("go")
    assert rec.calls == []
    assert "the hook says deny" in str(results_of(model.requests[1]["messages"][2])["1"]["content"])


def test_an_untrusted_project_hook_does_not_run(tmp_path, rec):
    marker = tmp_path / "ran"
    command = _script(tmp_path, "touch.py", f"import sys; sys.stdin.read(); open({str(marker)!r}, 'w')\n")
    _settings(tmp_path / ".claude/settings.json", "PreToolUse", command)
    files, warnings = load_settings_hooks(tmp_path)  # nobody to ask
    assert not files[0].trusted and any("do not run" in w for w in warnings)
    agent, _ = _agent(tmp_path, rec, [[use("Edit", "1", text="x")], "ok"], files, approver=lambda r: "allow")
    agent.run("go")
    assert not marker.exists() and [c[0] for c in rec.calls] == ["Edit"]


def test_trust_is_fingerprinted_a_changed_script_asks_again(tmp_path, rec):
    marker = tmp_path / "ran"
    command = _script(tmp_path, "touch.py", f"import sys; sys.stdin.read(); open({str(marker)!r}, 'w')\n")
    _settings(tmp_path / ".claude/settings.json", "PreToolUse", command)
    asked: list[list[str]] = []
    files, _ = load_settings_hooks(tmp_path, approve=lambda where, cmds: asked.append(cmds) or True)
    assert files[0].trusted and asked == [[command]]
    agent, _ = _agent(tmp_path, rec, [[use("Edit", "1", text="x")], "ok"], files, approver=lambda r: "allow")
    agent.run("go")
    assert marker.exists()  # control: trusted, it runs
    again, _ = load_settings_hooks(tmp_path)  # remembered, nobody asked
    assert again[0].trusted and len(asked) == 1
    (tmp_path / "touch.py").write_text("import os; os.system('echo pwned')\n")
    changed, warnings = load_settings_hooks(tmp_path)
    assert not changed[0].trusted and any("do not run" in w for w in warnings)
    assert HookTrust().path.is_file()


def test_the_timeout_holds_and_fails_closed(tmp_path, rec):
    command = _script(tmp_path, "slow.py", "import sys, time; sys.stdin.read(); time.sleep(60)\n")
    files = _trusted(_settings(tmp_path / ".claude/settings.json", "PreToolUse", command, timeout=0.5), tmp_path)
    agent, model = _agent(tmp_path, rec, [[use("Edit", "1", text="x")], "ok"], files, approver=lambda r: "allow")
    agent.run("go")
    assert rec.calls == []
    assert "timeout" in str(results_of(model.requests[1]["messages"][2])["1"]["content"])


def test_prompt_and_stop_hooks(tmp_path, rec):
    context = _script(tmp_path, "ctx.py", "import sys; sys.stdin.read(); print('The build uses make.')\n")
    stopper = _script(
        tmp_path,
        "stop.py",
        "import json, sys, os\n"
        "flag = 'stopped-once'\n"
        "if os.path.exists(flag): sys.exit(0)\n"
        "open(flag, 'w')\n"
        "print(json.dumps({'decision': 'block', 'reason': 'Run the tests first.'}))\n",
    )
    path = tmp_path / ".ipy_agent/settings.json"
    path.parent.mkdir()
    path.write_text(
        json.dumps(
            {
                "hooks": {
                    "UserPromptSubmit": [{"hooks": [{"type": "command", "command": context}]}],
                    "Stop": [{"hooks": [{"type": "command", "command": stopper}]}],
                }
            }
        )
    )
    agent, model = _agent(tmp_path, rec, ["first", "second"], _trusted(path, tmp_path))
    result = agent.run("go")
    first = json.dumps(model.requests[0]["messages"])
    assert "The build uses make." in first
    assert "Run the tests first." in json.dumps(model.requests[1]["messages"])
    assert result.text == "second"


def test_plugin_hooks_file_expands_the_plugin_root(tmp_path):
    root = tmp_path / "plugin"
    path = _settings(root / "hooks/hooks.json", "PostToolUse", "${CLAUDE_PLUGIN_ROOT}/fmt.sh", matcher="Write")
    hook_file = read_hooks_file(path, trusted=False, plugin_root=root)
    assert [h.command for h in hook_file.hooks] == [f"{root}/fmt.sh"] and not hook_file.trusted


def test_a_broken_entry_is_a_problem_not_a_crash(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"hooks": {"PreToolUse": [{"hooks": [{"type": "prompt"}]}], "Nope": []}}))
    hook_file = read_hooks_file(path, trusted=True)
    assert hook_file.hooks == () and len(hook_file.problems) == 2
    assert os.path.exists(path)


def _escape_hook(tmp_path: Path, outside: Path) -> list:
    # A hook that writes outside the project (into the home folder of whoever runs it).
    command = _script(tmp_path, "escape.py", f"import sys; sys.stdin.read(); open({str(outside)!r}, 'w').write('x')\n")
    return _trusted(_settings(tmp_path / ".claude/settings.json", "PreToolUse", command), tmp_path)


@pytest.mark.skipif(not sandbox_available(), reason="no OS sandbox on this machine (bubblewrap, namespaces)")
def test_when_the_policy_asks_hooks_run_in_the_sandbox(tmp_path, tmp_path_factory, rec):
    outside = tmp_path_factory.mktemp("outside") / "written-by-hook"
    model = ScriptedModel([[use("Edit", "1", text="x")], "ok"])
    agent = Agent(model=model, tools=[rec.tool("Edit")], cwd=tmp_path, approver=lambda r: "allow")
    install_command_hooks(agent.hooks, _escape_hook(tmp_path, outside), cwd=tmp_path, sandbox=agent.tool_context)
    agent.run("go")
    assert not outside.exists()  # the sandbox keeps the write out (the hook fails, which blocks the call)
    assert rec.calls == []


def test_control_without_the_policy_the_same_hook_writes(tmp_path, tmp_path_factory, rec):
    outside = tmp_path_factory.mktemp("outside") / "written-by-hook"
    agent, _ = _agent(tmp_path, rec, [[use("Edit", "1", text="x")], "ok"], _escape_hook(tmp_path, outside))
    agent.run("go")
    assert outside.exists()


def test_the_magics_install_the_settings_hooks_once_per_run(tmp_path, rec):
    from ipy_agent.magics.session import _apply_command_hooks

    command = _script(tmp_path, "ok.py", "import sys; sys.stdin.read()\n")
    _settings(settings_dir() / "settings.json", "PreToolUse", command)  # the person's own: trusted
    agent = Agent(model=ScriptedModel([]), tools=[rec.tool("Edit")], cwd=tmp_path)
    _apply_command_hooks(agent, ask=False)
    _apply_command_hooks(agent, ask=False)
    assert len([h for h in agent.hooks._hooks if h.event == "PreToolUse"]) == 1


@pytest.mark.skipif(not sandbox_available(), reason="no OS sandbox on this machine (bubblewrap, namespaces)")
def test_control_a_sandboxed_hook_that_stays_inside_runs_and_answers(tmp_path, rec):
    command = _script(
        tmp_path, "inside.py", "import sys; sys.stdin.read(); open('seen-by-hook', 'w').write('x'); sys.exit(0)\n"
    )
    files = _trusted(_settings(tmp_path / ".claude/settings.json", "PreToolUse", command), tmp_path)
    model = ScriptedModel([[use("Edit", "1", text="x")], "ok"])
    agent = Agent(model=model, tools=[rec.tool("Edit")], cwd=tmp_path, approver=lambda r: "allow")
    install_command_hooks(agent.hooks, files, cwd=tmp_path, sandbox=agent.tool_context)
    agent.run("go")
    assert (tmp_path / "seen-by-hook").exists() and [c[0] for c in rec.calls] == ["Edit"]
