"""Everyday read-only commands run without asking: at least 95% of the usability corpus.

Strictness is easy to get by asking about everything; the point of the classifier is to be
strict about what can write, run or connect, and out of the way otherwise. The test prints the
share and the commands that asked, so a change that makes the classifier stricter shows its cost.
"""

from __future__ import annotations

import asyncio

import pytest

from ipy_agent.tools.bash import toolchain
from tests.support.bash import decision, project
from tests.support.toolchain import LAYOUTS, fake_home
from tests.support.tools import tool_ctx
from tests.tools.bash.corpus import WRITES
from tests.tools.bash.usability_corpus import EVERYDAY

TARGET = 0.95
# The kernel's own environment, and a HOME whose Python comes from pyenv shims or a conda prefix
# (`tests/support/toolchain.py`): the sandbox must show the person's toolchain under HOME.
HOMES = ("as-is", *LAYOUTS)


@pytest.fixture(params=HOMES)
def home(request, tmp_path, monkeypatch):
    """HOME and PATH as the kernel has them, or a fake HOME with one toolchain."""
    if request.param != "as-is":
        for key, value in fake_home(tmp_path / "laptop", request.param).items():
            if value:
                monkeypatch.setenv(key, value)
            else:
                monkeypatch.delenv(key, raising=False)
    toolchain.refresh()
    yield request.param
    toolchain.refresh()


def test_the_corpus_is_large_and_has_no_duplicates():
    assert len(EVERYDAY) >= 200
    assert len(set(EVERYDAY)) == len(EVERYDAY)
    assert not set(EVERYDAY) & set(WRITES)


def test_everyday_read_only_commands_run_without_asking(tmp_path, capsys, home):
    cwd = project(tmp_path)
    asked = []
    for command in EVERYDAY:
        d = decision(command, cwd)
        if d.behavior != "allow":
            asked.append(f"{command!r}: {d.behavior}, {d.reason}")
    share = 1 - len(asked) / len(EVERYDAY)
    with capsys.disabled():
        print(
            f"\nusability corpus ({home} HOME): {len(EVERYDAY) - len(asked)}/{len(EVERYDAY)} everyday commands "
            f"run without asking ({share:.1%}; target {TARGET:.0%})"
        )
        for line in asked:
            print(f"  asks: {line}")
    assert share >= TARGET, "\n".join(asked)


@pytest.mark.slow
@pytest.mark.usefixtures("need_bwrap")
def test_everyday_commands_work_the_same_in_the_sandbox(tmp_path, capsys, home):
    """Masks, the seccomp filter and the limits must not break what runs unasked: each everyday
    command that runs without asking ends the same way (exit status) in the read-only sandbox,
    with Read deny rules in force so masks are made, as outside it. Output may differ where it
    shows the machine (process lists, sizes, times); how many outputs are the same is printed.
    With a fake HOME, Python and pip come from its pyenv shims or conda prefix, inside as outside."""
    import subprocess

    cwd = project(tmp_path / "p")
    (cwd / ".env").write_text("SECRET=1\n")
    (cwd / ".gitignore").write_text(".env\n")
    git = ["git", "-c", "user.email=a@b", "-c", "user.name=a", "-c", "init.defaultBranch=main"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "first"]):
        subprocess.run([*git, *args], cwd=cwd, check=True, capture_output=True)
    rules = ("**/.env", "~/.ssh/**", "~/.aws/**")
    same_status, same_output, differ = 0, 0, []
    ran = [c for c in EVERYDAY if decision(c, cwd, read_deny=rules).behavior == "allow"]
    for command in ran:
        outside = asyncio.run(_run(command, cwd, "person", rules))
        inside = asyncio.run(_run(command, cwd, "tool", rules))
        same_output += outside.output == inside.output
        if outside.exit_code == inside.exit_code and not any("[sandbox]" in n for n in inside.notes):
            same_status += 1
        else:
            differ.append(
                f"{command!r}: outside {outside.exit_code} {outside.output[:80]!r}, "
                f"inside {inside.exit_code} {inside.output[:120]!r}"
            )
    with capsys.disabled():
        print(
            f"\nusability in the sandbox ({home} HOME): {same_status}/{len(ran)} everyday commands end the same sandboxed "
            f"({same_status / len(ran):.1%}; target {TARGET:.0%}); same output: {same_output}/{len(ran)}"
        )
        for line in differ:
            print(f"  differs: {line}")
    assert same_status / len(ran) >= TARGET, "\n".join(differ)
    # Python and pip are the person's own toolchain: each of those ends the same, without exception.
    assert not [line for line in differ if line.startswith(("'python", "'pip"))], "\n".join(differ)


async def _run(command: str, cwd, decided_by: str, rules: tuple[str, ...]):
    from ipy_agent.tools.bash import BashInput, BashTool

    ctx = tool_ctx(cwd, decided_by=decided_by, read_deny=rules, spill_dir=cwd.parent / "spill")
    return await BashTool().call(BashInput(command=command, timeout=20_000), ctx, ctx.decision)
