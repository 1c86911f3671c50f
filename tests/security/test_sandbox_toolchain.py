"""The person's own toolchain works in the sandbox; the rest of HOME stays hidden.

The read-only sandbox shows an empty HOME. A Python from pyenv (shims that run
`~/.pyenv/libexec/pyenv`), a conda prefix (`~/miniconda3/bin/python` needs `~/miniconda3/lib`)
or a tool pipx installed (`~/.local/bin/x`, whose `#!` is a Python in `~/.local/share/pipx`)
would fail there with "not found" (exit 127). `tools/bash/toolchain.py` derives from the
environment which directories under HOME hold programs, and the sandbox shows them read-only:

- `python3 --version` and `pip --version` run unasked and succeed in both sandboxes, for a
  fake HOME with each layout (`tests/support/toolchain.py`); control: with only the PATH entries
  shown (what the sandbox showed before), they fail with 127;
- credential stores stay hidden while `~/.pyenv` is shown, even when PATH names HOME itself, a
  directory inside a store and one holding a store, and a secret beside a shown toolchain
  directory stays hidden; controls: with the refusals off, HOME is shown and the secret beside
  the toolchain leaks (the masks still hide the stores); with the masks off too, the stores leak.
"""

from __future__ import annotations

import asyncio
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from ipy_agent.permissions.rules import PermissionRules
from ipy_agent.tools.bash import BashInput, BashTool, sandbox, toolchain
from tests.support.bash import decision, project
from tests.support.containment import context
from tests.support.toolchain import LAYOUTS, fake_home

pytestmark = pytest.mark.usefixtures("need_bwrap")

SANDBOXES = {"tool": "read-only", "mode": "write-workdirs"}  # who decided -> where it runs
NOT_FOUND = 127


