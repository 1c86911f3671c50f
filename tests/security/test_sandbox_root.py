"""The sandbox of a kernel that runs as root, by attack: its processes are an unprivileged user on
the host, so the files that change the host's kernel (`/proc/sys`, checked by user, whatever
capabilities were dropped) refuse them, and those files are read-only mounts besides; the
writable sandbox still writes the working directories as root would, and what it makes is
root's on disk.

Each attack has its control: the same command with the defence taken away (bubblewrap started
by root as before, `/proc/sys` as the sandbox's proc mounts it) opens a host sysctl for writing.
Nothing here writes a sysctl: a file is opened for writing and closed.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import stat
from pathlib import Path

import pytest

from ipy_agent.tools.bash import BashInput, BashTool, resources, sandbox_user, seccomp
from ipy_agent.tools.bash import contain as contain_mod
from ipy_agent.tools.bash import sandbox as sandbox_mod
from tests.support.tools import DecidedContext, tool_ctx, write_tree

pytestmark = pytest.mark.usefixtures("need_bwrap")

ACCESS = {"read-only": "tool", "write-workdirs": "rule"}  # the sandbox, by who let the command run
HOST_SETTINGS = [
    p
    for p in (
        "/proc/sys/kernel/core_pattern",
        "/proc/sys/kernel/modprobe",
        "/proc/sys/vm/drop_caches",
        "/proc/sysrq-trigger",
    )
    if os.path.exists(p)
]
OPEN_FOR_WRITING = (
    "python3 -c 'import os, sys\n"
    "for p in sys.argv[1:]:\n"
    "    try:\n"
    "        os.close(os.open(p, os.O_WRONLY))\n"
    '        print(p, "WRITABLE")\n'
    "    except OSError as e:\n"
    '        print(p, __import__("errno").errorcode[e.errno])\n'
    "' " + " ".join(HOST_SETTINGS)
)


def _ctx(cwd: Path, access: str) -> DecidedContext:
    return tool_ctx(cwd, tool_use_id="toolu_1", spill_dir=cwd.parent / "spill", decided_by=ACCESS[access])  # type: ignore[arg-type]


async def _bash(ctx: DecidedContext, command: str) -> dict:
    tool = BashTool()
    return tool.map_result(await tool.call(BashInput(command=command), ctx, ctx.decision), "toolu_1")


def _as_root_before(monkeypatch: pytest.MonkeyPatch) -> None:
    """The undefended path: bubblewrap started by the kernel's user (root) itself."""
    monkeypatch.setattr(sandbox_mod, "launcher_argv", lambda argv, shown: argv)


def _proc_as_mounted(monkeypatch: pytest.MonkeyPatch) -> None:
    """The undefended path: no read-only binds over the sandbox's /proc/sys and the like."""
    monkeypatch.setattr(sandbox_mod, "_KERNEL_SETTINGS", ())


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "proj", {"notes.txt": "hello\n"})


# --- the host's kernel settings --------------------------------------------------------------------

# What each layer alone gives: the user (EACCES: the kernel checks the file by user), the
# read-only mount (EROFS); with neither, root's sandbox opens them.
LAYERS = {
    "both": {"EACCES", "EROFS"},
    "unprivileged user only": {"EACCES"},
    "read-only /proc/sys only": {"EROFS"},
    "neither (control)": {"WRITABLE"},
}


@pytest.mark.usefixtures("need_root")
@pytest.mark.parametrize("access", ACCESS)
@pytest.mark.parametrize("layers", LAYERS)
async def test_a_sandboxed_command_of_a_root_kernel_cannot_open_host_sysctls_for_writing(
    project, monkeypatch, access, layers
):
    assert "/proc/sys/kernel/core_pattern" in HOST_SETTINGS
    if layers in ("read-only /proc/sys only", "neither (control)"):
        _as_root_before(monkeypatch)
    if layers in ("unprivileged user only", "neither (control)"):
        _proc_as_mounted(monkeypatch)
    block = await _bash(_ctx(project, access), OPEN_FOR_WRITING)
    seen = dict(line.split(" ", 1) for line in block["content"].splitlines() if line.startswith("/proc/"))
    assert set(seen) == set(HOST_SETTINGS), block
    # sysrq-trigger is 0200 root: the unprivileged user cannot open it however it is mounted.
    wanted = LAYERS[layers] | ({"EACCES"} if layers == "read-only /proc/sys only" else set())
    assert set(seen.values()) <= wanted and seen["/proc/sys/kernel/core_pattern"] in LAYERS[layers], seen


async def test_the_kernel_settings_are_read_only_mounts_whoever_runs_the_sandbox(project):
    argv = sandbox_mod.bwrap_argv(ctx=_ctx(project, "read-only"), cwd=str(project), access="read-only", seccomp=3)
    binds = {argv[i + 2] for i, a in enumerate(argv[:-2]) if a == "--ro-bind"}
    assert "/proc/sys" in binds and argv.index("--proc") < argv.index("/proc/sys")
    assert {p for p in sandbox_mod._KERNEL_SETTINGS if os.path.lexists(p)} <= binds


