"""Everyday read-only commands run without asking: at least 95% of the usability corpus.

Strictness is easy to get by asking about everything; the point of the classifier is to be
strict about what can write, run or connect, and out of the way otherwise. The test prints the
share and the commands that asked, so a change that makes the classifier stricter shows its cost.
"""

from __future__ import annotations

from tests.support.bash import decision, project
from tests.tools.bash.corpus import WRITES
from tests.tools.bash.usability_corpus import EVERYDAY

TARGET = 0.95


def test_the_corpus_is_large_and_has_no_duplicates():
    assert len(EVERYDAY) >= 200
    assert len(set(EVERYDAY)) == len(EVERYDAY)
    assert not set(EVERYDAY) & set(WRITES)


def test_everyday_read_only_commands_run_without_asking(tmp_path, capsys):
    cwd = project(tmp_path)
    asked = []
    for command in EVERYDAY:
        d = decision(command, cwd)
        if d.behavior != "allow":
            asked.append(f"{command!r}: {d.behavior}, {d.reason}")
    share = 1 - len(asked) / len(EVERYDAY)
    with capsys.disabled():
        print(
            f"\nusability corpus: {len(EVERYDAY) - len(asked)}/{len(EVERYDAY)} everyday commands run without "
            f"asking ({share:.1%}; target {TARGET:.0%})"
        )
        for line in asked:
            print(f"  asks: {line}")
    assert share >= TARGET, "\n".join(asked)
