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
"""

from __future__ import annotations

import codecs
import contextlib
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "UTF32_BOMS",
    "TextFile",
    "atomic_write",
    "decode_text",
    "encode_text",
    "read_text_file",
    "real_path",
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


def atomic_write(path: str | Path, data: bytes, *, make_parents: bool = False) -> None:
    """Write `data` to `path` so readers see the old content or the new, never a mix.

    The temporary file lives in the target's directory (os.replace is atomic only within one
    filesystem). An existing file's mode bits are kept; a new file gets the umask's default.
    `path` should be a real path (see `real_path`). A file with more than one hard link is
    rewritten in place instead, without the atomicity (see the module docstring for why).
    """
    target = Path(path)
    if make_parents:
        target.parent.mkdir(parents=True, exist_ok=True)
    try:
        st = os.stat(target)
    except FileNotFoundError:
        st = None
    if st is not None and st.st_nlink > 1 and stat.S_ISREG(st.st_mode):
        _write_in_place(target, data)
        return
    mode = stat.S_IMODE(st.st_mode) if st is not None else 0o666 & ~_UMASK
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _write_in_place(target: Path, data: bytes) -> None:
    # "r+b", not "wb": opening with O_TRUNC would empty the file before the new bytes are ready;
    # this way it is cut only after everything has been written over it.
    with open(target, "r+b") as f:
        f.write(data)
        f.truncate()
        f.flush()
        os.fsync(f.fileno())
