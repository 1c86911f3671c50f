"""The Bash tool with real subprocesses: what the model reads back, what the person sees, and
that timeouts and interrupts leave no process behind."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from pydantic import ValidationError

from ipy_agent.tools.bash import BashInput, BashTool
from ipy_agent.tools.bash.process import OUTPUT_LIMIT
from tests.support.tools import DecidedContext, tool_ctx
from tests.support.transcript import all_results


def _ctx(tmp_path: Path, **kw) -> DecidedContext:
    kw.setdefault("spill_dir", tmp_path / "spill")
    # These calls test the mechanics of a command someone approved (unapproved ones are
    # sandboxed: tests/security/test_sandbox.py).
    kw.setdefault("decided_by", "person")
    return tool_ctx(tmp_path, tool_use_id="toolu_1", **kw)


async def _run(ctx: DecidedContext, command: str, **kw) -> tuple[dict, str]:
    tool = BashTool()
    out = await tool.call(BashInput(command=command, **kw), ctx, ctx.decision)
    return tool.map_result(out, "toolu_1"), tool.summarize_result(out)


def _alive(pid: int) -> bool:
    """Running, and not a zombie waiting for a parent that never reaps (PID 1 here may not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


async def _wait_for_file(path: Path) -> int:
    for _ in range(500):  # bound a hang: 10 s at most
        if path.exists() and path.read_text().strip():
            return int(path.read_text())
        await asyncio.sleep(0.02)
    pytest.fail(f"{path} never appeared")


# --- output and exit codes ------------------------------------------------------------------------


async def test_stdout_and_stderr_arrive_merged_in_order(tmp_path):
    block, summary = await _run(_ctx(tmp_path), "echo one; echo two >&2; echo three")
    assert block["content"] == "one\ntwo\nthree"
    assert not block.get("is_error")
    assert summary == "Exit 0, 3 lines"


async def test_non_zero_exit_is_an_error_with_the_code_and_output(tmp_path):
    block, summary = await _run(_ctx(tmp_path), "echo compiling; echo 'error: bad' >&2; exit 2")
    assert block["is_error"] is True
    assert block["content"] == "Exit code 2\ncompiling\nerror: bad"
    assert summary == "Exit 2, 2 lines"


async def test_false_is_an_error_even_though_it_exits_1(tmp_path):
    block, _ = await _run(_ctx(tmp_path), "false")
    assert block["is_error"] and block["content"] == "Exit code 1 (no output)"


@pytest.mark.parametrize(
    ("command", "meaning"),
    [
        ("grep nothing-here a.txt", "no line matched"),
        ("cat a.txt | grep -c zzz", "no line matched"),
        ("diff a.txt b.txt", "the inputs differ"),
        ("test -f missing", "the condition is false"),
        ("[ -d missing ]", "the condition is false"),
    ],
)
async def test_exit_1_of_search_and_compare_commands_is_an_answer(tmp_path, command, meaning):
    (tmp_path / "a.txt").write_text("alpha\n")
    (tmp_path / "b.txt").write_text("beta\n")
    block, summary = await _run(_ctx(tmp_path), command)
    assert not block.get("is_error")
    assert meaning in block["content"] and "not an error" in block["content"]
    assert summary.startswith("Exit 1,")


async def test_exit_1_after_a_writing_command_stays_an_error(tmp_path):
    # `touch x && grep`: the 1 may come from the first command, so it is not read as "no match".
    block, _ = await _run(_ctx(tmp_path), "touch made && grep nothing made")
    assert block["is_error"] and block["content"].startswith("Exit code 1")


async def test_empty_output_with_exit_0_is_empty_for_the_budget_placeholder(tmp_path):
    block, summary = await _run(_ctx(tmp_path), "true")
    assert block["content"] == ""
    assert summary == "Exit 0, 0 lines"


async def test_stdin_is_empty_so_reading_commands_do_not_wait(tmp_path):
    block, _ = await _run(_ctx(tmp_path), "cat; read line || echo 'no input'", timeout=20_000)
    assert block["content"] == "no input"


# --- long output -------------------------------------------------------------------------------


async def test_long_output_keeps_head_and_tail_and_saves_the_whole_text(tmp_path):
    ctx = _ctx(tmp_path)
    block, summary = await _run(ctx, "seq 1 200000")
    text = block["content"]
    assert len(text) <= OUTPUT_LIMIT
    assert text.startswith("1\n2\n3\n") and text.endswith("\n199999\n200000")
    assert "cut from the middle" in text and "100000\n" not in text
    spill = tmp_path / "spill" / "bash-toolu_1.txt"
    assert str(spill) in text
    assert spill.read_text() == "".join(f"{i}\n" for i in range(1, 200_001))
    assert summary == "Exit 0, 200000 lines"


async def test_long_output_without_a_spill_dir_says_it_was_not_saved(tmp_path):
    block, _ = await _run(_ctx(tmp_path, spill_dir=None), "seq 1 100000")
    assert len(block["content"]) <= OUTPUT_LIMIT
    assert "not saved" in block["content"]


async def test_output_just_under_the_limit_is_whole(tmp_path):
    block, _ = await _run(_ctx(tmp_path), f"head -c {OUTPUT_LIMIT - 1} /dev/zero | tr '\\0' x")
    assert block["content"] == "x" * (OUTPUT_LIMIT - 1)
    assert not (tmp_path / "spill").exists()


# --- timeout and interrupt -----------------------------------------------------------------------


async def test_timeout_stops_the_whole_process_group(tmp_path):
    cmd = "sleep 1000 & echo $! > bg.pid; echo started; sleep 1000"
    block, summary = await _run(_ctx(tmp_path), cmd, timeout=1_000)
    assert block["is_error"] and block["content"].startswith("Timed out after 1 s")
    assert "started" in block["content"]
    assert summary == "Timed out after 1 s"
    assert not _alive(int((tmp_path / "bg.pid").read_text()))


async def test_timeout_also_stops_a_command_that_ignores_sigterm(tmp_path):
    cmd = "trap '' TERM; (trap '' TERM; sleep 1000) & echo $! > bg.pid; sleep 1000"
    block, _ = await _run(_ctx(tmp_path), cmd, timeout=500)
    assert block["is_error"]
    assert not _alive(int((tmp_path / "bg.pid").read_text()))


async def test_cancellation_stops_the_group_and_propagates(tmp_path):
    task = asyncio.ensure_future(_run(_ctx(tmp_path), "echo $$ > shell.pid; sleep 1000 & echo $! > bg.pid; wait"))
    bg = await _wait_for_file(tmp_path / "bg.pid")
    shell = int((tmp_path / "shell.pid").read_text())
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 10)
    assert not _alive(bg) and not _alive(shell)


