"""Spilled results go away: on reset, when the process exits, and by age for dead sessions.

Judged from the files on disk, in this process and in real child processes (a session that
ends, a session that starts after a dead one)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest
from pydantic import BaseModel

from ipy_agent import Agent, ScriptedModel, build_tool
from ipy_agent.loop.spill import ROOT_NAME
from tests.support.transcript import results_of, use

PROJECT = Path(__file__).resolve().parents[2]


class Size(BaseModel):
    n: int


BIG = build_tool(
    name="Big",
    input_model=Size,
    description="d",
    call=lambda s, c: "x" * s.n,
    is_read_only=True,
    max_result_chars=1_000,
)


def _spilled_path(message: dict) -> Path:
    content = next(iter(results_of(message).values()))["content"]
    return Path(re.search(r"saved to: (\S+)", content).group(1))


def test_reset_removes_the_conversations_spilled_results(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    agent = Agent(model=ScriptedModel([[use("Big", "t1", n=5_000)], "done"]), tools=[BIG], cwd=tmp_path)
    agent.run("go")
    spilled = _spilled_path(agent.messages[2])
    assert spilled.read_text() == "x" * 5_000
    assert spilled.parent.parent == tmp_path / ROOT_NAME and spilled.parent.name.startswith(f"{os.getpid()}-")

    agent.reset()
    assert not spilled.parent.exists()
    # The conversation goes on spilling after a reset.
    agent.model = ScriptedModel([[use("Big", "t2", n=3_000)], "done"])
    agent.run("again")
    assert _spilled_path(agent.messages[2]).read_text() == "x" * 3_000


def test_a_spill_directory_the_person_chose_is_left_alone(tmp_path):
    chosen = tmp_path / "mine"
    agent = Agent(
        model=ScriptedModel([[use("Big", "t1", n=5_000)], "done"]), tools=[BIG], cwd=tmp_path, spill_dir=chosen
    )
    agent.run("go")
    (chosen / "notes.txt").write_text("keep me")
    agent.reset()
    assert (chosen / "notes.txt").read_text() == "keep me" and (chosen / "t1.txt").exists()


def _session(tmp_path: Path, code: str) -> str:
    """Run `code` in a fresh Python process whose temp dir is `tmp_path`; its stdout."""
    env = {**os.environ, "TMPDIR": str(tmp_path), "PYTHONPATH": str(PROJECT)}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


SESSION = """
    from ipy_agent import Agent, ScriptedModel, build_tool
    from pydantic import BaseModel

    class Size(BaseModel):
        n: int

    big = build_tool(name="Big", input_model=Size, description="d", call=lambda s, c: "x" * s.n, is_read_only=True,
                     max_result_chars=1_000)
    turn = [{"type": "tool_use", "id": "t1", "name": "Big", "input": {"n": 5000}}]
    agent = Agent(model=ScriptedModel([turn, "done"]), tools=[big], cwd=".")
    agent.run("go")
    spilled = agent.spill_dir / "t1.txt"
    assert spilled.read_text() == "x" * 5000
    print(spilled)
"""


def test_a_session_that_exits_removes_its_spilled_results(tmp_path):
    spilled = Path(_session(tmp_path, SESSION).strip())
    assert spilled.parent.parent == tmp_path / ROOT_NAME
    assert not spilled.parent.exists() and (tmp_path / ROOT_NAME).is_dir()


def test_a_new_session_removes_what_dead_sessions_left_behind(tmp_path):
    root = tmp_path / ROOT_NAME
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(dead.stdout)
    hour_ago = time.time() - 2 * 3600

    def left(name: str, *, old: bool) -> Path:
        d = root / name
        d.mkdir(parents=True)
        (d / "t9.txt").write_text("old result")
        if old:
            os.utime(d, (hour_ago, hour_ago))
        return d

    stale = left(f"{dead_pid}-abc123", old=True)
    recent = left(f"{dead_pid}-def456", old=False)  # its session may have just ended: give it time
    living = left(f"{os.getpid()}-0a1b2c", old=True)  # this test's process is alive
    other = left("not-a-session", old=True)

    _session(tmp_path, SESSION)
    assert not stale.exists()
    assert all((d / "t9.txt").read_text() == "old result" for d in (recent, living, other))


@pytest.mark.parametrize("defended", [True, False], ids=["defended", "control"])
def test_a_spill_folder_another_user_made_first_is_not_used(tmp_path, monkeypatch, defended):
    """On a shared machine another user can make the folder first; results (which may hold
    anything) must not land where that user can read or replace them."""
    from ipy_agent.loop import spill

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    planted = tmp_path / ROOT_NAME
    planted.mkdir(mode=0o777)
    planted.chmod(0o777)  # someone else's, open to all (the umask took nothing away)
    if not defended:
        monkeypatch.setattr(spill, "_yours", lambda folder: True)
    agent = Agent(model=ScriptedModel([[use("Big", "t1", n=5_000)], "done"]), tools=[BIG], cwd=tmp_path)
    agent.run("go")
    spilled = _spilled_path(agent.messages[2])
    assert spilled.read_text() == "x" * 5_000
    assert (spilled.parent.parent == planted) is not defended
    if defended:
        assert spilled.parent.parent.stat().st_mode & 0o077 == 0
