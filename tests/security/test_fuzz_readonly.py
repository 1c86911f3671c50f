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
import time
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from ipy_agent.runtime.read_state import ReadState
from ipy_agent.runtime.tool import ToolContext
from ipy_agent.tools.bash import BashInput, BashTool
from tests.security.fuzz_corpus import TARGET, Case, corpus
from tests.security.fuzz_world import STRACE, World

_TOOL = BashTool()

# family -> a command of that family that the current classifier lets through and that acts.
# {CANARY} and {PORT} are filled in per run. Remove an entry when its xfail case starts passing.
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
    return command.replace(str(world.canary), "{CANARY}").replace(str(world.listener.port), "{PORT}")


def _fill(command: str, world: World) -> str:
    return command.replace("{CANARY}", str(world.canary)).replace("{PORT}", str(world.listener.port))


@pytest.mark.slow
def test_what_the_classifier_calls_read_only_only_reads(world):
    start = time.monotonic()
    cases = corpus(str(world.canary), world.listener.port)
    assert len(cases) >= 5000 and len({c.command for c in cases}) == len(cases)
    ran = 0
    holes: dict[str, list[tuple[Case, str, bool]]] = defaultdict(list)
    verdicts: Counter[str] = Counter()
    for case in cases:
        if not read_only(case.command):
            verdicts["not read-only"] += 1
            continue
        verdicts["read-only"] += 1
        ran += 1
        outcome = world.run(case.command)
        if outcome.harmful:
            auto = asyncio.run(_auto_allowed(case.command, world.scratch))
            holes[case.family].append((case, outcome.describe(), auto))
    unknown = {fam: found for fam, found in holes.items() if fam not in KNOWN_HOLES}
    elapsed = time.monotonic() - start
    print(f"\n[fuzz] commands tried: {len(cases):,} (target {TARGET:,}); judged read-only and run for real: {ran:,}; "
          f"not read-only: {verdicts['not read-only']:,}")
    print(f"[fuzz] failures (read-only but acted): {sum(len(v) for v in holes.values()):,} commands in {len(holes)} families; "
          f"of them auto-allowed by Bash's permission check: {sum(a for v in holes.values() for _, _, a in v):,}; "
          f"not yet listed as known: {len(unknown)} families; strace: {'yes' if STRACE else 'no'}; {elapsed:.0f} s")
    for fam, found in sorted(holes.items()):
        case, what, auto = found[0]
        print(f"[fuzz]   {fam} ({len(found)}x{', auto-allowed' if auto else ''}): {case.command!r} -> {what}")
    for fam, found in sorted(unknown.items()):  # ready to paste into KNOWN_HOLES once reported
        print(f"[fuzz] new: {fam!r}: {_template(found[0][0].command, world)!r},")
    assert not unknown, "new classifier holes:\n" + "\n".join(
        f"{fam}: {found[0][0].command!r} -> {found[0][1]}" for fam, found in sorted(unknown.items()))


@pytest.mark.parametrize("family", [pytest.param(f, marks=pytest.mark.xfail(strict=True, reason="known classifier hole"))
                                    for f in sorted(KNOWN_HOLES)], ids=str)
def test_known_hole_is_closed(world, family):
    command = _fill(KNOWN_HOLES[family], world)
    outcome = world.run(command) if read_only(command) else None
    assert outcome is None or not outcome.harmful, f"{command!r} is judged read-only and {outcome.describe()}"


def test_the_world_detects_what_it_must(world):
    """The detectors themselves, on commands that do act: a check that cannot fail proves nothing."""
    assert world.run("touch PWN").changed
    assert world.run(f"touch {world.home}/PWN").changed
    assert world.run(f"touch {world.canary}/PWN").changed
    assert world.run(f"exec 3<>/dev/tcp/127.0.0.1/{world.listener.port}").connections == 1
    assert world.run("nohup sleep 97.25 >/dev/null 2>&1 &").lingering
    assert not world.run("cat f.txt; ls -la; git status").harmful
