"""Run a real kernel as an unprivileged user from a test that runs as root (CI does).

`launcher(paths)` is the argv to put before the interpreter in a kernelspec: in a private mount
namespace it makes `paths` (the interpreter, its prefix, the checkout) reachable for the user even
where they sit under a directory only root may enter (`/root` is 0700: the directory is replaced
by an empty one holding just those paths), gives the connection file to the user, and drops to
the user's uid with no capabilities (`setpriv`). Nothing outside the kernel's mount namespace
changes.

`python -m tests.security.unprivileged COMMAND...` runs any command so, as nobody, with a home of
its own: CI runs the security suite a second time that way (`.ci/run`).
"""

from __future__ import annotations

import os
import shlex
import shutil
import stat
import sys
from pathlib import Path

NOBODY = 65534


def available() -> str | None:
    """Why an unprivileged kernel cannot be started here, or None."""
    if os.getuid() != 0:
        return "the test must run as root to start a kernel as another user"
    missing = [p for p in ("unshare", "setpriv", "mount") if shutil.which(p) is None]
    return f"missing {', '.join(missing)} (util-linux)" if missing else None


def needed_paths(project_root: Path) -> list[str]:
    """What the kernel process must reach: the interpreter and where its packages are."""
    paths = {
        os.path.realpath(sys.executable),
        os.path.realpath(sys.prefix),
        os.path.realpath(sys.base_prefix),
        str(project_root.resolve()),
    }
    dirs = sorted({os.path.dirname(p) if os.path.isfile(p) else p for p in paths})
    return [d for d in dirs if not any(d != o and d.startswith(o.rstrip("/") + "/") for o in dirs)]


def _closed_ancestor(path: str) -> str | None:
    """The highest directory above `path` that others may not enter, if any."""
    parts = Path(path).parts
    for i in range(2, len(parts)):
        d = os.path.join(*parts[:i])
        try:
            mode = os.stat(d).st_mode
        except OSError:
            return None
        if stat.S_ISDIR(mode) and not mode & stat.S_IXOTH:
            return d
    return None


def launcher(paths: list[str], stage: Path, uid: int = NOBODY, *, owns_last: bool = True) -> list[str]:
    """argv prefix: `launcher(...) + [python, "-m", "ipykernel_launcher", "-f", CONNECTION_FILE]`
    (`owns_last`: the last argument, the connection file, is given to the user)."""
    closed: dict[str, list[str]] = {}
    for p in paths:
        if (top := _closed_ancestor(p)) is not None:
            closed.setdefault(top, []).append(p)
    lines = ["set -e"]
    n = 0
    for top, inside in closed.items():
        for p in inside:
            lines.append(f"mkdir -p {stage}/{n} && mount --bind {shlex.quote(p)} {stage}/{n}")
            n += 1
        lines.append(f"mount -t tmpfs -o mode=755 tmpfs {shlex.quote(top)}")
    n = 0
    for inside in closed.values():
        for p in inside:
            lines.append(f"mkdir -p {shlex.quote(p)} && mount --move {stage}/{n} {shlex.quote(p)}")
            n += 1
    if owns_last:
        lines += ['for a; do last="$a"; done', f'chown {uid}:{uid} "$last"']  # the connection file
    lines += [
        f'exec setpriv --reuid {uid} --regid {uid} --clear-groups --inh-caps=-all --bounding-set=-all "$@"',
    ]
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", "\n".join(lines), "sh"]


def main(command: list[str]) -> None:
    """Run `command` as nobody: this checkout and the interpreter reachable, HOME a fresh
    directory of its own, nothing written to the checkout by Python or pytest's cache."""
    import tempfile

    if why := available():
        sys.exit(f"cannot run as an unprivileged user: {why}")
    base = Path(tempfile.mkdtemp(prefix="ipy_agent_as_nobody_"))
    base.chmod(0o755)
    (base / "stage").mkdir()
    home = base / "home"
    home.mkdir()
    os.chown(home, NOBODY, NOBODY)
    os.environ.update(HOME=str(home), PYTHONDONTWRITEBYTECODE="1", TMPDIR="/tmp")
    root = Path(__file__).resolve().parents[2]
    argv = launcher(needed_paths(root), base / "stage", owns_last=False)
    os.execvp(argv[0], [*argv, *command])


if __name__ == "__main__":
    main(sys.argv[1:])
