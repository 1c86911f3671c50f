"""Bash honours Read deny rules: a command that names a denied file is refused, in every mode.

anthropics/claude-code#6002 and #65816: with `Read(**/.env)` denied, `cat .env` still ran
without a prompt, since it is a read-only command. These tests go through Agent and
ScriptedModel and check what the model received and whether the command ran.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ipy_agent import Agent, ScriptedModel
from ipy_agent.contract.read_state import ReadState
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.tools.bash import BashInput, BashTool
from tests.helpers import write_tree

DENY = ["Read(**/.env)", "Read(secrets/**)"]
SECRET = "SECRET"  # in every denied file


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    files = {
        ".env": "API_KEY=sk-SECRET-root\n",
        "app/.env": "API_KEY=sk-SECRET-app\n",
        "secrets/key.pem": "SECRET-pem\n",
        "README.md": "Put API_KEY in .env\n",
    }
    return write_tree(tmp_path, files)


def run_bash(cwd: Path, *commands: str, mode: str = "default", deny: list[str] = DENY) -> tuple[Agent, ScriptedModel]:
    turns: list = []
    for i, command in enumerate(commands):
        turns += [[{"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {"command": command}}], "ok"]
    model = ScriptedModel(turns)
    agent = Agent(
        model=model, cwd=cwd, tools=[BashTool()], deny=deny, permission_mode=mode, approver=lambda req: "allow"
    )
    for _ in commands:
        agent.run("go")
    return agent, model


def last_result(model: ScriptedModel) -> dict:
    return model.requests[-1]["messages"][-1]["content"][0]


@pytest.mark.parametrize("mode", ["default", "acceptEdits", "bypassPermissions"])
def test_cat_of_a_denied_file_is_refused_in_every_mode(tree, mode):
    agent, model = run_bash(tree, "cat .env", mode=mode)
    result = last_result(model)
    assert result["is_error"] is True
    text = result["content"]
    assert "'.env'" in text and "Read(**/.env)" in text and "ask the person" in text
    assert SECRET not in json.dumps(model.requests)
    assert agent.trace[0].decision.behavior == "deny" and agent.trace[0].decision.source == "tool"


def test_grep_naming_the_file_is_refused_but_a_recursive_grep_is_not(tree):
    _, model = run_bash(tree, "grep KEY app/.env")
    assert "'app/.env'" in last_result(model)["content"] and SECRET not in json.dumps(model.requests)
    # No word of `grep -r KEY .` names a denied file, so the check lets it through and grep walks
    # into .env by itself. Filtering what a program walks (as Grep does with ripgrep globs) is out
    # of scope for a permission check on the command line: the Bash description steers searches
    # to Grep, which does hide denied files.
    agent, _ = run_bash(tree, "grep -r KEY .")
    assert agent.trace[0].decision.behavior == "allow"


def test_the_directory_of_a_cd_earlier_in_the_command_is_followed(tree):
    # `secrets/**` is anchored at cwd: `key.pem` is denied only once the shell is in secrets/.
    _, model = run_bash(tree, "cd secrets && cat key.pem", deny=["Read(secrets/**)"])
    assert "'key.pem'" in last_result(model)["content"] and SECRET not in json.dumps(model.requests)
    _, model = run_bash(tree, "cd app && cat .env")
    assert "Read(**/.env)" in last_result(model)["content"]


def test_the_shells_directory_from_an_earlier_call_is_followed(tree):
    agent, model = run_bash(tree, "cd secrets", "cat key.pem", deny=["Read(secrets/**)"])
    assert agent.trace[0].decision.behavior == "allow"
    assert last_result(model)["is_error"] is True and "Read(secrets/**)" in last_result(model)["content"]
    assert SECRET not in json.dumps(model.requests)


def test_a_path_only_the_shell_knows_is_not_judged(tree, monkeypatch):
    monkeypatch.setenv("HOME", str(tree / "home"))
    agent, _ = run_bash(tree, 'cat "$HOME/x"')
    # Not denied: it goes on to the usual question (an argument only known when the shell runs).
    assert agent.trace[0].decision.behavior == "allow" and agent.trace[0].decision.source == "person"


# --- which command lines name a denied file (the tool's own check, no runtime) -----------------


def make_ctx(cwd: Path, deny=("**/.env", "secrets/**")) -> ToolContext:
    return ToolContext(cwd=cwd, read_state=ReadState(), read_deny=tuple(deny))


async def verdict(ctx: ToolContext, command: str):
    return await BashTool().check_permissions(BashInput(command=command), ctx)


@pytest.mark.parametrize(
    "command",
    [
        "cat ./secrets/key.pem",
        "head -n 3 secrets/key.pem",
        "less /{tree}/.env",
        "wc -l < .env",
        "cat secrets/*",  # the glob is expanded as the shell would
        "source .env",
        "grep -e KEY .env",
        "grep -ie key .env",  # -e in a cluster: `key` is the pattern, .env a file
        "rg --file=.env README.md",
        "sort --output=/dev/null --files0-from=.env",
        "cat README.md | cat - .env",
        "cp secrets/key.pem /tmp/k",  # not read-only: refused all the same, before any prompt
        "cat $(echo .env)",  # a hidden command: every word of the line is checked
        "x=`cat app/.env`; echo $x",
        "cat .env 'unclosed",  # does not parse: a plain word split still finds it
        "env cat .env",
        "timeout 5 cat .env",
        "python3 -c 'print(1)' --config=secrets/key.pem",
        # review 3: the secret through xargs, git's REV:path, ANSI-C quoting, wrappers, globs
        "echo .env | xargs cat",
        "printf '%s\\n' app/.env | xargs -n1 cat",
        "git show HEAD:.env",
        "git cat-file -p HEAD:app/.env",
        "git show :0:.env",
        "cat $'.env'",
        "cat $'\\x2eenv'",
        "command cat .env",
        "sudo -u root cat .env",
        "cat */.env",  # a glob at the start of the word is still expanded and checked
        "grep $PATTERN .env",  # an unknown pattern is still the pattern: .env is the file
        'cat "$DIR"/.env',  # whatever $DIR is, the file is a .env
        "cat .e{{n,x}}v",  # brace lists are expanded (doubled for str.format)
    ],
)
async def test_refused(tree, command):
    command = command.format(tree=tree.as_posix().lstrip("/"))
    check = await verdict(make_ctx(tree), command)
    assert check.behavior == "deny", command
    assert "ask the person" in check.message


@pytest.mark.parametrize(
    "command",
    [
        "cat README.md",
        "grep .env README.md",  # the first operand of grep is a pattern
        "sed -n /.env/p README.md",
        "echo .env >> .gitignore",
        "printf '%s\\n' secrets/key.pem",
        "ls -la",
        "git status",
        "cat app/secrets.txt",
        "cat env",
    ],
)
async def test_not_refused(tree, command):
    assert (await verdict(make_ctx(tree), command)).behavior != "deny", command


@pytest.mark.parametrize(
    ("command", "words"),
    [
        ("cat $NAME", "'$NAME' is only known when the shell runs"),
        ('cp "$F" /tmp/copy', "'\"$F\"' is only known"),
        ("find . -type f | xargs cat", "xargs"),
    ],
)
async def test_a_path_nobody_can_name_before_it_runs_is_asked_about(tree, command, words):
    check = await verdict(make_ctx(tree), command)
    assert check.behavior == "ask" and words in check.message and "Read rule" in check.message


async def test_a_symlink_to_a_denied_file_is_refused(tree):
    (tree / "harmless.txt").symlink_to(tree / ".env")
    check = await verdict(make_ctx(tree), "cat harmless.txt")
    assert check.behavior == "deny" and "Read(**/.env)" in check.message


async def test_a_symlink_among_many_words_of_one_directory_is_refused(tree):
    # Many words naming one directory: it is listed once instead of lstat-ing each word, and the
    # link among them is still followed; plain words, `./` and `..` spellings of it too.
    logs = tree / "logs"
    logs.mkdir()
    for i in range(40):
        (logs / f"day{i:02d}.log").write_text("ok\n")
    (logs / "day17.log").unlink()
    (logs / "day17.log").symlink_to(tree / "secrets" / "key.pem")
    names = " ".join(f"logs/day{i:02d}.log" for i in range(40))
    for spelling in ("logs/day17.log", "./logs/day17.log", "logs/../logs/day17.log", "logs//day17.log"):
        check = await verdict(make_ctx(tree), f"head -n 1 {names.replace('logs/day17.log', spelling)}")
        assert check.behavior == "deny" and "Read(secrets/**)" in check.message, spelling
    check = await verdict(make_ctx(tree), f"head -n 1 {names.replace('logs/day17.log', 'logs/day18.log')}")
    assert check.behavior != "deny"
    # Words in a directory that does not exist name no file, links included.
    missing = " ".join(f"gone/f{i}.txt" for i in range(20))
    assert (await verdict(make_ctx(tree), f"cat {missing}")).behavior != "deny"


async def test_no_deny_rules_no_refusal(tree):
    assert (await verdict(make_ctx(tree, deny=()), "cat .env")).behavior == "allow"
