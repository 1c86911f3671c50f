"""Terminal IPython: the input() approver, Ctrl-C, text rows; and the non-interactive approvers."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import threading

import pytest

from ipy_agent.history.messages import history_problems
from ipy_agent.permissions.decide import PermissionAnswer, PermissionRequest
from ipy_agent.ui.approver import NonInteractiveApprover, with_timeout
from tests.support.transcript import result_text, results_sent, use


class Answers:
    """Stands in for builtins.input: replays answers, records the questions."""

    def __init__(self, *answers: object) -> None:
        self.answers = list(answers)
        self.questions: list[str] = []

    def __call__(self, prompt: str = "") -> str:
        self.questions.append(prompt)
        answer = self.answers.pop(0)
        if isinstance(answer, BaseException) or (isinstance(answer, type) and issubclass(answer, BaseException)):
            raise answer  # type: ignore[misc]
        return str(answer)


@pytest.fixture
def edit_run(shell, magics, script, tmp_path, monkeypatch):
    """Run a read-then-edit (or two edits) transcript with scripted answers at the prompt."""

    def run(*answers: object, edits: int = 1) -> Answers:
        (tmp_path / "a.txt").write_text("one\ntwo\n")
        fake = Answers(*answers)
        monkeypatch.setattr("builtins.input", fake)
        turns = [
            [use("Read", "r1", file_path="a.txt")],
            [use("Edit", "e1", file_path="a.txt", old_string="one", new_string="ONE")],
        ]
        if edits == 2:
            turns.append([use("Edit", "e2", file_path="a.txt", old_string="two", new_string="TWO")])
        shell.run_line_magic("agent", f"--script {script(*turns, 'finished')} edit it")
        return fake

    return run


def test_yes_edits_after_showing_the_diff(edit_run, tmp_path, capsys):
    fake = edit_run("y")
    assert (tmp_path / "a.txt").read_text() == "ONE\ntwo\n"
    assert fake.questions == ["Allow? [y]es / [a]lways allow Edit(./*.txt) / [n]o: "]
    out = capsys.readouterr().out
    prompt = out[out.index("? Edit") :]
    assert "-one" in prompt and "+ONE" in prompt and "(+1 -1)" in prompt
    assert "✓ Edit a.txt" in out


def test_always_adds_the_rule_and_is_not_asked_again(edit_run, magics, tmp_path):
    fake = edit_run("a", edits=2)
    assert (tmp_path / "a.txt").read_text() == "ONE\nTWO\n"
    assert len(fake.questions) == 1
    assert [(r.text, r.source) for r in magics.session.agent.rules.allow] == [("Edit(./*.txt)", "granted")]


def test_no_with_a_reason_reaches_the_model(edit_run, magics, tmp_path, capsys):
    fake = edit_run("n", "keep the lowercase, rename the file instead")
    assert (tmp_path / "a.txt").read_text() == "one\ntwo\n"
    assert fake.questions[1].startswith("Reason")
    sent = result_text(results_sent(magics.session.agent.model, 2)["e1"])
    assert "keep the lowercase, rename the file instead" in sent
    assert "⊘ Edit a.txt — denied" in capsys.readouterr().out


@pytest.mark.parametrize("answers", [(EOFError,), ("",), ("n", EOFError)])
def test_eof_or_empty_denies(edit_run, magics, tmp_path, answers):
    fake = edit_run(*answers)
    assert (tmp_path / "a.txt").read_text() == "one\ntwo\n"
    assert results_sent(magics.session.agent.model, 2)["e1"]["is_error"] is True
    assert len(fake.questions) == len(answers)


def test_unclear_answer_is_asked_again(edit_run, tmp_path, capsys):
    fake = edit_run("maybe", "yes")
    assert len(fake.questions) == 2
    assert (tmp_path / "a.txt").read_text() == "ONE\ntwo\n"
    assert "Please answer y, a or n (not 'maybe')" in capsys.readouterr().out


def test_ctrl_c_at_the_prompt_interrupts_with_a_valid_history(edit_run, magics, tmp_path):
    edit_run(KeyboardInterrupt)
    assert (tmp_path / "a.txt").read_text() == "one\ntwo\n"
    assert magics.session.last_result.stop_reason == "interrupted"
    assert history_problems(magics.session.agent.messages) == []
    assert len(magics.session.agent.model.requests) == 2  # the model was not asked again


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="needs the main thread")
def test_ctrl_c_during_a_tool_interrupts_with_a_valid_history(shell, magics, script, tmp_path):
    """Ctrl-C comes while the command runs: the command itself says it has started (it writes to a
    FIFO that a thread waits on), and only then does the thread send SIGINT."""
    started = tmp_path / "started"
    os.mkfifo(started)
    command = "echo started > started; sleep 30"
    path = script([use("Bash", "b1", command=command, description="wait")], "never")
    heard: list[str] = []

    def interrupt_once_started() -> None:
        with open(started, encoding="utf-8") as fifo:  # blocks until the command opens it
            heard.append(fifo.read().strip())
        if heard == ["started"]:
            os.kill(os.getpid(), signal.SIGINT)

    waiter = threading.Thread(target=interrupt_once_started, daemon=True)
    waiter.start()
    try:
        shell.run_line_magic("agent", f"--allow Bash --script {path} wait")
    finally:
        if waiter.is_alive():  # the command never ran: release the thread without a signal
            heard.append("released")
            with contextlib.suppress(OSError):  # ENXIO: the thread stopped reading in the meantime
                os.close(os.open(started, os.O_WRONLY | os.O_NONBLOCK))
        waiter.join(timeout=10)
    assert heard == ["started"]
    assert magics.session.last_result.stop_reason == "interrupted"
    assert history_problems(magics.session.agent.messages) == []
    assert magics.session.agent.trace[0].status == "cancelled"


def test_noninteractive_env_denies_and_names_the_rule(shell, magics, script, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("IPY_AGENT_NONINTERACTIVE", "1")
    monkeypatch.setattr("builtins.input", Answers())  # any question would fail: no answers left
    (tmp_path / "a.txt").write_text("one\n")
    path = script(
        [use("Read", "r1", file_path="a.txt"), use("Glob", "g1", pattern="*.txt")],
        [use("Edit", "e1", file_path="a.txt", old_string="one", new_string="ONE")],
        "ok",
    )
    shell.run_line_magic("agent", f"--script {path} edit")
    assert (tmp_path / "a.txt").read_text() == "one\n"
    first = results_sent(magics.session.agent.model, 1)
    assert not first["r1"].get("is_error") and not first["g1"].get("is_error")  # read-only calls still run
    sent = result_text(results_sent(magics.session.agent.model, 2)["e1"])
    assert "non-interactive run (IPY_AGENT_NONINTERACTIVE is set)" in sent
    assert "%agent --allow 'Edit(./*.txt)'" in sent
    assert "⊘ Edit a.txt — denied" in capsys.readouterr().out


def test_noninteractive_approver_records_what_it_denied():
    approver = NonInteractiveApprover("widgets are switched off")
    request = PermissionRequest(
        tool_name="Bash", input={"command": "make"}, summary="make", suggested_rule="Bash(make:*)", tool_use_id="t1"
    )
    answer = approver(request)
    assert answer.behavior == "deny" and "'Bash(make:*)'" in answer.message
    assert "widgets are switched off" in answer.message
    assert approver.denied == [request]


async def test_approval_timeout_denies_with_a_note():
    asked = asyncio.Event()

    async def never(request: PermissionRequest) -> PermissionAnswer:
        asked.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    request = PermissionRequest(
        tool_name="Write", input={}, summary="new.py", suggested_rule="Edit(./*.py)", tool_use_id="t"
    )
    answer = await asyncio.wait_for(with_timeout(never, 0.05)(request), timeout=10)
    assert asked.is_set()
    assert answer.behavior == "deny" and "within 0.05 s" in answer.message and "Edit(./*.py)" in answer.message


async def test_approval_timeout_passes_a_timely_answer_and_none_means_no_wrapper():
    def quick(request: PermissionRequest) -> str:
        return "always"

    request = PermissionRequest(tool_name="Write", input={}, summary="", suggested_rule="Write", tool_use_id="t")
    assert await with_timeout(quick, 5)(request) == "always"
    assert with_timeout(quick, None) is quick