async def test_a_background_process_that_keeps_the_pipe_does_not_hang_the_call(tmp_path):
    block, _ = await _run(_ctx(tmp_path), "sleep 1000 & echo $! > bg.pid; echo done", timeout=60_000)
    try:
        assert block["content"] == "done" and not block.get("is_error")
    finally:
        os.kill(int((tmp_path / "bg.pid").read_text()), 9)


# --- working directory -----------------------------------------------------------------------------


async def test_cd_carries_over_inside_the_working_dirs(tmp_path):
    (tmp_path / "sub" / "deeper").mkdir(parents=True)
    ctx = _ctx(tmp_path)
    block, _ = await _run(ctx, "cd sub")
    assert block["content"] == ""
    block, _ = await _run(ctx, "cd deeper && pwd")
    assert block["content"] == str((tmp_path / "sub" / "deeper").resolve())
    block, _ = await _run(ctx, "pwd")
    assert block["content"] == str((tmp_path / "sub" / "deeper").resolve())


async def test_cd_outside_the_working_dirs_is_reset_with_a_note(tmp_path, tmp_path_factory):
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    ctx = _ctx(tmp_path)
    block, _ = await _run(ctx, f"cd {elsewhere} && echo moved")
    assert block["content"] == f"moved\nShell cwd was reset to {tmp_path} (it had left the working directories)."
    block, _ = await _run(ctx, "pwd")
    assert block["content"] == str(tmp_path.resolve())


async def test_an_added_working_dir_is_a_place_the_shell_may_stay(tmp_path, tmp_path_factory):
    other = tmp_path_factory.mktemp("other")
    ctx = _ctx(tmp_path, working_dirs=(other,))
    await _run(ctx, f"cd {other}")
    block, _ = await _run(ctx, "pwd")
    assert block["content"] == str(other.resolve())


async def test_a_deleted_shell_directory_falls_back_to_cwd(tmp_path):
    (tmp_path / "gone").mkdir()
    ctx = _ctx(tmp_path)
    await _run(ctx, "cd gone")
    (tmp_path / "gone").rmdir()
    block, _ = await _run(ctx, "pwd")
    assert block["content"] == str(tmp_path.resolve())


async def test_environment_variables_do_not_persist(tmp_path):
    ctx = _ctx(tmp_path)
    await _run(ctx, "export GREETING=hi")
    block, _ = await _run(ctx, "echo ${GREETING:-unset}")
    assert block["content"] == "unset"


