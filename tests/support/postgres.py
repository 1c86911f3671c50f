"""A temporary PostgreSQL cluster from Debian's package (`apt-get install postgresql`), for the
gateway's store tests and the gateway's load bench.

`postgres_cluster(base)` runs initdb and pg_ctl (/usr/lib/postgresql/*/bin) on a free port of
127.0.0.1 and yields a `postgresql://gateway:PASSWORD@127.0.0.1:PORT/gateway` URL (password
authentication, as a real deployment has); the cluster stops (`pg_ctl stop -m immediate`) when
the block ends. PostgreSQL refuses to run as root: as root the cluster runs as the package's
`postgres` account (or `nobody`), in a directory that account owns: under `base` when it can
reach `base`, otherwise (pytest's tmp dirs are root's own, 0700) in a fresh directory in the
system's temp dir, removed at the end. Durability is off (fsync, synchronous_commit): a test's
database lives for seconds.

`postgres_missing()` says why no cluster can start (None: it can); `need_postgres()` turns that
into a skip, or in CI (CI=true, where .ci/run installs the package) a failure.
`fresh_database(url)` makes a new empty database on the cluster, for one test's own tables.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import secrets
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from .waits import free_port, waiting_for

__all__ = ["PostgresUnavailable", "fresh_database", "need_postgres", "postgres_cluster", "postgres_missing"]

USER = "gateway"
DATABASE = "gateway"


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL here (the message says what to install)."""


def postgres_bin() -> Path | None:
    """The newest installed PostgreSQL's bin directory (Debian's layout), or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    return Path(found[-1]).parent if found else None


def postgres_missing() -> str | None:
    if postgres_bin() is None:
        return "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb): apt-get install -y postgresql"
    with contextlib.suppress(ImportError):
        import psycopg  # noqa: F401

        return None
    return "the psycopg driver is not installed: pip install -e '.[hub]'"


def need_postgres() -> None:
    """Skip where PostgreSQL is missing; in CI, fail and say why."""
    import pytest

    if (why := postgres_missing()) is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"the PostgreSQL tests cannot run in CI: {why} (.ci/run installs it)", pytrace=False)
    pytest.skip(f"the PostgreSQL tests need it: {why}")


def _account() -> pwd.struct_passwd | None:
    """Whom the cluster runs as: this process's user, or as root the `postgres` account (or nobody)."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            return pwd.getpwnam(name)
    raise PostgresUnavailable("running as root, and neither a postgres nor a nobody account exists to run PostgreSQL")


def _reachable_by_others(path: Path) -> bool:
    return all(d.stat().st_mode & stat.S_IXOTH for d in [*reversed(path.parents), path] if d.is_dir())


@contextlib.contextmanager
def postgres_cluster(base: Path) -> Iterator[str]:
    """A PostgreSQL cluster for the block: yields its URL; stopped at the end."""
    bindir = postgres_bin()
    if (why := postgres_missing()) is not None or bindir is None:
        raise PostgresUnavailable(why or "PostgreSQL is not installed")
    account = _account()
    base.mkdir(parents=True, exist_ok=True)
    own_dir = account is not None and not _reachable_by_others(base)
    home = Path(tempfile.mkdtemp(prefix="ipy-agent-pg-")) if own_dir else base / f"pg-{secrets.token_hex(3)}"
    home.mkdir(parents=True, exist_ok=True)
    data, password = home / "data", secrets.token_urlsafe(16)
    pwfile = home / "password"
    pwfile.write_text(password + "\n")
    if account is not None:
        for path in (home, pwfile):
            os.chown(path, account.pw_uid, account.pw_gid)
    home.chmod(0o700)

    def run(*argv: str | Path) -> None:
        out = subprocess.run(
            [str(a) for a in argv],
            user=account.pw_uid if account else None,
            group=account.pw_gid if account else None,
            extra_groups=[] if account else None,
            cwd=home,
            env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
            capture_output=True,
            text=True,
            timeout=120,
        )
        if out.returncode != 0:
            raise PostgresUnavailable(f"{Path(str(argv[0])).name} failed ({out.returncode}):\n{out.stdout}{out.stderr}")

    port = free_port()
    settings = (
        f"-p {port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={home} "
        "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
    )
    started = False
    try:
        with waiting_for("PostgreSQL's initdb and start"):
            run(bindir / "initdb", "-D", data, "-U", USER, f"--pwfile={pwfile}", "--auth=scram-sha-256", "-E", "UTF8")
            run(bindir / "pg_ctl", "-D", data, "-o", settings, "-l", home / "log", "-w", "-t", "60", "start")
            started = True
            admin = f"postgresql://{USER}:{password}@127.0.0.1:{port}/postgres"
            url = fresh_database(admin, DATABASE)
        yield url
    finally:
        if started:
            run(bindir / "pg_ctl", "-D", data, "-m", "immediate", "-w", "stop")
        if own_dir:
            shutil.rmtree(home, ignore_errors=True)


def fresh_database(url: str, name: str = "") -> str:
    """A new empty database on the cluster of `url` (named `name`, or a fresh name); its URL."""
    import psycopg
    from psycopg import sql

    name = name or f"test_{secrets.token_hex(4)}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return url.rsplit("/", 1)[0] + "/" + name
