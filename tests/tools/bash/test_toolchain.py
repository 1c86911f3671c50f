"""Which directories under HOME the sandbox shows for programs, derived from the environment.

Each case builds the layout a toolchain leaves in a fake HOME, sets the variables it sets, and
checks what `toolchain()` shows and, as much, what it does not (the sandbox tests in
tests/security/test_sandbox_toolchain.py run the programs).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from ipy_agent.tools.bash import toolchain

PYTHON = os.path.realpath(sys.executable)


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for key in ("PYENV_ROOT", "CONDA_PREFIX", "CONDA_EXE", "CONDA_PYTHON_EXE", "UV_PYTHON_INSTALL_DIR", "RUSTUP_HOME"):
        monkeypatch.delenv(key, raising=False)
    for key in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        monkeypatch.delenv(key, raising=False)
    toolchain.refresh()
    yield home
    toolchain.refresh()


def on_path(monkeypatch, *entries: Path | str) -> None:
    monkeypatch.setenv("PATH", ":".join([*map(str, entries), "/usr/bin", "/bin"]))
    toolchain.refresh()


def shown(home: Path) -> set[str]:
    """What is shown under HOME, relative to it."""
    return {os.path.relpath(d, home) for d in toolchain.toolchain().dirs if d.startswith(f"{home}/")}


def make(path: Path, text: str = "#!/bin/sh\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def test_a_conda_prefix_is_shown_whole_with_its_envs(home, monkeypatch):
    root = home / "miniconda3"
    (root / "conda-meta").mkdir(parents=True)
    (root / "envs" / "ds" / "conda-meta").mkdir(parents=True)
    make(root / "bin" / "conda")
    (root / "condabin").mkdir()
    monkeypatch.setenv("CONDA_EXE", str(root / "bin" / "conda"))
    monkeypatch.setenv("CONDA_PREFIX", str(root / "envs" / "ds"))
    on_path(monkeypatch, root / "envs" / "ds" / "bin", root / "condabin")
    assert shown(home) == {"miniconda3"}


def test_a_bin_dir_brings_the_libraries_beside_it_not_its_parent(home, monkeypatch):
    """nvm's node: `bin` and `lib/node_modules`; the version directory's other files are not needed."""
    version = home / ".nvm" / "versions" / "node" / "v20.1.0"
    make(version / "bin" / "node")
    (version / "lib" / "node_modules" / "npm" / "bin").mkdir(parents=True)
    make(version / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js", "#!/usr/bin/env node\n")
    (version / "bin" / "npm").symlink_to("../lib/node_modules/npm/bin/npm-cli.js")
    (home / ".nvm" / "alias").mkdir()
    on_path(monkeypatch, version / "bin")
    base = ".nvm/versions/node/v20.1.0"
    assert shown(home) == {f"{base}/bin", f"{base}/lib"}


def test_cargo_bin_is_shown_without_cargos_credentials_and_rustup_with_it(home, monkeypatch):
    make(home / ".cargo" / "bin" / "rustup")
    make(home / ".cargo" / "bin" / "cargo")
    (home / ".cargo" / "credentials.toml").write_text("[registry]\ntoken = 'x'\n")
    (home / ".rustup" / "toolchains" / "stable" / "bin").mkdir(parents=True)
    on_path(monkeypatch, home / ".cargo" / "bin")
    assert shown(home) == {".cargo/bin", ".rustup"}


def test_a_shim_brings_what_its_exec_line_runs(home, monkeypatch):
    """asdf's shims run `~/.asdf/bin/asdf exec`: the asdf installation is shown."""
    make(home / ".asdf" / "bin" / "asdf")
    (home / ".asdf" / "installs").mkdir()
    make(home / ".asdf" / "shims" / "python", f'#!/usr/bin/env bash\nexec {home}/.asdf/bin/asdf exec "python" "$@"\n')
    on_path(monkeypatch, home / ".asdf" / "shims")
    assert shown(home) == {".asdf/shims", ".asdf/bin"}


def test_uv_managed_pythons_are_shown(home, monkeypatch):
    (home / ".local" / "share" / "uv" / "python" / "cpython-3.12.0-linux-x86_64-gnu" / "bin").mkdir(parents=True)
    on_path(monkeypatch)
    assert shown(home) == {".local/share/uv/python"}
    elsewhere = home / "pythons"
    elsewhere.mkdir()
    monkeypatch.setenv("UV_PYTHON_INSTALL_DIR", str(elsewhere))
    assert shown(home) == {"pythons"}


def test_a_symlinked_path_entry_keeps_its_spelling(home, monkeypatch, tmp_path):
    real = tmp_path / "opt" / "tools" / "bin"
    make(real / "tool")
    (home / "bin").symlink_to(real)
    on_path(monkeypatch, home / "bin")
    found = toolchain.toolchain()
    assert str(real) in found.dirs
    assert (str(home / "bin"), str(real)) in found.links


@pytest.mark.parametrize(
    "entry",
    ["", ".config", ".config/gcloud/bin", ".local", ".local/share", ".cache", ".aws/bin", ".docker", ".ssh"],
)
def test_never_home_the_xdg_dirs_or_a_credential_store(home, monkeypatch, entry):
    """A PATH entry that is HOME, an XDG directory wholesale, or is, holds or lies in a store."""
    for store in (".ssh/id_rsa", ".aws/credentials", ".docker/config.json", ".config/gcloud/credentials.db"):
        make(home / store, "secret\n")
    target = home / entry
    target.mkdir(parents=True, exist_ok=True)
    make(target / "tool")
    on_path(monkeypatch, target)
    assert shown(home) == set()
    # Control: a program directory beside them is shown.
    on_path(monkeypatch, target, home / ".local" / "bin")
    (home / ".local" / "bin").mkdir(parents=True, exist_ok=True)
    toolchain.refresh()
    assert shown(home) == {".local/bin"}


def test_local_bin_brings_local_lib_never_local_itself(home, monkeypatch):
    """`~/.local/bin/x` runs with `/usr/bin/python3`: `~/.local/bin` and `~/.local/lib` (its user
    site-packages) are shown, never `~/.local` itself, which holds `share/` and `state/`."""
    make(home / ".local" / "bin" / "x", "#!/usr/bin/python3\n")
    (home / ".local" / "lib" / "python3.11" / "site-packages").mkdir(parents=True)
    (home / ".local" / "share" / "keyrings").mkdir(parents=True)
    on_path(monkeypatch, home / ".local" / "bin")
    assert shown(home) == {".local/bin", ".local/lib"}


def test_the_kernels_own_prefix_is_shown_under_home(home, monkeypatch):
    prefix = home / ".venvs" / "kernel"
    make(prefix / "bin" / "python")
    (prefix / "pyvenv.cfg").write_text("home = /usr/bin\n")
    monkeypatch.setattr(sys, "prefix", str(prefix))
    monkeypatch.setattr(sys, "exec_prefix", str(prefix))
    on_path(monkeypatch)
    assert ".venvs/kernel" in shown(home)


def test_a_symlink_to_a_credential_store_is_not_made_again(home, monkeypatch):
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_rsa").write_text("secret\n")
    (home / "keys").symlink_to(".ssh")
    on_path(monkeypatch, home / "keys")
    found = toolchain.toolchain()
    assert found.links == ()
    assert shown(home) == set()
