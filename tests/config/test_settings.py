"""Rules from settings files: where they come from, that they govern runs, and broken files."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ipy_agent.config.settings import SettingsError, load_settings_rules
from tests.support.transcript import edit_script, result_text, results_sent


def write(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")


def test_all_three_files_are_read_with_their_sources(tmp_path):
    write(tmp_path / ".ipy_agent" / "settings.json", {"allow": ["Read(src/**)"], "deny": ["Bash(rm:*)"]})
    write(tmp_path / ".claude" / "settings.json", {"permissions": {"ask": ["Write"]}, "model": "ignored"})
    write(tmp_path / ".claude" / "settings.local.json", {"permissions": {"allow": ["Bash(git status:*)"]}})
    rules, warnings = load_settings_rules(tmp_path, approve=lambda where, allow: True)
    assert warnings == []
    assert [(r.kind, r.text, r.source) for r in rules] == [
        ("allow", "Read(src/**)", ".ipy_agent/settings.json"),
        ("deny", "Bash(rm:*)", ".ipy_agent/settings.json"),
        ("ask", "Write", ".claude/settings.json"),
        ("allow", "Bash(git status:*)", ".claude/settings.local.json"),
    ]


def test_broken_allow_rules_are_warnings_naming_the_file(tmp_path):
    write(
        tmp_path / ".claude" / "settings.local.json",
        {"permissions": {"allow": ["Edit(", "Read(docs/**)"], "deny": ["Bash(rm:*)"]}},
    )
    write(tmp_path / ".ipy_agent" / "settings.json", {"permissions": {"allow": "Bash"}})
    rules, warnings = load_settings_rules(tmp_path, approve=lambda where, allow: True)
    assert [r.text for r in rules] == ["Read(docs/**)", "Bash(rm:*)"]
    text = "\n".join(warnings)
    assert ".claude/settings.local.json: permissions.allow: permission rule 'Edit(' is not valid" in text
    assert ".ipy_agent/settings.json: permissions.allow must be a list" in text


@pytest.mark.parametrize(
    "rel,content,message",
    [
        (
            ".claude/settings.json",
            '{"permissions": {"deny": ["Bash(rm:*)"],}}',
            ".claude/settings.json: not valid JSON",
        ),
        (".ipy_agent/settings.json", "[1, 2]", ".ipy_agent/settings.json: expected a JSON object"),
        (".claude/settings.local.json", '{"permissions": {"deny": "Bash"}}', "permissions.deny must be a list"),
        (
            ".claude/settings.local.json",
            '{"permissions": {"ask": ["Edit("]}}',
            "permissions.ask: permission rule 'Edit(' is not valid",
        ),
    ],
)
def test_files_whose_deny_or_ask_rules_cannot_be_read_stop_the_run(tmp_path, rel, content, message):
    write(tmp_path / rel, content)
    with pytest.raises(SettingsError, match=re.escape(message)) as err:
        load_settings_rules(tmp_path)
    assert "will not run" in str(err.value)


def test_a_deny_rule_from_claude_settings_governs_the_run(shell, magics, script, tmp_path, monkeypatch):
    monkeypatch.setattr("builtins.input", lambda prompt="": "y")
    write(tmp_path / ".claude" / "settings.local.json", {"permissions": {"deny": ["Edit(*.txt)"]}})
    path = edit_script(script, tmp_path, "bye")
    shell.run_line_magic("agent", f"--script {path} change it")
    assert (tmp_path / "a.txt").read_text() == "hello\n"
    assert "denied by rule 'Edit(*.txt)' (.claude/settings.local.json)" in result_text(
        results_sent(magics.session.agent.model, 2)["e1"]
    )


def test_an_allow_rule_from_our_settings_skips_the_prompt_once_approved(shell, script, tmp_path, monkeypatch, capsys):
    asked: list[str] = []

    def approve_the_file_only(prompt: str = "") -> str:
        asked.append(prompt)
        assert "Apply these allow rules" in prompt, "the rule should have allowed the edit"
        return "y"

    monkeypatch.setattr("builtins.input", approve_the_file_only)
    write(tmp_path / ".ipy_agent" / "settings.json", {"permissions": {"allow": ["Edit(a.txt)"]}})
    path = edit_script(script, tmp_path, "bye")
    shell.run_line_magic("agent", f"--script {path} change it")
    assert (tmp_path / "a.txt").read_text() == "bye\n"
    assert "allow Edit(a.txt)" in capsys.readouterr().out  # what the person approved
    path = edit_script(script, tmp_path, "again")
    shell.run_line_magic("agent", f"--script {path} change it")  # remembered: no second question
    assert (tmp_path / "a.txt").read_text() == "again\n" and len(asked) == 1


def test_without_stdin_a_project_files_new_allow_rule_is_left_out_and_the_person_told(
    shell, script, tmp_path, monkeypatch, capsys
):
    from IPython.core.error import StdinNotImplementedError

    def no_stdin(prompt: str = "") -> str:  # nbconvert, papermill: nobody to answer
        raise StdinNotImplementedError("raw_input was called, but this frontend does not support input requests.")

    monkeypatch.setattr("builtins.input", no_stdin)
    write(tmp_path / ".ipy_agent" / "settings.json", {"permissions": {"allow": ["Edit(a.txt)"]}})
    path = edit_script(script, tmp_path, "bye")
    shell.run_line_magic("agent", f"--script {path} change it")
    captured = capsys.readouterr()
    assert (tmp_path / "a.txt").read_text() == "hello\n"  # the edit was not allowed by the file
    assert "its allow rules Edit(a.txt) were not applied" in captured.out + captured.err


def test_a_declined_allow_rule_is_not_asked_about_again_until_it_changes(shell, script, tmp_path, monkeypatch):
    asked: list[str] = []

    def answer(prompt: str = "") -> str:
        asked.append(prompt)
        return "n"

    monkeypatch.setattr("builtins.input", answer)
    settings = tmp_path / ".ipy_agent" / "settings.json"
    write(settings, {"permissions": {"allow": ["Edit(a.txt)"]}})
    for _ in range(2):
        shell.run_line_magic("agent", f"--script {edit_script(script, tmp_path, 'bye')} change it")
    # The file's question once; each run's Edit asks (and is refused): the rule did not apply.
    assert [p for p in asked if "Apply these allow rules" in p] == [asked[0]]
    assert (tmp_path / "a.txt").read_text() == "hello\n"
    write(settings, {"permissions": {"allow": ["Edit(a.txt)", "Edit(b.txt)"]}})
    shell.run_line_magic("agent", f"--script {edit_script(script, tmp_path, 'bye')} change it")
    assert len([p for p in asked if "Apply these allow rules" in p]) == 2  # changed: asked again


def test_a_malformed_settings_file_stops_the_run_with_the_fix(shell, magics, script, tmp_path, capsys):
    write(tmp_path / ".claude" / "settings.json", '{"permissions": {"deny": ["Bash(rm:*)"],}}')
    shell.run_cell(f"%agent --script {script('should not run')} hi")
    captured = capsys.readouterr()
    assert "should not run" not in captured.out
    assert "UsageError: .claude/settings.json: not valid JSON" in captured.err + captured.out
    assert "Traceback" not in captured.err
    write(tmp_path / ".claude" / "settings.json", {"permissions": {"deny": ["Bash(rm:*)"]}})
    shell.run_cell(f"%agent --script {script('runs now')} hi")
    assert "runs now" in capsys.readouterr().out


def test_settings_changes_apply_at_the_next_run_and_granted_rules_stay(shell, magics, script, tmp_path, monkeypatch):
    monkeypatch.setattr("builtins.input", lambda prompt="": "a")
    write(tmp_path / ".ipy_agent" / "settings.json", {"deny": ["Bash"]})
    path = edit_script(script, tmp_path, "bye")
    shell.run_line_magic("agent", f"--script {path} change it")
    assert "Bash" not in [t["name"] for t in magics.session.agent.model.requests[0]["tools"]]
    write(tmp_path / ".ipy_agent" / "settings.json", {"deny": []})
    shell.run_line_magic("agent", f"--script {script('ok')} again")
    rules = magics.session.agent.rules
    assert "Bash" in [t["name"] for t in magics.session.agent.model.requests[0]["tools"]]
    assert [(r.text, r.source) for r in rules.allow] == [("Edit(./*.txt)", "granted")]
    assert [r for r in rules.deny if r.source != "built-in"] == []


def test_allow_rules_that_match_everything_are_skipped_and_named(tmp_path):
    write(
        tmp_path / ".claude" / "settings.json",
        {"permissions": {"allow": ["Bash(*)", "Read(**)", "Edit", "Bash(:*)", "Read(//**)", "Bash(git status:*)"]}},
    )
    rules, warnings = load_settings_rules(tmp_path, approve=lambda where, allow: True)
    assert [r.text for r in rules] == ["Bash(git status:*)"]
    assert len(warnings) == 5 and all("would allow every" in w and ".claude/settings.json" in w for w in warnings)
    assert "%agent --allow 'Bash(*)'" in warnings[0]
