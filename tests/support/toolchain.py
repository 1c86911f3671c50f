"""A home directory laid out as a data scientist's laptop has it, for the sandbox to run.

`fake_home(root, layout)` builds HOME under `root` with one toolchain and returns the variables
that make it the kernel's (HOME, PATH, and PYENV_ROOT or CONDA_PREFIX/CONDA_EXE), to set with
`monkeypatch.setenv`. Every interpreter in it is this test's own Python, reached the way the
real toolchain reaches its own:

- "pyenv": `~/.pyenv/shims/python3` (as pyenv writes it) runs `$PYENV_ROOT/libexec/pyenv exec`,
  which reads `$PYENV_ROOT/version` and runs `versions/3.99.0/bin/python3`, a symlink to the
  real interpreter; `pip` there is a wrapper (`python3 -m pip`).
- "conda": `~/miniconda3/bin/python3` needs its prefix's `lib` (a wrapper that runs
  `lib/python-real`, as a conda Python needs `lib/python3.X`); `pip` is an entry-point script
  whose `#!` names that Python; `conda-meta/` marks the prefix.
- "pipx": `~/.local/bin/hello`, a script whose `#!` is the Python of its own environment under
  `~/.local/share/pipx/venvs/hello` (a `pyvenv.cfg` and a symlink).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["LAYOUTS", "fake_home"]

LAYOUTS = ("pyenv", "conda")
_SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"


def _script(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)


def _link(path: Path, target: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(target)


def _pyenv(home: Path) -> dict[str, str]:
    root = home / ".pyenv"
    for name in ("python", "python3", "pip", "pip3"):
        _script(
            root / "shims" / name,
            "#!/usr/bin/env bash\nset -e\n"
            'program="${0##*/}"\n'
            f'export PYENV_ROOT="{root}"\n'
            f'exec "{root}/libexec/pyenv" exec "$program" "$@"\n',
        )
    _script(
        root / "libexec" / "pyenv",
        "#!/usr/bin/env bash\nset -e\n"
        '[ "$1" = exec ] || { echo "pyenv: only exec is here" >&2; exit 1; }\n'
        'program="$2"; shift 2\n'
        'version="$(cat "$PYENV_ROOT/version")"\n'
        'exec "$PYENV_ROOT/versions/$version/bin/$program" "$@"\n',
    )
    (root / "version").write_text("3.99.0\n")
    bin_dir = root / "versions" / "3.99.0" / "bin"
    _link(bin_dir / "python3", os.path.realpath(sys.executable))
    _link(bin_dir / "python", "python3")
    for name in ("pip", "pip3"):
        _script(bin_dir / name, '#!/bin/sh\nexec "$(dirname "$0")/python3" -m pip "$@"\n')
    path = f"{root}/shims:{root}/bin:{_SYSTEM_PATH}"
    return {"PATH": path, "PYENV_ROOT": str(root)}


def _conda(home: Path) -> dict[str, str]:
    prefix = home / "miniconda3"
    (prefix / "conda-meta").mkdir(parents=True)
    (prefix / "conda-meta" / "history").write_text("==> 2024-01-01 00:00:00 <==\n")
    _link(prefix / "lib" / "python-real", os.path.realpath(sys.executable))
    _script(prefix / "bin" / "python3", '#!/bin/sh\nexec "$(dirname "$0")/../lib/python-real" "$@"\n')
    _link(prefix / "bin" / "python", "python3")
    entry = f"#!{prefix}/bin/python3\nimport sys\nfrom pip._internal.cli.main import main\nsys.exit(main())\n"
    for name in ("pip", "pip3"):
        _script(prefix / "bin" / name, entry)
    return {
        "PATH": f"{prefix}/bin:{prefix}/condabin:{_SYSTEM_PATH}",
        "CONDA_PREFIX": str(prefix),
        "CONDA_EXE": str(prefix / "bin" / "python3"),
    }


def _pipx(home: Path) -> dict[str, str]:
    venv = home / ".local" / "share" / "pipx" / "venvs" / "hello"
    (venv / "pyvenv.cfg").parent.mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text(f"home = {os.path.dirname(os.path.realpath(sys.executable))}\n")
    _link(venv / "bin" / "python", os.path.realpath(sys.executable))
    _script(home / ".local" / "bin" / "hello", f"#!{venv}/bin/python\nprint('hello from pipx')\n")
    return {"PATH": f"{home}/.local/bin:{_SYSTEM_PATH}"}


def fake_home(root: Path, layout: str) -> dict[str, str]:
    """Build HOME at `root/home` with the toolchain `layout`; the variables that make it the
    kernel's. PYENV_ROOT, CONDA_PREFIX and CONDA_EXE are always in the result ("" when the
    layout has none), so setting them all replaces the kernel's own."""
    home = root / "home"
    home.mkdir(parents=True)
    env = {"HOME": str(home), "PYENV_ROOT": "", "CONDA_PREFIX": "", "CONDA_EXE": ""}
    env.update({"pyenv": _pyenv, "conda": _conda, "pipx": _pipx}[layout](home))
    return env
