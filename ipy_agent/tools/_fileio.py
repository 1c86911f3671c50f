"""File reading and writing shared by the file tools: encodings, line endings, atomic writes.

Edits must give back a file the person recognises: a CRLF file stays CRLF, a UTF-8 file with a
BOM keeps its BOM, a UTF-16 file stays UTF-16. And a write that fails halfway must not leave a
truncated file, so every write goes to a temporary file in the same directory and replaces the
target in one `os.replace`, keeping the original's permission bits.
"""

from __future__ import annotations

import codecs
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["TextFile", "decode_text", "encode_text", "atomic_write", "read_text_file"]


@dataclass(frozen=True, kw_only=True)
class TextFile:
    text: str  # with "\n" line endings
    encoding: str  # "utf-8", "utf-8-sig", "utf-16-le", "utf-16-be"
    newline: str  # "\n" or "\r\n"
    raw: bytes


def decode_text(raw: bytes) -> TextFile:
    """Decode bytes by their BOM (UTF-16 LE/BE, UTF-8 with BOM) or as UTF-8.

    Raises UnicodeDecodeError for bytes that are none of those: the caller reports the file as
    binary or in an unsupported encoding rather than corrupting it on write.
    """
    if raw.startswith(codecs.BOM_UTF16_LE):
        encoding, body = "utf-16-le", raw[2:]
    elif raw.startswith(codecs.BOM_UTF16_BE):
        encoding, body = "utf-16-be", raw[2:]
    elif raw.startswith(codecs.BOM_UTF8):
        encoding, body = "utf-8-sig", raw[3:]
    else:
        encoding, body = "utf-8", raw
    text = body.decode("utf-8" if encoding == "utf-8-sig" else encoding)
    newline = "\r\n" if "\r\n" in text else "\n"
    if newline == "\r\n":
        text = text.replace("\r\n", "\n")
    return TextFile(text=text, encoding=encoding, newline=newline, raw=raw)


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


def atomic_write(path: str | Path, data: bytes, *, make_parents: bool = False) -> None:
    """Write `data` to `path` so readers see the old content or the new, never a mix.

    The temporary file lives in the target's directory (os.replace is atomic only within one
    filesystem). An existing file's mode bits are kept; a new file gets the umask's default.
    """
    target = Path(path)
    if make_parents:
        target.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode: int | None = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mode = None
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if mode is None:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
