"""The person's own programs, found from the environment for the sandbox to show.

The read-only sandbox shows an empty HOME, so a program that lives there would fail inside
it with "not found" (exit 127): a pyenv shim calls `~/.pyenv/libexec/pyenv`, a conda Python
needs its `lib`, a tool installed by pipx or uv runs an interpreter in its own environment.
`toolchain()` says which directories hold the programs a command may run, derived from what
the kernel's environment says, so that the sandbox can show them read-only:

- every PATH entry (its real path); for one named `bin` (or `sbin`, `shims`, `condabin`,
  `Scripts`), the libraries beside it (`lib`, `lib64`, `libexec`), or the whole prefix when it
  is an environment (`conda-meta`, `pyvenv.cfg`, a Python's `lib/python*`);
- for a PATH entry under HOME, what its programs run: a symlink's target, a script's `#!`
  interpreter, and the program an `exec` line of a shim or launcher starts (pyenv's, asdf's),
  each with its prefix as above; a program kept in `libexec` gets its installation root (pyenv's
  shims, libexec, plugins, versions and its `version` file);
- pyenv's root (`PYENV_ROOT`) when a PATH entry is inside it;
- the kernel's own prefix: `sys.prefix`, `sys.base_prefix`, the real path of `sys.executable`;
- conda: `CONDA_PREFIX`, and the root `CONDA_EXE` and `CONDA_PYTHON_EXE` are in (its `envs`
  with it);
- uv's managed Pythons (`UV_PYTHON_INSTALL_DIR`, else `$XDG_DATA_HOME/uv/python`);
- rustup's toolchains (`RUSTUP_HOME`, else `~/.rustup`) when a PATH entry holds `rustup`.

Never shown, whatever leads there: HOME or a directory above it, `/`, `/tmp`, `/dev`, `/proc`;
the XDG directories wholesale (`~/.config`, `~/.local`, `~/.local/share`, `~/.local/state`,
`~/.cache`), which hold the person's settings and keys; and a directory that is, holds or lies
inside a credential store (the built-in Read deny rules, Jupyter's runtime directory included).
A prefix refused so falls back to the program's own directory, itself checked the same way.
Read deny rules still hold inside what is shown: the sandbox walks these directories for masks
like every other directory it shows.

A PATH entry or an interpreter spelled through a symlink under HOME (`~/bin -> /data/bin`)
keeps that spelling: the symlink is in `links`, for the sandbox to make in its HOME.

Bounded (at most `MAX_DIRS` directories, `MAX_PROGRAMS` programs looked at in each PATH entry,
their first 16 KB) and cheap: computed once per environment (the variables read above, the
kernel's prefixes, and the change stamps of the PATH entries) and cached, as
`base/surfaces.py` is, so a command pays a few `stat` calls.
"""

from __future__ import annotations

import functools
import glob
import os
import re
import stat
import sys
from collections.abc import Iterable
from dataclasses import dataclass

from ipy_agent.permissions.rules import ENV_FILES, builtin_read_denies

__all__ = ["MAX_DIRS", "MAX_PROGRAMS", "Toolchain", "refresh", "toolchain"]

MAX_DIRS = 48  # directories shown for programs, all sources together
MAX_PROGRAMS = 400  # files looked at in one PATH entry under HOME (pyenv has ~100 shims)
_HEAD = 16 * 1024  # bytes of a script read for its `#!` line and `exec` lines

_BIN_NAMES = frozenset({"bin", "sbin", "shims", "condabin", "Scripts", "libexec"})
_LIB_NAMES = ("lib", "lib64", "libexec")
_ENV = (
    "HOME",
    "PATH",
    "PYENV_ROOT",
    "CONDA_PREFIX",
    "CONDA_EXE",
    "CONDA_PYTHON_EXE",
    "UV_PYTHON_INSTALL_DIR",
    "XDG_DATA_HOME",
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
    "XDG_STATE_HOME",
    "RUSTUP_HOME",
)
# `exec "/abs/program" ...` (pyenv's shims) or `exec /abs/program ...` (asdf's).
_EXEC_LINE = re.compile(rb"""^[ \t]*exec[ \t]+["']?(/[^"'\s;&|]+)""", re.MULTILINE)


@dataclass(frozen=True)
class Toolchain:
    """What the sandbox shows of the person's programs."""

    dirs: tuple[str, ...] = ()  # real paths, read-only; none inside another
    links: tuple[tuple[str, str], ...] = ()  # (path, target): symlinks under HOME that spellings go through