async def test_exit_inside_the_command_still_records_the_directory(tmp_path):
    (tmp_path / "sub").mkdir()
    ctx = _ctx(tmp_path)
    block, _ = await _run(ctx, "cd sub; exit 4")
    assert block["content"] == "Exit code 4 (no output)"
    block, _ = await _run(ctx, "pwd")
    assert block["content"] == str((tmp_path / "sub").resolve())


# --- input, permissions, what the person sees ---------------------------------------------------------


@pytest.mark.parametrize("timeout", [0, 600_001, -5])
def test_timeout_bounds_have_a_clear_message(timeout):
    with pytest.raises(ValidationError, match=r"outside 1\.\.600000"):
        BashInput(command="ls", timeout=timeout)


def test_timeout_defaults_to_two_minutes_and_the_schema_shows_the_bounds():
    assert BashInput(command="ls").timeout == 120_000
    schema = BashTool().input_schema()["properties"]["timeout"]
    assert schema["maximum"] == 600_000 and schema["default"] == 120_000
    with pytest.raises(ValidationError):
        BashInput(command="ls", unknown=1)


async def test_an_empty_command_is_refused_before_running(tmp_path):
    msg = await BashTool().validate_input(BashInput(command="   "), _ctx(tmp_path))
    assert msg and "empty" in msg


async def test_read_only_commands_inside_the_working_dirs_are_allowed(tmp_path):
    check = await BashTool().check_permissions(BashInput(command="git status && ls -la | head"), _ctx(tmp_path))
    assert (check.behavior, check.message) == ("allow", "read-only command")


@pytest.mark.parametrize(
    ("command", "words"),
    [
        ("cd / && ls", "leaves the working directories"),
        ("cat /etc/passwd", "outside the working"),
        ("cat ../../secret", "outside the working"),
        ("cat $HOME/.ssh/id_rsa", "only known when the shell runs"),
        ("cd && ls", "only known when the shell runs"),
        # the program behind a wrapper is judged (review 3)
        ("command cat /etc/passwd", "outside the working"),
        ("command -p cat /etc/passwd", "outside the working"),
        ("nice -n 5 cat /etc/passwd", "outside the working"),
        ("echo /etc/passwd | xargs cat", "outside the working"),
    ],
)
async def test_read_only_commands_that_leave_the_working_dirs_ask(tmp_path, command, words):
    (tmp_path / "a").mkdir()
    ctx = _ctx(tmp_path / "a")
    check = await BashTool().check_permissions(BashInput(command=command), ctx)
    assert check.behavior == "ask" and words in check.message


@pytest.mark.parametrize("command", ["cat hn", "head -1 hn", "wc -c < hn", "cat sub/hn"])
async def test_a_symlink_in_the_project_to_a_file_outside_asks(tmp_path, command):
    outside = tmp_path / "outside.txt"
    outside.write_text("host\n")
    (tmp_path / "a" / "sub").mkdir(parents=True)
    (tmp_path / "a" / "hn").symlink_to(outside)
    (tmp_path / "a" / "sub" / "hn").symlink_to(outside)
    check = await BashTool().check_permissions(BashInput(command=command), _ctx(tmp_path / "a"))
    assert check.behavior == "ask" and "outside the working directories" in check.message


async def test_writing_commands_have_no_opinion_and_the_rules_decide(tmp_path):
    check = await BashTool().check_permissions(BashInput(command="rm x"), _ctx(tmp_path))
    assert check.behavior == "passthrough"


@pytest.mark.parametrize(
    ("command", "rule"),
    [
        ("git diff HEAD~1", "Bash(git diff:*)"),
        ("npm test", "Bash(npm test:*)"),
        ("npm run build -- --watch", "Bash(npm run build:*)"),
        ("ls -la src", "Bash(ls:*)"),
        ("python -m pytest -q", "Bash(python -m pytest:*)"),
        ("git -C x status", "Bash(git -C x status)"),
        ("cd src && make", "Bash(cd:*)"),
        ("echo $(date)", "Bash(echo $(date))"),
        # the real program after a wrapper, never a rule on the wrapper (review 3)
        ("timeout 60 pytest -x", "Bash(pytest:*)"),
        ("time pytest", "Bash(pytest:*)"),
        ("nice -n 5 git diff HEAD", "Bash(git diff:*)"),
        ("nohup make test", "Bash(make test:*)"),
        ("timeout -s KILL 60 pytest", "Bash(pytest:*)"),  # rules look through a wrapper's options
        ("env CI=1 npm test", "Bash(env CI=1 npm test)"),
        ("sudo apt-get install x", "Bash(sudo apt-get install x)"),
        ("xargs -n1 echo", "Bash(xargs -n1 echo)"),
        ("timeout 5 env rm x", "Bash(timeout 5 env rm x)"),
    ],
)
def test_suggested_rules(tmp_path, command, rule):
    assert BashTool().suggest_rule(BashInput(command=command), _ctx(tmp_path)) == rule


