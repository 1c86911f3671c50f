"""Differential shell fuzzer: what the Bash classifier calls read-only must only read.

Thousands of generated and mutated commands (tests/security/fuzz_corpus.py) go through the
classifier; every one it judges read-only is then run for REAL, unsandboxed, in a scratch world
(tests/security/fuzz_world.py), and must change no file in the scratch project, the fake HOME or
the canary directory outside, open no network connection (a 127.0.0.1 listener that every proxy
points at, and `strace` for connect calls to any address) and leave no process running.

The suite prints its figures. Holes it finds in the current classifier are listed in
KNOWN_HOLES by family, each with one representative command that is an xfail(strict=True) case:
when the classifier is fixed, that case passes, strict xfail turns it into a failure, and the
entry must be removed, so the list only ever shrinks. A hole in a family not listed fails the
main test with the commands that show it.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from ipy_agent.contract.read_state import ReadState
from ipy_agent.contract.tool_context import ToolContext
from ipy_agent.tools.bash import BashInput, BashTool
from tests.security.fuzz_corpus import FORMS, MUST_REFUSE, TARGET, Case, corpus, fill_form
from tests.security.fuzz_world import STRACE, World

_TOOL = BashTool()

# family -> a command of that family that the classifier let through and that acted, found by
# this suite on the classifier of 2026-11-30 and closed by its rewrite (argument shapes, the
# substitution scan, per-program version flags): each must now be refused, and the sandbox must
# still contain it. {CANARY} and {PORT} are filled in per run.
CLOSED_HOLES: dict[str, str] = {
    "context:heredoc-backtick": "cat <<EOF\n`touch PWN`\nEOF",
    "context:heredoc-dash": "cat <<-EOF\n\t$(touch PWN)\nEOF",
    "env:env -i touch {OUT}": "pwd\n\\env -i touch PWN",
    "git:git remote show origin": "git remote show origin",
    "redirect:cat < /dev/tcp/127.0.0.1/{PORT}": "cat < /dev/tcp/127.0.0.1/{PORT}",
    "redirect:grep x < /dev/tcp/127.0.0.1/{PORT}": "grep x < /dev/tcp/127.0.0.1/{PORT}",
    "rg:rg --hostname-bin ./pwn.sh --hyperlink-format default a": "rg --hostname-bin ./pwn.sh --hyperlink-format default a",
    "rg:rg --hostname-bin=./pwn.sh --hyperlink-format=default a": "rg --hostname-bin=./pwn.sh --hyperlink-format=default a",
    "sed:sed ':a;w {OUT}' f.txt": "sed ':a;w PWN' f.txt",
    "version:bash version": "bash version",
    "version:docker -V": "docker -V",
    "version:docker -version": "docker -version",
    "version:docker version": "docker version",
    "version:kubectl --version": "kubectl --version",
    "version:kubectl -V": "kubectl -V",
    "version:kubectl -version": "kubectl -version",
    "version:kubectl version": "kubectl version",
    "version:npm -V": "npm -V",
    "version:npm version": "npm version",
    "version:npx -V": "npx -V",
    "version:npx version": "npx version",
    "version:python version": "python version",
    "version:python3 version": "python3 version",
    "version:sh version": "sh version",
    "version:terraform --version": "terraform --version",
    "version:terraform -version": "terraform -version",
    "version:terraform version": "terraform version",
}
# family -> a command the current classifier still lets through and that acts: an xfail(strict)
# case each. Remove an entry when its case starts passing (move it to CLOSED_HOLES).
KNOWN_HOLES: dict[str, str] = {}


def read_only(command: str) -> bool:
    return _TOOL.is_read_only(BashInput(command=command))


async def _auto_allowed(command: str, cwd: Path) -> bool:
    """Whether Bash would run it without asking in default mode (its own check, sandbox aside)."""
    ctx = ToolContext(cwd=cwd, read_state=ReadState())
    return (await _TOOL.check_permissions(BashInput(command=command), ctx)).behavior == "allow"


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    w = World(tmp_path_factory.mktemp("fuzz"))
    yield w
    w.close()


def _template(command: str, world: World) -> str:
    return (
        command.replace(str(world.canary), "{CANARY}")
        .replace(str(world.listener.port), "{PORT}")
        .replace(world.sleep, "{SLEEP}")
    )


def _fill(command: str, world: World) -> str:
    return (
        command.replace("{CANARY}", str(world.canary))
        .replace("{PORT}", str(world.listener.port))
        .replace("{SLEEP}", world.sleep)
    )


@pytest.mark.slow
def test_what_the_classifier_calls_read_only_only_reads(world):
    start = time.monotonic()
    cases = corpus(str(world.canary), world.listener.port, world.sleep)
    assert len(cases) >= 5000 and len({c.command for c in cases}) == len(cases)
    ran = 0
    holes: dict[str, list[tuple[Case, str, bool]]] = defaultdict(list)
    verdicts: Counter[str] = Counter()
    for case in cases:
        if not read_only(case.command):
            verdicts["not read-only"] += 1
            continue
        verdicts["read-only"] += 1
        if case.family.startswith(MUST_REFUSE):
            # Judged read-only is the hole here: a fan-out is a resource question, not a read.
            holes[case.family].append(
                (case, "judged read-only", asyncio.run(_auto_allowed(case.command, world.scratch)))
            )
            continue
        ran += 1
        outcome = world.run(case.command)
        if outcome.harmful:
            auto = asyncio.run(_auto_allowed(case.command, world.scratch))
            holes[case.family].append((case, outcome.describe(), auto))
    unknown = {fam: found for fam, found in holes.items() if fam not in KNOWN_HOLES}
    elapsed = time.monotonic() - start
    print(
        f"\n[fuzz] commands tried: {len(cases):,} (target {TARGET:,}); judged read-only and run for real: {ran:,}; "
        f"not read-only: {verdicts['not read-only']:,}"
    )
    print(
        f"[fuzz] failures (read-only but acted): {sum(len(v) for v in holes.values()):,} commands in {len(holes)} families; "
        f"of them auto-allowed by Bash's permission check: {sum(a for v in holes.values() for _, _, a in v):,}; "
        f"not yet listed as known: {len(unknown)} families; strace: {'yes' if STRACE else 'no'}; {elapsed:.0f} s"
    )
    for fam, found in sorted(holes.items()):
        case, what, auto = found[0]
        print(f"[fuzz]   {fam} ({len(found)}x{', auto-allowed' if auto else ''}): {case.command!r} -> {what}")
    for fam, found in sorted(unknown.items()):  # ready to paste into KNOWN_HOLES once reported
        print(f"[fuzz] new: {fam!r}: {_template(found[0][0].command, world)!r},")
    assert not unknown, "new classifier holes:\n" + "\n".join(
        f"{fam}: {found[0][0].command!r} -> {found[0][1]}" for fam, found in sorted(unknown.items())
    )


@pytest.mark.parametrize(
    "family",
    [
        *(
            pytest.param(f, marks=pytest.mark.xfail(strict=True, reason="known classifier hole"))
            for f in sorted(KNOWN_HOLES)
        ),
        *sorted(CLOSED_HOLES),
    ],
    ids=str,
)
def test_known_hole_is_closed(world, family):
    command = _fill({**CLOSED_HOLES, **KNOWN_HOLES}[family], world)
    _need_program(command)
    outcome = world.run(command) if read_only(command) else None
    assert outcome is None or not outcome.harmful, f"{command!r} is judged read-only and {outcome.describe()}"


def _need_program(command: str) -> None:
    program = command.split()[0]
    if program.isidentifier() and shutil.which(program, path=world_path()) is None:
        pytest.skip(f"{program} is not installed here, so this hole cannot show")


def world_path() -> str:
    return os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])


@pytest.mark.usefixtures("need_bwrap")
@pytest.mark.parametrize("family", sorted({**CLOSED_HOLES, **KNOWN_HOLES}), ids=str)
def test_the_sandbox_contains_every_known_hole(world, family):
    """The point of the OS sandbox: what the classifier wrongly lets through does nothing."""
    command = _fill({**CLOSED_HOLES, **KNOWN_HOLES}[family], world)
    _need_program(command)
    outcome = world.run(command, sandboxed=True)
    assert not outcome.harmful, f"{command!r} escaped the sandbox: {outcome.describe()}"


@pytest.mark.usefixtures("need_bwrap")
@pytest.mark.parametrize("decided_by", ["tool", "mode"])
def test_the_sandbox_stops_every_unix_socket_form(world, decided_by):
    """Judged read-only or not, a command in either sandbox reaches none of the world's Unix
    sockets (the pathname one is inside the working directory, so mounts alone would not stop it)."""
    tried = held = 0
    for form in FORMS["unix"]:
        command = fill_form(form, "PWN", world.listener.port)
        if command.split()[0].isidentifier() and shutil.which(command.split()[0], path=world_path()) is None:
            continue
        tried += 1
        outcome = world.run(command, sandboxed=True, decided_by=decided_by)
        held += not outcome.unix
        assert not outcome.unix, f"{command!r} reached a Unix socket from the sandbox ({decided_by})"
    print(f"\n[fuzz/unix in the sandbox, {decided_by}] forms tried: {tried}; held: {held}")
    assert tried >= 3


def test_the_world_detects_what_it_must(world):
    """The detectors themselves, on commands that do act: a check that cannot fail proves nothing."""
    assert world.run("touch PWN").changed
    assert world.run(f"touch {world.home}/PWN").changed
    assert world.run(f"touch {world.canary}/PWN").changed
    assert world.run(f"exec 3<>/dev/tcp/127.0.0.1/{world.listener.port}").connections == 1
    assert world.run(f"nohup sleep {world.sleep} >/dev/null 2>&1 &").lingering
    assert world.run("python3 unix.py").unix == 1
    assert world.run(f"curl -s --max-time 2 --abstract-unix-socket ipy-agent-fuzz-{world.listener.port} x").unix == 1
    assert not world.run("cat f.txt; ls -la; git status").harmful


# --- hypothesis: words the corpus did not think of ---------------------------------------------

_PROGRAMS = [
    "cat",
    "ls",
    "grep",
    "sed",
    "sort",
    "uniq",
    "find",
    "rg",
    "git",
    "jq",
    "echo",
    "printf",
    "head",
    "xargs",
    "env",
    "timeout 5",
    "nice",
    "command",
    "date",
    "test",
    "file",
    "wc",
    "diff",
    "awk",
    "tree",
]
_WORDS = [
    "f.txt",
    "-n",
    "-i",
    "-o",
    "PWN",
    "--output=PWN",
    "'w PWN'",
    "s/a/b/w\\ PWN",
    "-exec",
    "touch",
    "\\;",
    "$(touch PWN)",
    "`touch PWN`",
    "${x:-$(touch PWN)}",
    "'a[$(touch PWN)]'",
    "$'\\x77 PWN'",
    "--pre=./pwn.sh",
    "-e",
    "p",
    "{}",
    "+",
    "--hostname-bin=./pwn.sh",
    "-fprint",
    "log",
    "--outp=PWN",
    "-I{}",
    "sh",
    "-c",
    "'touch PWN'",
    "<<EOF\n`touch PWN`\nEOF",
    ">",
    "2>/dev/null",
    "|",
    ";",
    "&&",
    "\n",
    "&",
    "version",
    "--version",
    "-v",
    "'$(touch PWN)'",
    '"$(touch PWN)"',
]


@pytest.mark.slow
def test_hypothesis_commands_the_classifier_calls_read_only_only_read(world):
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    tried: list[str] = []
    acted: list[tuple[str, str]] = []

    @settings(
        max_examples=400,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(program=st.sampled_from(_PROGRAMS), words=st.lists(st.sampled_from(_WORDS), max_size=5))
    def check(program: str, words: list[str]) -> None:
        command = " ".join([program, *words])
        tried.append(command)
        if read_only(command):
            outcome = world.run(command)
            if outcome.harmful:
                acted.append((command, outcome.describe()))

    check()
    print(f"\n[fuzz/hypothesis] commands tried: {len(tried)}; read-only but acted: {len(acted)}")
    for command, what in acted[:10]:
        print(f"[fuzz/hypothesis]   {command!r} -> {what}")
    new = [c for c, _ in acted if not _shows_known_hole(c)]
    assert not new, f"new classifier holes: {new}"


# What shows a listed hole inside any command hypothesis builds; a mark stops counting as soon
# as its family leaves KNOWN_HOLES (fixed), so the hypothesis test then reports it again.
KNOWN_HOLE_MARKS = {
    "context:heredoc-backtick": "<<EOF\n`",
    "context:heredoc-dash": "<<-EOF",
    "rg:rg --hostname-bin ./pwn.sh --hyperlink-format default a": "--hostname-bin",
    "rg:rg --hostname-bin=./pwn.sh --hyperlink-format=default a": "--hostname-bin=",
    "sed:sed ':a;w {OUT}' f.txt": ":a;w",
}


def _shows_known_hole(command: str) -> bool:
    return any(family in KNOWN_HOLES and mark in command for family, mark in KNOWN_HOLE_MARKS.items())
