"""Rules granted with "Always allow" last for the kernel session, and the person can see and
revoke them. Driven through the magics in an IPython shell, answering prompts at `input()`."""

from __future__ import annotations

import pytest

from tests.magics._util import edit_script


def answers(monkeypatch: pytest.MonkeyPatch, *replies: str) -> list[str]:
    """Answer the approval prompts with `replies` in order; fail on an unexpected question."""
    asked: list[str] = []
    queue = list(replies)

    def fake_input(prompt: str = "") -> str:
        asked.append(prompt)
        if not queue:
            raise AssertionError(f"nobody should have been asked: {prompt!r}")
        return queue.pop(0)

    monkeypatch.setattr("builtins.input", fake_input)
    return asked


def test_grants_survive_new_and_reset_are_listed_and_can_be_revoked(
    shell, magics, script, tmp_path, monkeypatch, capsys
):
    path = edit_script(script, tmp_path)
    answers(monkeypatch, "a")
    shell.run_cell(f"%agent --script {path} change it", store_history=True)  # a numbered cell, as typed
    assert (tmp_path / "a.txt").read_text() == "howdy\n"
    granted = [r.text for r in magics.session.agent.rules.allow if r.source == "granted"]
    assert len(granted) == 1
    rule = granted[0]
    capsys.readouterr()

    shell.run_cell("%agent --new")
    out = capsys.readouterr().out
    assert "New conversation" in out and f"stay for this kernel session: {rule}" in out
    (tmp_path / "a.txt").write_text("hello\n")
    answers(monkeypatch)  # nobody is asked: the grant carried over
    shell.run_cell(f"%agent --script {edit_script(script, tmp_path)} change it again")
    assert (tmp_path / "a.txt").read_text() == "howdy\n"

    shell.run_cell("%agent_reset")
    out = capsys.readouterr().out
    assert "Conversation cleared." in out and rule in out

    shell.run_cell("%agent_rules")
    out = capsys.readouterr().out
    assert rule in out and '"Always allow" in cell [1]' in out

    shell.run_cell(f"%agent_rules --revoke {rule}")
    assert f"Revoked {rule}" in capsys.readouterr().out
    shell.run_cell("%agent_rules")
    assert "No rules granted" in capsys.readouterr().out
    (tmp_path / "a.txt").write_text("hello\n")
    asked = answers(monkeypatch, "n")
    shell.run_cell(f"%agent --script {edit_script(script, tmp_path)} once more")
    assert asked and (tmp_path / "a.txt").read_text() == "hello\n"  # it asks again


def test_revoking_what_was_never_granted_names_it(shell):
    from IPython.core.error import UsageError

    with pytest.raises(UsageError, match=r"'Bash\(rm:\*\)' is not a rule granted"):
        shell.run_line_magic("agent_rules", "--revoke Bash(rm:*)")


def test_help_says_grants_stay(shell):
    docs = {
        name: shell.magics_manager.magics["line"][name].__doc__ or ""
        for name in ("agent", "agent_reset", "agent_rules")
    }
    assert "Always allow" in docs["agent"] and "stay" in docs["agent"]
    assert "Always allow" in docs["agent_reset"] and "%agent_rules" in docs["agent_reset"]
    assert "--revoke" in docs["agent_rules"]