# --- who the sandbox's processes are, seen from the host ---------------------------------------------


async def _host_ids_of_reader(project: Path, ctx: DecidedContext) -> tuple[list[str], list[str]]:
    """Run `cat` on a FIFO in the sandbox, find it from the host by the FIFO it holds open, and
    read its Uid and Gid lines from the host's /proc (the writer end, held here, keeps it there)."""
    fifo = project / "pipe"
    os.mkfifo(fifo)
    call = asyncio.create_task(_bash(ctx, "cat pipe"))
    writer = await asyncio.wait_for(asyncio.to_thread(os.open, fifo, os.O_WRONLY), 60)
    try:
        inode = os.stat(fifo).st_ino
        status = None
        for pid in (p for p in os.listdir("/proc") if p.isdigit() and p != str(os.getpid())):
            try:
                if any(os.stat(f"/proc/{pid}/fd/{fd}").st_ino == inode for fd in os.listdir(f"/proc/{pid}/fd")):
                    status = Path(f"/proc/{pid}/status").read_text()
                    break
            except OSError:
                continue
    finally:
        os.close(writer)
    await call
    assert status is not None, "no process holds the FIFO open"
    lines = dict(line.split(":", 1) for line in status.splitlines())
    return lines["Uid"].split(), lines["Gid"].split()


@pytest.mark.usefixtures("need_root")
@pytest.mark.parametrize("access", ACCESS)
@pytest.mark.parametrize("defended", [True, False], ids=["defended", "control"])
async def test_the_sandboxed_processes_of_a_root_kernel_are_an_unprivileged_user_on_the_host(
    project, monkeypatch, access, defended
):
    if not defended:
        _as_root_before(monkeypatch)
    uids, gids = await _host_ids_of_reader(project, _ctx(project, access))
    if defended:
        assert uids == [str(sandbox_user.SANDBOX_UID)] * 4 and gids == [str(sandbox_user.SANDBOX_GID)] * 4
    else:
        assert uids == ["0"] * 4


# --- what the writable sandbox of a root kernel still does -------------------------------------------


@pytest.mark.usefixtures("need_root")
@pytest.mark.parametrize(
    "idmapped", ["kernel's namespace", "launcher's own namespace", False], ids=["idmapped", "idmapped-own", "control"]
)
async def test_the_writable_sandbox_of_a_root_kernel_writes_root_files_that_stay_root_files(
    project, monkeypatch, idmapped
):
    if idmapped == "launcher's own namespace":  # where the kernel could not make the mapping namespace
        monkeypatch.setattr(sandbox_user, "mapping_namespace", lambda: None)
    private = project / "private.txt"
    private.write_text("one\n")
    private.chmod(0o600)
    project.chmod(0o755)
    (project / "sub").mkdir(mode=0o755)
    assert os.stat(project).st_uid == 0
    if not idmapped:  # the user is dropped, but nothing is shown to it as root's
        monkeypatch.setattr(sandbox_mod, "_shown_as_owned", lambda ctx, home: [])
    command = "echo two >> private.txt && echo new > made.txt && mkdir -p sub/deeper && echo x > sub/deeper/f && id -u"
    block = await _bash(_ctx(project, "write-workdirs"), command)
    if not idmapped:
        assert "Permission denied" in block["content"] and private.read_text() == "one\n", block
        assert not (project / "made.txt").exists()
        return
    assert not block.get("is_error"), block
    assert block["content"].strip().splitlines()[-1] == "0"  # root inside, as before
    assert private.read_text() == "one\ntwo\n" and stat.S_IMODE(private.stat().st_mode) == 0o600
    for made in ("made.txt", "sub/deeper", "sub/deeper/f"):
        st = os.stat(project / made)
        assert (st.st_uid, st.st_gid) == (0, 0), made
    assert (project / "sub/deeper/f").read_text() == "x\n"


@pytest.mark.usefixtures("need_root")
@pytest.mark.parametrize("defended", [True, False], ids=["defended", "control"])
async def test_the_writable_sandbox_of_a_root_kernel_cannot_leave_a_set_user_id_root_program(
    project, monkeypatch, defended
):
    """What it makes is root's on disk, so a set-user-ID bit would be a root program for anyone
    outside the sandbox (inside, mounts are nosuid): the seccomp filter refuses the bit."""
    if not defended:
        spec = dataclasses.replace(seccomp.filter_spec(), modes=(), openat2=0xFFFF)  # type: ignore[arg-type]
        monkeypatch.setattr(seccomp, "_program", lambda: seccomp.filter_program(spec))
    command = (
        "cp /bin/true by-chmod; chmod 4755 by-chmod; "
        "python3 -c 'import os; os.close(os.open(\"by-open\", os.O_CREAT | os.O_WRONLY, 0o6755))'; "
        "cp /bin/true by-install; chmod g+s by-install; ls -l"
    )
    await _bash(_ctx(project, "write-workdirs"), command)
    names = {"by-chmod", "by-open", "by-install"}
    made = {name: os.stat(project / name) for name in names if (project / name).exists()}
    set_id = {name for name, st in made.items() if st.st_mode & (stat.S_ISUID | stat.S_ISGID)}
    assert all(st.st_uid == 0 for st in made.values())
    if defended:  # the open with such a mode failed whole; the others made plain programs
        assert set_id == set() and set(made) == {"by-chmod", "by-install"}, made
    else:
        assert set_id == names, made