def use_home(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> None:
    """Make `env` the kernel's environment, as the person's shell would have started it."""
    for key, value in env.items():
        if value:
            monkeypatch.setenv(key, value)
        else:
            monkeypatch.delenv(key, raising=False)
    toolchain.refresh()


@pytest.fixture(autouse=True)
def _fresh_toolchain():
    toolchain.refresh()
    yield
    toolchain.refresh()


def path_entries_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """The control: the sandbox shows the PATH entries and the kernel's prefix, nothing they call
    (what it showed before the toolchain was derived)."""
    home = os.path.realpath(os.path.expanduser("~"))

    def entries(shown: tuple[str, ...] = ()) -> toolchain.Toolchain:
        found = [os.path.realpath(d) for d in os.environ["PATH"].split(os.pathsep) if os.path.isdir(d)]
        found += [os.path.realpath(p) for p in (sys.prefix, sys.base_prefix)]
        keep = [d for d in dict.fromkeys(found) if d != home and not home.startswith(d + "/")]
        return toolchain.Toolchain(dirs=tuple(d for d in keep if not sandbox.covered(d, shown)))

    monkeypatch.setattr(sandbox, "toolchain", entries)


@dataclass(frozen=True)
class Ran:
    exit_code: int
    text: str  # the block the model receives


def run(cwd: Path, decided_by: str, command: str, rules: tuple[str, ...] = ()) -> Ran:
    ctx = context(cwd, decided_by, read_deny=rules)
    tool = BashTool()
    out = asyncio.run(tool.call(BashInput(command=command, timeout=60_000), ctx, ctx.decision))
    return Ran(out.exit_code, tool.map_result(out, "toolu_c")["content"])


def builtin_rules(cwd: Path) -> tuple[str, ...]:
    return tuple(PermissionRules.with_builtin().read_deny(cwd, (cwd,)))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("decided_by", SANDBOXES)
@pytest.mark.parametrize("command", ["python3 --version", "pip --version"])
def test_the_persons_python_runs_unasked_in_both_sandboxes(tmp_path, monkeypatch, layout, decided_by, command):
    use_home(monkeypatch, fake_home(tmp_path, layout))
    cwd = project(tmp_path / "project")
    assert decision(command, cwd).behavior == "allow", "it runs without asking"
    out = run(cwd, decided_by, command)
    assert out.exit_code == 0, out
    assert ("Python 3." if command.startswith("python") else "pip ") in out.text
    # Control: the PATH entries alone (the shims, the conda bin) are not enough.
    path_entries_only(monkeypatch)
    out = run(cwd, decided_by, command)
    assert out.exit_code == NOT_FOUND, out


@pytest.mark.parametrize("decided_by", SANDBOXES)
def test_a_tool_in_its_own_environment_runs(tmp_path, monkeypatch, decided_by):
    """`~/.local/bin/hello` runs a Python in `~/.local/share/pipx/venvs/hello`: that environment
    is shown, `~/.local/share` is not."""
    use_home(monkeypatch, fake_home(tmp_path, "pipx"))
    (tmp_path / "home" / ".local" / "share" / "recently-used.xbel").write_text("private\n")
    cwd = project(tmp_path / "project")
    out = run(cwd, decided_by, "hello; ls ~/.local/share")
    assert out.exit_code == 0, out
    assert "hello from pipx" in out.text
    if decided_by == "tool":
        assert out.text.split()[-1] == "pipx", "only the toolchain's own directory is under ~/.local/share"
    path_entries_only(monkeypatch)
    out = run(cwd, decided_by, "hello")
    assert out.exit_code == NOT_FOUND, out


SECRETS = {
    ".ssh/id_rsa": "SSHSECRET41",
    ".aws/credentials": "AWSSECRET42",
    ".docker/config.json": "DOCKERSECRET43",
    ".netrc": "NETRCSECRET44",
    # Beside a toolchain directory the sandbox shows (`~/.pyenv`), in no credential store.
    ".pyenv-backup/token": "NEIGHBOURSECRET45",
    "notes/api_key.txt": "NOTESSECRET46",
}
LOOK = (
    "python3 --version; ls -a ~ ~/.pyenv | head -50; "
    "cat ~/.ssh/id_rsa ~/.aws/credentials ~/.docker/config.json ~/.netrc ~/.pyenv-backup/token "
    "~/notes/api_key.txt; grep -r SECRET ~ 2>/dev/null | head; true"
)


def secret_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A pyenv home with credential stores, and a PATH that names HOME itself, a directory inside
    a store (`~/.aws/bin`) and one holding a store (`~/.docker`)."""
    env = fake_home(tmp_path, "pyenv")
    home = Path(env["HOME"])
    for rel, secret in SECRETS.items():
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text(secret + "\n")
    for helper in (home / ".aws" / "bin" / "aws-helper", home / ".docker" / "docker-credential-x"):
        helper.parent.mkdir(parents=True, exist_ok=True)
        helper.write_text("#!/bin/sh\necho helper\n")
        helper.chmod(0o755)
    env["PATH"] = f"{home}:{home}/.aws/bin:{home}/.docker:{env['PATH']}"
    use_home(monkeypatch, env)
    return home


def leaked(stdout: str) -> set[str]:
    return {rel for rel, secret in SECRETS.items() if secret in stdout}


def test_credential_stores_stay_hidden_while_the_toolchain_is_shown(tmp_path, monkeypatch):
    """In the read-only sandbox, which hides HOME but the toolchain. (The write-workdirs sandbox
    shows a real HOME whole, read-only: there the masks hide the stores, as
    test_sandbox_masks.py proves.)"""
    decided_by = "tool"
    home = secret_home(tmp_path, monkeypatch)
    cwd = project(tmp_path / "project")
    rules = builtin_rules(cwd)
    shown = toolchain.toolchain(sandbox._SYSTEM_DIRS).dirs
    assert str(home / ".pyenv") in shown
    assert not any(d == str(home) or d.startswith(str(home / ".aws")) or d == str(home / ".docker") for d in shown)
    out = run(cwd, decided_by, LOOK, rules)
    assert "Python 3." in out.text, out
    assert "libexec" in out.text, "~/.pyenv is shown"
    assert leaked(out.text) == set(), out.text
    # Control 1: without the refusals, PATH's HOME entry shows all of HOME. The masks still hide
    # the credential stores inside it, but what no rule names leaks.
    monkeypatch.setattr(toolchain._Finder, "refused", lambda self, d: d == "/")
    toolchain.refresh()
    out = run(cwd, decided_by, LOOK, rules)
    assert leaked(out.text) == {".pyenv-backup/token", "notes/api_key.txt"}, out.text
    # Control 2: without the masks too, the stores leak.
    out = run(cwd, decided_by, LOOK)
    assert {".ssh/id_rsa", ".aws/credentials", ".netrc"} <= leaked(out.text), out.text


def test_masks_hold_inside_a_shown_toolchain_directory(tmp_path, monkeypatch):
    """A Read deny rule for a file inside a directory the sandbox shows for programs masks it."""
    secret_home(tmp_path, monkeypatch)
    home = Path(os.environ["HOME"])
    (home / ".pyenv" / "versions" / "3.99.0" / "secret.txt").write_text("INSIDESECRET47\n")
    cwd = project(tmp_path / "project")
    rules = (*builtin_rules(cwd), "~/.pyenv/versions/*/secret.txt")
    look = "cat ~/.pyenv/versions/3.99.0/secret.txt; grep -r INSIDE ~/.pyenv/versions; true"
    for decided_by in SANDBOXES:
        out = run(cwd, decided_by, look, rules)
        assert "INSIDESECRET47" not in out.text, (decided_by, out)
    # Control: without the rule, the file is there to read.
    out = run(cwd, "tool", look, builtin_rules(cwd))
    assert "INSIDESECRET47" in out.text, out


def test_the_derivation_is_bounded(tmp_path, monkeypatch):
    """However many PATH entries lead under HOME, at most MAX_DIRS directories are shown."""
    env = fake_home(tmp_path, "pyenv")
    home = Path(env["HOME"])
    entries = []
    for i in range(toolchain.MAX_DIRS + 20):
        (d := home / "tools" / f"t{i}" / "bin").mkdir(parents=True)
        entries.append(str(d))
    env["PATH"] = ":".join([*entries, env["PATH"]])
    use_home(monkeypatch, env)
    found = toolchain.toolchain()
    assert len(found.dirs) == toolchain.MAX_DIRS
    assert os.path.realpath(sys.prefix) in found.dirs, "the kernel's own prefix is never left out"
    assert str(home / "tools" / "t0" / "bin") in found.dirs


def test_the_derivation_is_cached_until_a_program_is_installed(tmp_path, monkeypatch):
    """Computed once per environment: the second call is the cache's answer; a tool installed
    since in a PATH entry (its directory changed) is seen."""
    env = fake_home(tmp_path, "pipx")
    use_home(monkeypatch, env)
    home = Path(env["HOME"])
    first = toolchain.toolchain()
    assert toolchain.toolchain() is first
    late = home / ".local" / "share" / "uv" / "tools" / "late"
    (late / "bin").mkdir(parents=True)
    (late / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (late / "bin" / "python").symlink_to(os.path.realpath(sys.executable))
    assert str(late) not in first.dirs
    script = home / ".local" / "bin" / "late"
    script.write_text(f"#!{late}/bin/python\n")
    script.chmod(0o755)
    os.utime(script.parent, ns=(0, os.stat(script.parent).st_mtime_ns + 1))  # a coarse clock's tick
    assert str(late) in toolchain.toolchain().dirs


@pytest.mark.parametrize("decided_by", SANDBOXES)
def test_a_path_entry_spelled_through_a_symlink_runs(tmp_path, monkeypatch, decided_by):
    """`~/.local/bin -> /elsewhere/bin` and `~/apps/current -> v2`: the sandbox's HOME has the
    same symlinks, so PATH finds the programs by the names it has."""
    env = fake_home(tmp_path, "pyenv")
    home = Path(env["HOME"])
    elsewhere = tmp_path / "opt" / "tools" / "bin"
    elsewhere.mkdir(parents=True)
    (home / ".local").mkdir()
    (home / ".local" / "bin").symlink_to(elsewhere)
    (home / "apps" / "v2" / "bin").mkdir(parents=True)
    (home / "apps" / "current").symlink_to("v2")
    for program, where in (("from-local", elsewhere), ("from-apps", home / "apps" / "v2" / "bin")):
        (where / program).write_text(f"#!/bin/sh\necho {program} runs\n")
        (where / program).chmod(0o755)
    env["PATH"] = f"{home}/.local/bin:{home}/apps/current/bin:{env['PATH']}"
    use_home(monkeypatch, env)
    cwd = project(tmp_path / "project")
    out = run(cwd, decided_by, "from-local && from-apps")
    assert (out.exit_code, out.text) == (0, "from-local runs\nfrom-apps runs"), out
    # Control: without the symlinks, PATH's spelling leads nowhere.
    real = toolchain.toolchain

    def without_links(shown: tuple[str, ...] = ()) -> toolchain.Toolchain:
        return toolchain.Toolchain(dirs=real(shown).dirs)

    monkeypatch.setattr(sandbox, "toolchain", without_links)
    out = run(cwd, decided_by, "from-local && from-apps")
    assert out.exit_code == NOT_FOUND, out
