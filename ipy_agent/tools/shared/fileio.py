"""File reading and writing shared by the file tools: encodings, line endings, atomic writes.

Edits must give back a file the person recognises: a CRLF file stays CRLF, a file that mixes
CRLF and LF keeps each line's ending, a UTF-8 file with a BOM keeps its BOM, a UTF-16 file stays
UTF-16. UTF-32 is refused rather than mistaken for UTF-16 (its BOM starts with UTF-16's).

A write that fails halfway must not leave a truncated file, so a write normally goes to a
temporary file in the same directory and replaces the target in one `os.replace`, keeping the
original's permission bits. Two cases need care:
- A symlink: the tools write to the file it points to (`real_path`); replacing the link itself
  would turn it into a plain file and leave the real file unchanged.
- A file with several hard links: a replace would give this name a new inode and split it from
  the others, which keep the old content. Such a file is rewritten in place instead (the same
  inode, so every name sees the change). That write is not atomic: a crash in the middle can
  leave it truncated. We accept that because hard links are rare and chosen on purpose, and
  silently breaking them loses the person's edits in the other names, which is worse.

The writer lands where the write was decided, or nowhere (`atomic_write`). A path is resolved
once, when the permission decision is made (`real_path`: a symlinked file is written where it
points, as documented above); from then on nothing is followed again. The writer opens the
directories of that resolution one component at a time from `/` with `O_NOFOLLOW |
O_DIRECTORY`, creates the temporary file and renames it relative to the last one's descriptor
(`dir_fd`), so a directory that a background command swaps for a symlink between the check and
the write is refused instead of followed (`WriteRefused`, an OSError with a message the model can
act on). Just before the replace, the decided path is walked again the same way and must lead to
the very directory the descriptor holds (a rename of a directory carries its descriptor along),
and that path is checked against the protected surfaces (tools/shared/protected.py): a write that
would land on a protected path the decision did not see as protected is refused. What is left is
a directory renamed between that last look and the rename itself, which needs write access to the
protected directory's parent. `remove_file` deletes the same way.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import os
import secrets
import stat
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ipy_agent.contract.decision import WriteDecision

from .protected import protected_reason

__all__ = [
    "UTF32_BOMS",
    "TextFile",
    "WriteRefused",
    "atomic_write",
    "decode_text",
    "encode_text",
    "read_text_file",
    "real_path",
    "remove_file",
    "undecodable_reason",
]

# The umask, read once: os.umask can only be read by setting it, and setting it to 0 even briefly
# lets another thread create world-writable files. Nothing in this process changes it later.
_UMASK = os.umask(0o022)
os.umask(_UMASK)

UTF32_BOMS = (codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)


@dataclass(frozen=True, kw_only=True)
class TextFile:
    # With "\n" line endings when every line ended in CRLF; a file mixing CRLF and LF keeps its
    # "\r\n"s in the text (newline "\n"), so writing it back changes no line's ending.
    text: str
    encoding: str  # "utf-8", "utf-8-sig", "utf-16-le", "utf-16-be"
    newline: str  # "\n" or "\r\n"


def decode_text(raw: bytes) -> TextFile:
    """Decode bytes by their BOM (UTF-16 LE/BE, UTF-8 with BOM) or as UTF-8.

    Raises UnicodeDecodeError for bytes that are none of those (and for UTF-32, by its BOM): the
    caller reports the file as binary or in an unsupported encoding rather than corrupting it on
    write. `undecodable_reason` words the error.
    """
    if raw.startswith(UTF32_BOMS):
        # Checked first: the UTF-32 LE BOM begins with the UTF-16 LE one.
        raise UnicodeDecodeError("utf-32", raw[:4], 0, 4, "UTF-32 text is not supported")
    if raw.startswith(codecs.BOM_UTF16_LE):
        encoding, body = "utf-16-le", raw[2:]
    elif raw.startswith(codecs.BOM_UTF16_BE):
        encoding, body = "utf-16-be", raw[2:]
    elif raw.startswith(codecs.BOM_UTF8):
        encoding, body = "utf-8-sig", raw[3:]
    else:
        encoding, body = "utf-8", raw
    text = body.decode("utf-8" if encoding == "utf-8-sig" else encoding)
    del body
    # CRLF only when every line ending is CRLF: one stray CRLF in an LF file must not turn the
    # whole file into CRLF on the next edit. (Counting scans without copying.)
    crlf = text.count("\r\n")
    newline = "\r\n" if crlf and crlf == text.count("\n") else "\n"
    if newline == "\r\n":
        text = text.replace("\r\n", "\n")
    return TextFile(text=text, encoding=encoding, newline=newline)


def undecodable_reason(exc: UnicodeDecodeError) -> str:
    """Why `decode_text` failed, for a message: UTF-32, or where the bad bytes are."""
    if exc.encoding == "utf-32":
        return "it is UTF-32 text (by its byte-order mark), which these tools do not read or write"
    return f"undecodable bytes at byte {exc.start}"


def encode_text(text: str, *, encoding: str = "utf-8", newline: str = "\n") -> bytes:
    """The inverse of `decode_text`: restore line endings and BOM."""
    if newline != "\n":
        text = text.replace("\r\n", "\n").replace("\n", newline)
    if encoding == "utf-16-le":
        return codecs.BOM_UTF16_LE + text.encode("utf-16-le")
    if encoding == "utf-16-be":
        return codecs.BOM_UTF16_BE + text.encode("utf-16-be")
    if encoding == "utf-8-sig":
        return codecs.BOM_UTF8 + text.encode("utf-8")
    return text.encode("utf-8")


def read_text_file(path: str | Path) -> TextFile:
    with open(path, "rb") as f:
        return decode_text(f.read())


def real_path(path: str | Path) -> Path:
    """The file a path really names, through symlinks: what is read, recorded and written."""
    return Path(os.path.realpath(path))


class WriteRefused(OSError):
    """The write would land somewhere other than where it was decided: nothing was written."""


# Directories are opened to be walked through, never read: O_PATH (Linux) needs only search
# permission, as a path-based open would, so a directory mode 0711 on the way still works.
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = getattr(os, "O_PATH", os.O_RDONLY) | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW
_BY_DESCRIPTOR = {os.open, os.mkdir, os.rename, os.unlink, os.stat, os.readlink} <= os.supports_dir_fd


def atomic_write(
    path: str | Path,
    data: bytes,
    *,
    make_parents: bool = False,
    decision: WriteDecision | None = None,
    why_protected: Callable[[str], str | None] = protected_reason,
    before_replace: Callable[[Path], None] | None = None,
) -> None:
    """Write `data` to `path` so readers see the old content or the new, never a mix, and only
    where the write was decided.

    `path` is the resolution to write (absolute, symlinks already resolved: see `real_path`);
    nothing on it is followed. `decision` is what the permission decision saw (None: this call
    is the decision, made on `path` now); `why_protected` the protected-surface check (the run's
    `write_checker` for a tool; by name only by default). Refused with `WriteRefused`, nothing
    written, when `path` is not where the decision's path led, when a directory on it or the
    file itself is now a symlink, or when the path reached is protected and the decision did not
    see it so. `before_replace(final)` runs after those checks, just before the file changes; it
    may raise to refuse.

    The temporary file lives in the target's directory (os.replace is atomic only within one
    filesystem). An existing file's mode bits are kept; a new file gets the umask's default. A
    file with more than one hard link is rewritten in place instead, without the atomicity (see
    the module docstring for why).
    """
    target = Path(os.path.abspath(path))
    if decision is None:
        decision = WriteDecision(real=target, protected=why_protected(str(target)))
    if not _same_path(target, decision.real):
        raise WriteRefused(
            f"Nothing was written: the path now leads to {str(target)!r}, but this write was checked for "
            f"{str(decision.real)!r}. A directory or link on the way changed after the check (a background "
            "command?). Look at what changed it; call the tool again if the write is still wanted, and it "
            "will be checked for where the path leads now."
        )
    if not _BY_DESCRIPTOR:  # no dir_fd (Windows): by path, with the checks that need no descriptor
        _check_protected(target, decision, why_protected)
        _write_by_path(target, data, make_parents=make_parents, before_replace=before_replace)
        return
    with _directory(target, make_parents=make_parents) as folder:
        _write_in(folder, target, data, decision, why_protected, before_replace)


def remove_file(path: str | Path) -> None:
    """Delete the file `path` names (absolute, symlinks resolved) without following a symlink
    on the way: a directory swapped for one since is refused (`WriteRefused`). A file already
    gone is not an error."""
    target = Path(os.path.abspath(path))
    if not _BY_DESCRIPTOR:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(target)
        return
    try:
        with _directory(target, make_parents=False, done="removed") as folder:
            _refuse_link(folder, target, done="removed")
            os.unlink(target.name, dir_fd=folder)
    except FileNotFoundError:
        return


@contextlib.contextmanager
def _directory(target: Path, *, make_parents: bool, done: str = "written") -> Iterator[int]:
    """A descriptor of `target`'s directory, opened from / one component at a time without
    following a symlink (made when missing, with `make_parents`)."""
    fd = os.open("/", _DIR_FLAGS)
    try:
        here = Path("/")
        for part in target.parent.parts[1:]:
            here = here / part
            try:
                inner = _open_inner(fd, part, here, target, done)
            except FileNotFoundError:
                if not make_parents:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o777, dir_fd=fd)
                inner = _open_inner(fd, part, here, target, done)
            os.close(fd)
            fd = inner
        yield fd
    finally:
        os.close(fd)


def _open_inner(fd: int, part: str, here: Path, target: Path, done: str) -> int:
    try:
        return os.open(part, _DIR_FLAGS, dir_fd=fd)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
            _refuse_link(fd, here, target, done=done)
        raise


def _refuse_link(fd: int, here: Path, target: Path | None = None, *, done: str = "written") -> None:
    """Raise WriteRefused when `here` (named in the directory `fd`) is a symlink."""
    try:
        st = os.stat(here.name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if not stat.S_ISLNK(st.st_mode):
        return
    try:
        points = f" (to {os.readlink(here.name, dir_fd=fd)!r})"
    except OSError:
        points = ""
    on_the_way = f" on the way to {str(target)!r}" if target is not None and target != here else ""
    raise WriteRefused(
        f"Nothing was {done}: {str(here)!r}{on_the_way} is now a symbolic link{points}, not what it was "
        "when this write was checked. The file tools never follow a link that appears after the check: "
        "something changed it meanwhile (a background command?). Look at what did; if the write is still "
        "wanted, name the file by its real location and call the tool again."
    )


def _write_in(
    folder: int,
    target: Path,
    data: bytes,
    decision: WriteDecision,
    why_protected: Callable[[str], str | None],
    before_replace: Callable[[Path], None] | None,
) -> None:
    name = target.name
    _refuse_link(folder, target)
    try:
        st = os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        st = None
    if st is not None and st.st_nlink > 1 and stat.S_ISREG(st.st_mode):
        _last_look(folder, target, decision, why_protected)
        if before_replace is not None:
            before_replace(target)
        _write_in_place(folder, name, data)
        return
    mode = stat.S_IMODE(st.st_mode) if st is not None else 0o666 & ~_UMASK
    tmp, fd = _temporary(folder, name)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
            os.fchmod(f.fileno(), mode)
        _last_look(folder, target, decision, why_protected)  # after the slow part
        if before_replace is not None:
            before_replace(target)
        os.replace(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=folder)
        raise


def _temporary(folder: int, name: str) -> tuple[str, int]:
    """A new file `.<name>.<random>.tmp` in `folder` (mode 0600 until written), and its descriptor."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW
    for _ in range(100):
        tmp = f".{name}.{secrets.token_hex(4)}.tmp"
        try:
            return tmp, os.open(tmp, flags, 0o600, dir_fd=folder)
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no unused temporary file name", name)