def test_a_kernel_that_is_not_root_starts_bubblewrap_itself(monkeypatch, tmp_path):
    (tmp_path / "a/b").mkdir(parents=True)
    argv = ["/usr/bin/bwrap", "--unshare-user", "--", "/bin/true"]
    monkeypatch.setattr(sandbox_user, "runs_as_root", lambda: False)
    assert sandbox_user.launcher_argv(argv, ["/home/me"]) == argv
    monkeypatch.setattr(sandbox_user, "runs_as_root", lambda: True)
    # From the highest directory the user may not enter on the way (pytest's, 0700), if any.
    reachable = next((str(p) for p in reversed(tmp_path.parents) if not p.stat().st_mode & 0o001), f"{tmp_path}/a")
    dropped = sandbox_user.launcher_argv(argv, ["/", f"{tmp_path}/a/b", f"{tmp_path}/a", f"{tmp_path}/none"])
    assert dropped[dropped.index("--") + 1 :] == [
        "/usr/bin/bwrap",
        "--uid",
        "0",
        "--gid",
        "0",
        "--unshare-user",
        "--",
        "/bin/true",
    ]
    assert dropped[4 : dropped.index("--")] == [
        str(sandbox_user.SANDBOX_UID),
        str(sandbox_user.SANDBOX_GID),
        "-1",  # the mapping namespace's descriptor, filled in when the command starts
        reachable,
    ]


# --- the mapping namespace, made once by the kernel ---------------------------------------------------

LIST_USER_NAMESPACE_FDS = (
    "python3 -c 'import os\n"
    'for fd in os.listdir("/proc/self/fd"):\n'
    "    try:\n"
    '        t = os.readlink("/proc/self/fd/" + fd)\n'
    "    except OSError:\n"
    "        continue\n"
    '    print("held:", t) if t.startswith("user:") else None\n'
    "'"
)


@pytest.mark.usefixtures("need_root")
@pytest.mark.parametrize("access", ACCESS)
async def test_the_kernels_mapping_namespace_reaches_the_launcher_but_never_the_sandbox(project, monkeypatch, access):
    handed: list[tuple[int, ...]] = []
    real = contain_mod.pass_mapping

    def recorded(argv: list[str]) -> tuple[int, ...]:
        handed.append(real(argv))
        return handed[-1]

    monkeypatch.setattr(contain_mod, "pass_mapping", recorded)
    block = await _bash(_ctx(project, access), LIST_USER_NAMESPACE_FDS + "; echo listed")
    assert handed and len(handed[-1]) == 1, handed  # the launcher was given a descriptor of it
    assert block["content"].strip().endswith("listed") and "held:" not in block["content"], block
    # Control: the same listing, run with a descriptor of the namespace, names it.
    held = os.dup(sandbox_user.mapping_namespace() or -1)
    try:
        done = await asyncio.create_subprocess_exec(
            "/bin/bash", "-c", LIST_USER_NAMESPACE_FDS, pass_fds=(held,), stdout=asyncio.subprocess.PIPE
        )
        out, _ = await done.communicate()
    finally:
        os.close(held)
    assert b"held: user:[" in out


# --- the cgroup, joined by the launcher ----------------------------------------------------------------


@pytest.mark.usefixtures("need_root")
@pytest.mark.parametrize("joinable", [True, False], ids=["joined", "cannot-join"])
async def test_a_root_kernels_command_runs_only_once_its_launcher_joined_its_cgroup(project, monkeypatch, joinable):
    if not resources.limits_status().cgroup:
        pytest.skip("no cgroup can be made here")
    made: list[resources.Cgroup] = []

    def make(limits):
        group = resources.make_cgroup(limits)
        assert group is not None
        made.append(group)
        if not joinable:
            group.remove()  # gone before the command starts: the launcher cannot join it
        return group

    joined: list[bool] = []
    real_join = contain_mod.join_in_launcher

    def join(argv: list[str], dirs: tuple[str, ...]) -> bool:
        joined.append(real_join(argv, dirs))
        return joined[-1]

    monkeypatch.setattr(contain_mod, "make_cgroup", make)
    monkeypatch.setattr(contain_mod, "join_in_launcher", join)
    block = await _bash(_ctx(project, "read-only"), "echo RAN")
    assert made and joined == [True]  # the launcher joins it (no shell before it)
    if joinable:
        assert block["content"].strip() == "RAN" and not block.get("is_error"), block
    else:
        assert "could not join the cgroup" in block["content"] and "RAN" not in block["content"], block
