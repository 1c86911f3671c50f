"""Bash's verdicts before anything runs: read-only, destructive, and the split into simple
commands that permission rules match. The corpus lives in corpus.py."""

from __future__ import annotations

import pytest

from ipy_agent.tools.bash import BashInput, BashTool
from ipy_agent.tools.bash.destructive import destructive_reasons
from ipy_agent.tools.bash.sed import sed_script_problem
from ipy_agent.tools.bash.subject import command_subject
from ipy_agent.tools.bash.syntax import split_command
from ipy_agent.tools.bash.verdict import read_only_reason
from ipy_agent.tools.bash.wrappers import normalized_commands
from tests.tools.bash.corpus import DESTRUCTIVE, NOT_DESTRUCTIVE, READ_ONLY, WRITES


def test_the_corpus_is_big_enough_and_has_no_command_on_both_sides():
    assert len(READ_ONLY) + len(WRITES) >= 150
    assert len(WRITES) >= 100
    assert not set(READ_ONLY) & set(WRITES)


@pytest.mark.parametrize("command", READ_ONLY)
def test_read_only_commands(command):
    tool = BashTool()
    inp = BashInput(command=command)
    assert read_only_reason(command) is None
    assert tool.is_read_only(inp) and tool.is_concurrency_safe(inp)


@pytest.mark.parametrize("command", WRITES)
def test_no_write_command_is_judged_read_only(command):
    tool = BashTool()
    inp = BashInput(command=command)
    assert read_only_reason(command)  # a reason is given, for traces
    assert not tool.is_read_only(inp)
    assert not tool.is_concurrency_safe(inp)


@pytest.mark.parametrize(
    ("command", "words"),
    [
        ("sed -i 's/a/b/' f", "sed -i"),
        ("echo $(rm x)", "command substitution"),
        ("cat <(rm x)", "process substitution"),
        ("echo x > f", "redirection"),
        ("git -c core.pager=x log", "git -c"),
        ("$CMD args", "command name"),
        ("cat 'oops", "could not be parsed"),
        ("find . -delete", "find -delete"),
        ("xargs rm", "rm is not on the read-only allow-list"),
    ],
)
def test_reasons_name_what_is_wrong(command, words):
    assert words in (read_only_reason(command) or "")


@pytest.mark.parametrize("command", DESTRUCTIVE)
def test_destructive_commands_are_flagged(command):
    assert BashTool().is_destructive(BashInput(command=command))
    assert destructive_reasons(command)


@pytest.mark.parametrize("command", NOT_DESTRUCTIVE)
def test_ordinary_commands_are_not_flagged_destructive(command):
    assert not BashTool().is_destructive(BashInput(command=command))


@pytest.mark.parametrize(
    ("command", "parts"),
    [
        ("git status", ["git status"]),
        ("git diff && npm test", ["git diff", "npm test"]),
        ("ls -la | grep foo; echo done || true", ["ls -la", "grep foo", "echo done", "true"]),
        ("cd src && (make && make install)", ["cd src", "make", "make install"]),
        ("{ ls; pwd; }", ["ls", "pwd"]),
        ("echo 'a && b' \"c ; d\"", ["echo 'a && b' \"c ; d\""]),
        ("npm test > out.txt 2>&1 && cat out.txt", ["npm test > out.txt 2>&1", "cat out.txt"]),
        ("cat <<EOF | grep x\nhello\nEOF", ["cat <<EOF", "grep x"]),
        ("sleep 5 & ls", ["sleep 5", "ls"]),
        ("FOO=1 npm test", ["FOO=1 npm test"]),
        ("! grep -q x f", ["grep -q x f"]),
        ("", []),
    ],
)
def test_split_command_returns_each_simple_command(command, parts):
    assert split_command(command) == parts


@pytest.mark.parametrize(
    "command",
    [
        "echo $(rm x)",
        "ls `pwd`",
        "cat <(ls)",
        "$CMD x",
        "for f in *; do rm $f; done",
        "f() { ls; }",
        "cat 'unterminated",
        "if true; then ls; fi",
        "a=$(ls) && b",
    ],
)
def test_split_command_refuses_what_it_cannot_vouch_for(command):
    assert split_command(command) is None


@pytest.mark.parametrize(
    ("script", "safe"),
    [
        ("p", True),
        ("1,5p", True),
        ("s/a/b/g", True),
        ("s|/w|x|", True),
        ("/w/d", True),
        ("$!N;P;D", True),
        ("y/abc/xyz/", True),
        ("s/a/b/w f", False),
        ("s/a/b/e", False),
        ("w f", False),
        ("1W f", False),
        ("e date", False),
        ("/x/e ls", False),
        ("{p;w f\n}", False),
        ("a hello w", True),
        ("k", False),
    ],
)
def test_sed_scripts_are_read_for_w_and_e(script, safe):
    assert (sed_script_problem(script) is None) == safe


def test_a_classifier_crash_fails_closed(monkeypatch):
    import ipy_agent.tools.bash.tool as bash_mod

    def boom(_command):
        raise RuntimeError("bug")

    monkeypatch.setattr(bash_mod, "is_read_only_command", boom)
    monkeypatch.setattr(bash_mod, "destructive_reasons", boom)
    tool, inp = BashTool(), BashInput(command="ls")
    assert not tool.is_read_only(inp) and not tool.is_concurrency_safe(inp)
    assert tool.is_destructive(inp)
    assert tool.cancels_siblings_on_error(inp)


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("\\rm -f x", ["rm -f x"]),
        ("'/usr/bin/git' push", ["git push"]),
        ("env -i A=1 timeout -k 5 10 nice -n 3 rm x", ["rm x"]),
        ("ls | xargs -I {} rm {}", ["ls", "rm {}"]),
        ("bash -c 'ls && sudo rm x'", ["bash -c ls && sudo rm x", "ls", "rm x"]),
        ("command -v rm", ["command -v rm"]),  # looks rm up, runs nothing
    ],
)
def test_normalized_commands_name_the_program_that_runs(command, expected):
    assert normalized_commands(command) == expected
    # What the Bash tool hands the permission engine carries them for deny and ask rules.
    assert set(expected) <= set(command_subject(command).spellings)