def _last_look(folder: int, target: Path, decision: WriteDecision, why_protected: Callable[[str], str | None]) -> None:
    """Just before the file changes: the directory descriptor must still be the directory the
    decided path names (walked again, following nothing; a rename carries the descriptor along
    with the directory), and that path must not be protected unless the decision saw it so."""
    try:
        with _directory(target, make_parents=False) as again:
            named = os.fstat(again)
    except (FileNotFoundError, NotADirectoryError):
        named = None
    held = os.fstat(folder)
    if named is None or (named.st_dev, named.st_ino) != (held.st_dev, held.st_ino):
        raise WriteRefused(
            f"Nothing was written: the folder of {str(target)!r} was moved while the file was being written"
            f"{_where(folder)}. Something changed it meanwhile (a background command?). Look at what did; call "
            "the tool again if the write is still wanted."
        )
    _check_protected(target, decision, why_protected)


def _where(folder: int) -> str:
    """Where a directory descriptor is now, for a message (Linux's /proc; elsewhere unsaid)."""
    with contextlib.suppress(OSError):
        return f" (to {os.readlink(f'/proc/self/fd/{folder}')!r})"
    return ""


def _same_path(a: Path, b: Path) -> bool:
    left, right = os.path.normpath(a), os.path.normpath(b)
    if sys.platform == "darwin":  # case-insensitive by default
        return left.casefold() == right.casefold()
    return left == right


def _check_protected(target: Path, decision: WriteDecision, why_protected: Callable[[str], str | None]) -> None:
    why = why_protected(str(target))
    if why is not None and decision.protected is None:
        raise WriteRefused(
            f"Nothing was written: {str(target)!r}: {why}, and the permission check of this write did not see "
            "it as such. Call the tool again so that the write is checked (and confirmed) as what it is."
        )


def _write_by_path(
    target: Path, data: bytes, *, make_parents: bool, before_replace: Callable[[Path], None] | None
) -> None:
    import tempfile

    if make_parents:
        target.parent.mkdir(parents=True, exist_ok=True)
    try:
        st = os.stat(target)
    except FileNotFoundError:
        st = None
    mode = stat.S_IMODE(st.st_mode) if st is not None else 0o666 & ~_UMASK
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        if before_replace is not None:
            before_replace(target)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _write_in_place(folder: int, name: str, data: bytes) -> None:
    # No O_TRUNC: that would empty the file before the new bytes are ready; this way it is cut
    # only after everything has been written over it.
    fd = os.open(name, os.O_WRONLY | _NOFOLLOW, dir_fd=folder)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
        f.truncate()
        f.flush()
        os.fsync(f.fileno())