def toolchain(shown: tuple[str, ...] = ()) -> Toolchain:
    """The directories holding the programs a command may run here, but those inside `shown`
    (the system's directories the sandbox shows anyway), from the cache while the environment
    and the PATH entries are as they were."""
    env = tuple(os.environ.get(name) for name in _ENV)
    kernel = (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.executable)
    return _cached(env, kernel, _stamps(os.environ.get("PATH", "")), shown)


def refresh() -> None:
    """Forget what was found (a toolchain changed without its PATH entries changing)."""
    _cached.cache_clear()


def _stamps(path: str) -> tuple[tuple[str, int], ...]:
    """Each PATH entry's change stamp: a program installed since (pipx, uv tool) is seen."""
    out: list[tuple[str, int]] = []
    for entry in path.split(os.pathsep):
        try:
            out.append((entry, os.stat(entry).st_mtime_ns))
        except (OSError, ValueError):
            continue
    return tuple(out)


@functools.lru_cache(maxsize=8)
def _cached(
    env: tuple[str | None, ...],
    kernel: tuple[str, ...],
    stamps: tuple[tuple[str, int], ...],
    shown: tuple[str, ...],
) -> Toolchain:
    values = dict(zip(_ENV, env, strict=True))
    return _Finder(values, kernel, shown).find()


