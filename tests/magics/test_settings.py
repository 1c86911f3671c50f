"""Rules from settings files: where they come from, that they govern runs, and broken files."""

from __future__ import annotations

import json
from pathlib import Path

from ipy_agent.settings import load_settings_rules

from tests.magics._util import edit_script, results, text_of


def write(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")


def test_all_three_files_are_read_with_their_sources(tmp_path):
    write(tmp_path / ".ipy_agent" / "settings.json", {"allow": ["Read"], "deny": ["Bash(rm:*)"]})
    write(tmp_path / ".claude" / "settings.json", {"permissions": {"ask": ["Write"]}, "model": "ignored"})
    write(tmp_path / ".claude" / "settings.local.json", {"permissions": {"allow": ["Bash(git status:*)"]}})
    rules, warnings = load_settings_rules(tmp_path)
    assert warnings == []
    assert [(r.kind, r.text, r.source) for r in rules] == [
        ("allow", "Read", ".ipy_agent/settings.json"),
        ("deny", "Bash(rm:*)", ".ipy_agent/settings.json"),
        ("ask", "Write", ".claude/settings.json"),
        ("allow", "Bash(git status:*)", ".claude/settings.local.json"),
    ]


def test_problems_become_warnings_naming_the_file(tmp_path):
    write(tmp_path / ".claude" / "settings.json", '{"permissions": {"allow": [}')
    write(tmp_path / ".claude" / "settings.local.json", {"permissions": {"allow": ["Edit(", "Read"], "deny": "Bash"}})
    write(tmp_path / ".ipy_agent" / "settings.json", "[1, 2]")
    rules, warnings = load_settings_rules(tmp_path)
    assert [r.text for r in rules] == ["Read"]
    text = "\n".join(warnings)
    assert ".claude/settings.json: not valid JSON" in text and "line 1" in text
    assert ".claude/settings.local.json: permissions.allow: permission rule 'Edit(' is not valid" in text
    assert ".claude/settings.local.json: permissions.deny must be a list" in text
    assert ".ipy_agent/settings.json: expected a JSON object" in text


def test_a_deny_rule_from_claude_settings_governs_the_run(shell, magics, script, tmp_path, monkeypatch):
    monkeypatch.setattr("builtins.input", lambda prompt="": "y")
    write(tmp_path / ".claude" / "settings.local.json", {"permissions": {"deny": ["Edit(*.txt)"]}})
    path = edit_script(script, tmp_path, "bye")
    shell.run_line_magic("agent", f"--script {path} change it")
    assert (tmp_path / "a.txt").read_text() == "hello\n"
    assert "denied by rule 'Edit(*.txt)' (.claude/settings.local.json)" in text_of(results(magics.current.model, 2)["e1"])


def test_an_allow_rule_from_our_settings_skips_the_prompt(shell, script, tmp_path, monkeypatch):
    def no_input(prompt: str = "") -> str:
        raise AssertionError("the rule should have allowed it")

    monkeypatch.setattr("builtins.input", no_input)
    write(tmp_path / ".ipy_agent" / "settings.json", {"permissions": {"allow": ["Edit(a.txt)"]}})
    path = edit_script(script, tmp_path, "bye")
    shell.run_line_magic("agent", f"--script {path} change it")
    assert (tmp_path / "a.txt").read_text() == "bye\n"


def test_malformed_settings_warn_and_the_run_goes_on(shell, magics, script, tmp_path, capsys):
    write(tmp_path / ".ipy_agent" / "settings.json", "{oops")
    shell.run_cell(f"%agent --script {script('still here')} hi")
    captured = capsys.readouterr()
    assert "still here" in captured.out
    assert "warning: .ipy_agent/settings.json: not valid JSON" in captured.err
    assert "Traceback" not in captured.err
    shell.run_line_magic("agent_tools", "")
    assert ".ipy_agent/settings.json: not valid JSON" in capsys.readouterr().err


def test_settings_changes_apply_at_the_next_run_and_granted_rules_stay(shell, magics, script, tmp_path, monkeypatch):
    monkeypatch.setattr("builtins.input", lambda prompt="": "a")
    write(tmp_path / ".ipy_agent" / "settings.json", {"deny": ["Bash"]})
    path = edit_script(script, tmp_path, "bye")
    shell.run_line_magic("agent", f"--script {path} change it")
    assert "Bash" not in [t["name"] for t in magics.current.model.requests[0]["tools"]]
    write(tmp_path / ".ipy_agent" / "settings.json", {"deny": []})
    shell.run_line_magic("agent", f"--script {script('ok')} again")
    rules = magics.current.rules
    assert "Bash" in [t["name"] for t in magics.current.model.requests[0]["tools"]]
    assert [(r.text, r.source) for r in rules.allow] == [("Edit(./*.txt)", "granted")]
    assert rules.deny == []