async def test_the_approval_preview_shows_the_command_and_warns_when_destructive(tmp_path):
    tool = BashTool()
    preview = await tool.preview(
        BashInput(command="rm -rf build", description="Delete the build output"), _ctx(tmp_path)
    )
    assert preview.command == "rm -rf build" and preview.description == "Delete the build output"
    assert preview.notes and preview.notes[0].startswith("destructive: rm -r")
    calm = await tool.preview(BashInput(command="make"), _ctx(tmp_path))
    assert calm.notes == ()


def test_rule_subject_and_sibling_cancellation(tmp_path):
    tool = BashTool()
    subject = tool.rule_subject(BashInput(command="npm test"), _ctx(tmp_path))
    assert (subject.kind, subject.value) == ("command", "npm test")
    assert tool.cancels_siblings_on_error(BashInput(command="npm test"))
    assert not tool.cancels_siblings_on_error(BashInput(command="grep x f"))


async def test_the_person_can_expand_the_last_lines_of_output(tmp_path):
    tool = BashTool()
    inp = BashInput(command="seq 1 50")
    ctx = _ctx(tmp_path)
    detail = tool.detail_for_person(inp, await tool.call(inp, ctx, ctx.decision))
    assert detail.splitlines()[:2] == ["$ seq 1 50", "... (30 earlier lines)"]
    assert detail.splitlines()[2:] == [str(i) for i in range(31, 51)]


def test_summarize_use_prefers_the_description():
    tool = BashTool()
    assert tool.summarize_use(BashInput(command="pytest -q", description="Run the tests")) == "Run the tests"
    assert tool.summarize_use(BashInput(command="pytest -q")) == "pytest -q"
    long = tool.summarize_use(BashInput(command="echo " + "x" * 200))
    assert len(long) == 80 and long.endswith("…")


# --- through the agent ---------------------------------------------------------------------------------


def test_read_only_calls_run_together_without_a_prompt(tmp_path):
    from ipy_agent import Agent, ScriptedModel

    (tmp_path / "a.txt").write_text("alpha\n")
    uses = [
        {"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {"command": c}}
        for i, c in enumerate(["cat a.txt", "grep -c zzz a.txt"])
    ]
    agent = Agent(model=ScriptedModel([uses, "done"]), cwd=tmp_path, approver=lambda req: pytest.fail(f"asked {req}"))
    agent.run("look")
    first, second = [*all_results(agent.messages).values()]
    assert first["content"] == "alpha" and not second.get("is_error")
    assert agent.trace[0].batch == agent.trace[1].batch
    assert [r.summary_result for r in agent.trace] == ["Exit 0, 1 line", "Exit 1, 1 line"]


def test_a_writing_command_asks_and_a_denial_leaves_the_disk_alone(tmp_path):
    from ipy_agent import Agent, ScriptedModel

    asked = []

    def deny(req):
        asked.append(req)
        return "deny"

    use = [
        {
            "type": "tool_use",
            "id": "t1",
            "name": "Bash",
            "input": {"command": "rm -rf data", "description": "Remove data"},
        }
    ]
    (tmp_path / "data").mkdir()
    agent = Agent(model=ScriptedModel([use, "ok"]), cwd=tmp_path, approver=deny)
    agent.run("clean")
    assert (tmp_path / "data").is_dir()
    assert len(asked) == 1 and asked[0].destructive
    assert asked[0].suggested_rule == "Bash(rm:*)"
    [result] = [*all_results(agent.messages).values()]
    assert result["is_error"]


def test_an_allow_rule_runs_a_compound_command_only_when_every_part_matches(tmp_path):
    from ipy_agent import Agent, ScriptedModel

    asked = []
    uses = [
        [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "touch a && touch b"}}],
        [{"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "touch c && rm a"}}],
        "done",
    ]
    agent = Agent(
        model=ScriptedModel(uses),
        cwd=tmp_path,
        allow=["Bash(touch:*)"],
        approver=lambda req: asked.append(req.input["command"]) or "deny",
    )
    agent.run("go")
    assert (tmp_path / "a").exists() and (tmp_path / "b").exists() and not (tmp_path / "c").exists()
    assert asked == ["touch c && rm a"]
