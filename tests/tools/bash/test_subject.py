"""What a Bash command means for permission rules: the parts an allow rule must cover and the
spellings deny and ask rules match, all from the one tree-sitter parse (the runtime parses no
shell)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ipy_agent.permissions.rules import matches_subject
from ipy_agent.tools.bash.subject import command_subject
from ipy_agent.tools.bash.syntax import split_command


def test_splitting_respects_quotes_and_redirections():
    assert split_command("a && b || c; d | e") == ["a", "b", "c", "d", "e"]
    assert split_command("echo 'x && y' \"p;q\"") == ["echo 'x && y' \"p;q\""]
    assert split_command("cmd 2>&1 | tee") == ["cmd 2>&1", "tee"]
    assert split_command("echo $(whoami)") is None
    assert split_command("echo 'unterminated") is None


def _allows(spec: str, command: str) -> bool:
    return matches_subject(spec, command_subject(command), cwd=Path("/"), kind="allow")


def _denies(spec: str, command: str) -> bool:
    return matches_subject(spec, command_subject(command), cwd=Path("/"), kind="deny")


@pytest.mark.parametrize(
    ("command", "forms"),
    [
        ("timeout 5 git status", ("git status",)),
        ("nice -n 5 git  status 2>&1", ("git  status 2>&1",)),
        ("timeout -s KILL 5 time git status", ("git status",)),
        ("git status", ()),
    ],
)
def test_a_part_is_also_offered_behind_timing_wrappers(command, forms):
    parts = command_subject(command).parts
    assert parts is not None and len(parts) == 1
    assert parts[0].text == command and parts[0].forms == forms


@pytest.mark.parametrize(
    "command",
    [
        "env git status",  # env can set GIT_* variables that run programs
        "sudo git status",
        "./timeout 5 git status",  # a file called timeout is whatever it is
        "/tmp/x/timeout 5 git status",
        "xargs git status",
    ],
)
def test_allow_rules_do_not_look_through_wrappers_that_change_what_runs(command):
    assert not _allows("git status:*", command)
    assert _allows("git status:*", "timeout 5 git status")


@pytest.mark.parametrize(
    "command",
    [
        "git status > out",
        "git status $(rm x)",
        "git status `rm x`",
        "git status && cat <(rm x)",
        "git status; echo 'unterminated",
    ],
)
def test_no_allow_rule_vouches_for_hidden_commands_or_written_files(command):
    subject = command_subject(command)
    assert subject.parts is None
    assert not _allows("git status:*", command) and not _allows("*", command)


@pytest.mark.parametrize(
    "command",
    [
        "ls $(rm v)",
        "echo `rm v`",
        "cat <(rm v)",
        "rm v\necho 'unterminated",
        "\\rm v",
        "x=1 rm v",
    ],
)
def test_deny_rules_see_commands_the_allow_side_cannot_vouch_for(command):
    assert _denies("rm:*", command)


def test_a_parser_failure_leaves_the_raw_text_for_deny_and_nothing_for_allow(monkeypatch):
    import ipy_agent.tools.bash.subject as subject_mod

    def boom(_command):
        raise RuntimeError("parser bug")

    monkeypatch.setattr(subject_mod, "analyze", boom)
    subject = command_subject("rm -rf x")
    assert subject.parts is None and subject.value == "rm -rf x"
    assert _denies("rm:*", "rm -rf x") and not _allows("rm:*", "rm -rf x")


def test_a_timing_wrapper_that_writes_a_file_is_not_looked_through():
    for command in ("command time -o out git status", "\\time --output=out git status", "time -a -o out git status"):
        assert not _allows("git status:*", command), command
    assert _allows("git status:*", "command time -p git status")