def _under(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")


class _Finder:
    def __init__(self, env: dict[str, str | None], kernel: tuple[str, ...], shown: tuple[str, ...]) -> None:
        self.env = env
        self.kernel = kernel
        self.shown = shown
        self.home = os.path.realpath(os.path.expanduser(env["HOME"] or "~"))
        self.dirs: dict[str, None] = {}
        self.links: dict[str, str] = {}
        home = self.home
        data = env["XDG_DATA_HOME"] or os.path.join(home, ".local", "share")
        broad = [
            os.path.join(home, ".local"),
            os.path.join(home, ".local", "share"),
            os.path.join(home, ".local", "state"),
            os.path.join(home, ".config"),
            os.path.join(home, ".cache"),
            data,
            env["XDG_CONFIG_HOME"] or "",
            env["XDG_CACHE_HOME"] or "",
            env["XDG_STATE_HOME"] or "",
        ]
        self.broad = {os.path.realpath(b) for b in broad if b} | {os.path.normpath(b) for b in broad if b}
        stores = (_store_path(rule.specifier or "", home) for rule in builtin_read_denies())
        self.stores = {p for s in stores if s for p in (s, os.path.realpath(s))}
        self.uv_python = env["UV_PYTHON_INSTALL_DIR"] or os.path.join(data, "uv", "python")

    def find(self) -> Toolchain:
        # The kernel's own prefix first: the bound must never leave out the Python that runs.
        for prefix in self.kernel[:3]:
            self._add(os.path.realpath(prefix))
        self._program(self.kernel[3])
        entries = [e for e in (self.env["PATH"] or "").split(os.pathsep) if e and os.path.isabs(e)]
        for entry in entries:
            if os.path.isdir(entry):
                self._spelled(entry)
                self._place_dir(os.path.realpath(entry))
        self._conda()
        if os.path.isdir(self.uv_python):
            self._add(os.path.realpath(self.uv_python))
        pyenv_root = self.env["PYENV_ROOT"]
        if pyenv_root and any(_under(os.path.realpath(e), os.path.realpath(pyenv_root)) for e in entries):
            self._add(os.path.realpath(pyenv_root))
        for entry in entries:
            real = os.path.realpath(entry)
            if _under(real, self.home) and os.path.isdir(real):
                self._scan(real)
        if any(os.path.isfile(os.path.join(e, "rustup")) for e in entries):
            rustup = self.env["RUSTUP_HOME"] or os.path.join(self.home, ".rustup")
            if os.path.isdir(rustup):
                self._add(os.path.realpath(rustup))
        return self._result()

    def _result(self) -> Toolchain:
        ordered = sorted(self.dirs, key=lambda d: (d.count("/"), d))
        dirs: list[str] = []
        for d in ordered:
            if not any(_under(d, kept) for kept in dirs):
                dirs.append(d)
        # A symlink the sandbox makes again: not inside a shown directory (it is there already),
        # and leading to what is shown (or above it), never to a refused directory.
        places = [*dirs, *self.shown]
        links = tuple(
            (path, target)
            for path, target in self.links.items()
            if not any(_under(path, d) for d in dirs)
            and any(_under(real := os.path.realpath(path), d) or _under(d, real) for d in places)
        )
        return Toolchain(dirs=tuple(sorted(dirs)), links=links)

    def refused(self, d: str) -> bool:
        """A directory never shown for programs: too broad, or a credential store's."""
        if d in ("/", "/tmp") or _under(d, "/proc") or _under(d, "/dev"):
            return True
        if _under(self.home, d):
            return True  # HOME itself or above it
        if any(_under(b, d) for b in self.broad):
            return True  # ~/.config, ~/.local... or above them
        # A store outside HOME (Jupyter's runtime directory in a prefix) is masked instead.
        return _under(d, self.home) and any(_under(s, d) or _under(d, s) for s in self.stores)

    def _add(self, d: str) -> bool:
        """Show `d` (a real path); False when it is refused or the bound is reached."""
        if any(_under(d, s) for s in self.shown):
            return True  # the sandbox shows it anyway
        if len(self.dirs) >= MAX_DIRS or not os.path.isdir(d) or self.refused(d):
            return False
        self.dirs[d] = None
        return True

    def _place_dir(self, d: str) -> None:
        """A directory programs are in, with what they load: the prefix when it is an
        environment (or holds a launcher in libexec), else the libraries beside it."""
        if os.path.basename(d) not in _BIN_NAMES:
            self._add(d)
            return
        root = os.path.dirname(d)
        if (os.path.basename(d) == "libexec" or _environment(root)) and self._add(root):
            return
        self._add(d)
        for name in _LIB_NAMES:
            if os.path.isdir(lib := os.path.join(root, name)):
                self._add(lib)

    def _program(self, path: str) -> None:
        """A program something runs (as spelled): its directory and prefix, by both its spelling
        and its real path."""
        if not path or not os.path.isabs(path) or not os.path.exists(path):
            return
        path = os.path.normpath(path)
        self._spelled(path)
        for p in dict.fromkeys([os.path.realpath(os.path.dirname(path)), os.path.dirname(os.path.realpath(path))]):
            self._place_dir(p)

    def _spelled(self, path: str) -> None:
        """The symlinks under HOME that `path`'s spelling goes through."""
        if not _under(path, self.home) or path == self.home:
            return
        cur = self.home
        for part in os.path.relpath(path, self.home).split("/"):
            cur = os.path.join(cur, part)
            if os.path.islink(cur):
                self.links.setdefault(cur, os.readlink(cur))
                cur = os.path.realpath(cur)
                if not _under(cur, self.home):
                    return

    def _scan(self, entry: str) -> None:
        """What the programs of one PATH entry under HOME run."""
        try:
            with os.scandir(entry) as it:
                names = sorted(e.name for e in it)[:MAX_PROGRAMS]
        except OSError:
            return
        for name in names:
            if len(self.dirs) >= MAX_DIRS:
                return
            path = os.path.join(entry, name)
            if os.path.islink(path):
                self._program(os.path.join(entry, os.readlink(path)))
            for called in _called_by(path):
                self._program(called)

    def _conda(self) -> None:
        if prefix := self.env["CONDA_PREFIX"]:
            self._add(os.path.realpath(prefix))
        for name in ("CONDA_EXE", "CONDA_PYTHON_EXE"):
            if exe := self.env[name]:
                self._program(exe)


def _store_path(spec: str, home: str) -> str | None:
    """The path a built-in Read deny rule names (`~/.ssh`, `//.../jupyter/runtime`); None for
    `.env*` anywhere, which is masked where the sandbox shows such a file."""
    spec = spec.strip().removesuffix("/**").rstrip("/")
    if spec == ENV_FILES or any(c in spec for c in "*?["):
        return None
    if spec.startswith("~/"):
        return os.path.normpath(os.path.join(home, spec[2:]))
    if spec.startswith("//"):
        return os.path.normpath(spec[1:])
    return None


def _environment(root: str) -> bool:
    """A prefix whose programs need the whole of it: a conda environment, a venv, a Python."""
    if os.path.isdir(os.path.join(root, "conda-meta")) or os.path.isfile(os.path.join(root, "pyvenv.cfg")):
        return True
    return bool(glob.glob(os.path.join(glob.escape(root), "lib", "python*", "os.py")))


def _called_by(path: str) -> Iterable[str]:
    """The absolute programs a script starts: its `#!` interpreter and its `exec` lines."""
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode) or not st.st_mode & 0o111:
            return []
        with open(path, "rb") as f:
            head = f.read(_HEAD)
    except OSError:
        return []
    if not head.startswith(b"#!"):
        return []
    out: list[str] = []
    words = head[2:].split(b"\n", 1)[0].split()
    if words and words[0].startswith(b"/"):
        out.append(os.fsdecode(words[0]))
    if len(head) < _HEAD:  # a whole small script: a launcher's `exec` lines
        out += [os.fsdecode(m) for m in _EXEC_LINE.findall(head)]
    return out
