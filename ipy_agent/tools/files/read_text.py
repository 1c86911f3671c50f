"""Reading a range of lines from a text file of any size, with memory that stays flat.

Small files (up to WHOLE_FILE_BYTES) are read whole: one read, decoded with `decode_text` (BOM,
UTF-16, CRLF), and the bytes are kept so the read state can hash the whole file even after a
ranged read. Larger files are streamed: newlines are counted in fixed-size binary blocks to
reach the first wanted line, then lines are read with a bounded `readline`, so neither a far
offset nor one gigantic line can pull the file into memory. Block starts are kept as a line
index, so paging on through the same file does not count from the top again; a far range of
a file over 16 MB is found by the system's `tail`, which skips lines several times faster.
"""

from __future__ import annotations

import codecs
import io
import itertools
import os
import shutil
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import IO, BinaryIO

from ipy_agent.contract.tool import ToolError
from ipy_agent.tools.shared.fileio import UTF32_BOMS, decode_text

__all__ = [
    "MAX_LINE_CHARS",
    "MAX_OUTPUT_TOKENS",
    "MAX_UNRANGED_BYTES",
    "TextRead",
    "binary_kind",
    "estimate_tokens",
    "quarter_tokens",
    "read_text",
]

MAX_LINE_CHARS = 2000
MAX_OUTPUT_TOKENS = 25_000
MAX_UNRANGED_BYTES = 256 * 1024
WHOLE_FILE_BYTES = 8 * 1024 * 1024
COUNT_REST_BYTES = 64 * 1024 * 1024  # past this, a ranged read does not count the lines after it
TAIL_MIN_BYTES = 16 * 1024 * 1024  # from this size a far offset is found by `tail` (see _read_via_tail)
_BLOCK = 4 * 1024 * 1024
_LINE_CHUNK = 64 * 1024
_KEEP_BYTES = MAX_LINE_CHARS * 4  # enough bytes for MAX_LINE_CHARS characters of UTF-8


@dataclass(frozen=True, kw_only=True)
class TextRead:
    lines: list[str]  # the lines of the range, long ones already cut
    total_lines: int | None  # None when the rest of a huge file was not counted
    raw: bytes | None  # the whole file when it was small enough to load, for the read state
    bytes_after: int | None = 0  # bytes after the range, when total_lines is None (None: not known)


def quarter_tokens(text: str) -> int:
    """Estimated tokens of `text`, times four: about 4 ASCII characters make a token, but a
    character of Chinese, Japanese, Korean (or most other non-ASCII) text is about one token."""
    if text.isascii():
        return len(text)
    ascii_chars = len(text.encode("ascii", "ignore"))
    return ascii_chars + 4 * (len(text) - ascii_chars)


def estimate_tokens(text: str) -> int:
    return (quarter_tokens(text) + 3) // 4


def read_text(f: BinaryIO, name: str, st: os.stat_result, *, start: int, limit: int, unranged: bool) -> TextRead:
    """Lines `start` (1-based) to `start + limit - 1` of the open binary file `f`, at position 0."""
    # st_size decides, but the read is bounded anyway: /proc files report 0 and files grow.
    data = f.read(WHOLE_FILE_BYTES + 1) if st.st_size <= WHOLE_FILE_BYTES else b""
    if st.st_size <= WHOLE_FILE_BYTES and len(data) <= WHOLE_FILE_BYTES:
        if unranged and len(data) > MAX_UNRANGED_BYTES:
            # st_size said small (a /proc file says 0) but the content is not.
            raise ToolError(
                f"{name!r} holds {len(data) // 1024} KB, over the {MAX_UNRANGED_BYTES // 1024} KB limit for reading a whole file. Read part of it with offset and limit."
            )
        try:
            text = decode_text(data).text
        except UnicodeDecodeError as exc:
            raise ToolError(_undecodable(name, exc)) from None
        lines = text.split("\n")
        if lines[-1] == "":
            lines.pop()
        # A CRLF line of a file that mixes endings keeps its "\r" in the text; don't show it.
        chosen = [_cut(line.removesuffix("\r")) for line in lines[start - 1 : start - 1 + limit]]
        return TextRead(lines=chosen, total_lines=len(lines), raw=data)
    del data
    f.seek(0)
    bom = f.read(3)
    if bom[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE):
        f.seek(0)
        return _read_utf16(f, name, start, limit)
    f.seek(3 if bom == codecs.BOM_UTF8 else 0)
    return _read_utf8_stream(f, name, st, start, limit)


def _read_utf8_stream(f: BinaryIO, name: str, st: os.stat_result, start: int, limit: int) -> TextRead:
    if (via_tail := _read_via_tail(f, name, st, start, limit)) is not None:
        return via_tail
    seen, ends_with_newline = _skip_lines(f, start - 1)
    if seen < start - 1:
        return TextRead(lines=[], total_lines=seen + (0 if ends_with_newline else 1), raw=None)
    chosen = _decode_lines(_iter_lines(f), name, start, limit)
    after = max(st.st_size - f.tell(), 0)
    if after > COUNT_REST_BYTES:
        return TextRead(lines=chosen, total_lines=None, raw=None, bytes_after=after)
    rest, ends_with_newline = _skip_lines(f, None, lines_before=start - 1 + len(chosen))
    last_open = after > 0 and not ends_with_newline
    return TextRead(lines=chosen, total_lines=start - 1 + len(chosen) + rest + (1 if last_open else 0), raw=None)


def _decode_lines(lines: Iterator[tuple[bytes, bool]], name: str, start: int, limit: int) -> list[str]:
    chosen: list[str] = []
    for number, (raw, cut) in enumerate(itertools.islice(lines, limit), start=start):
        try:
            line = codecs.getincrementaldecoder("utf-8")().decode(raw, final=not cut)
        except UnicodeDecodeError as exc:
            raise ToolError(_undecodable(name, exc, line=number)) from None
        line = line[:-1] if line.endswith("\n") else line
        line = line[:-1] if line.endswith("\r") else line
        chosen.append(_cut(line, known=not cut, forced=cut))
    return chosen


def _read_via_tail(f: BinaryIO, name: str, st: os.stat_result, start: int, limit: int) -> TextRead | None:
    """A far range of a very big file, first time: let the system's `tail` find it.

    Counting newlines in Python runs at about 1.7 GB/s (`bytes.count` is a plain byte loop);
    `tail -n +N` skips lines with memchr at several times that. None means "do it in Python": no tail, a file small
    enough, a line index that already covers the range, a file replaced meanwhile, or an offset
    past the end (then the Python scan counts the lines to say how many there are).
    """
    pos = f.tell()
    if start <= 1 or st.st_size < TAIL_MIN_BYTES or _INDEX.nearest(_LineIndex.key(f), pos, start - 1) is not None:
        return None
    tail = shutil.which("tail")
    if tail is None:
        return None
    try:
        # tail gets a descriptor of its own (a shared one would move our buffered offset); it
        # must be the very file we stat-ed, not whatever the path names now.
        fd = os.open(name, os.O_RDONLY)
    except OSError:
        return None
    try:
        own = os.fstat(fd)
        if (own.st_dev, own.st_ino) != (st.st_dev, st.st_ino):
            return None
        os.lseek(fd, pos, os.SEEK_SET)
        proc = subprocess.Popen([tail, "-n", f"+{start}"], stdin=fd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        assert proc.stdout is not None
        chosen = _decode_lines(_iter_lines(proc.stdout), name, start, limit)
        more = bool(proc.stdout.read(1))
    finally:
        proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
    if not chosen:
        return None
    if more:
        return TextRead(lines=chosen, total_lines=None, raw=None, bytes_after=None)
    return TextRead(lines=chosen, total_lines=start - 1 + len(chosen), raw=None)


class _LineIndex:
    """Where every scanned block of a big file starts, in lines and bytes, for a few files.

    The model pages through a large log with offset/limit; each page would otherwise count the
    newlines from the top again. A checkpoint per 4 MB block costs a few KB per GB, and an entry
    is only used for the same file at the same size and mtime, so an edit invalidates it.
    """

    def __init__(self, files: int = 8) -> None:
        self._files = files
        self._points: dict[tuple[int, ...], dict[int, int]] = {}  # key -> {byte offset: lines before}

    @staticmethod
    def key(f: BinaryIO) -> tuple[int, ...] | None:
        try:
            st = os.fstat(f.fileno())
        except (OSError, ValueError, io.UnsupportedOperation):
            return None
        return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)

    def nearest(self, key: tuple[int, ...] | None, pos: int, lines: int | None) -> tuple[int, int] | None:
        """The furthest checkpoint after `pos` with at most `lines` newlines before it."""
        points = self._points.get(key) if key else None
        if not points:
            return None
        best = None
        for offset, before in points.items():
            # Strictly fewer: the wanted newline must lie after the checkpoint, to find its end.
            if offset > pos and (lines is None or before < lines) and (best is None or offset > best[0]):
                best = (offset, before)
        return best

    def add(self, key: tuple[int, ...] | None, offset: int, before: int) -> None:
        if key is None:
            return
        if key not in self._points and len(self._points) >= self._files:
            self._points.pop(next(iter(self._points)))
        self._points.setdefault(key, {})[offset] = before


_INDEX = _LineIndex()


def _skip_lines(f: BinaryIO, count: int | None, lines_before: int = 0) -> tuple[int, bool]:
    """Move past `count` newlines (all of them when None), counting in blocks.

    Returns how many were passed (fewer than `count` at end of file) and whether the last byte
    read was a newline, which decides if a final unterminated line exists. Reading releases the
    GIL and counting does not, so a helper thread reads the next block while this one is
    counted: that overlap is what keeps a scan of a 1 GB file near the speed of `tail`.
    `lines_before` is the number of newlines before the current position; with it, block starts
    go into `_INDEX` and the next read of the same file starts from the nearest one.
    """
    if count == 0:
        return 0, True
    seen, last = 0, b"\n"
    pos = f.tell()
    key = _LineIndex.key(f)
    jump = _INDEX.nearest(key, pos, None if count is None else lines_before + count)
    if jump is not None:
        pos, seen = jump[0], jump[1] - lines_before
        f.seek(pos)
    buffers = (bytearray(_BLOCK), bytearray(_BLOCK))
    readinto = f.readinto  # type: ignore[attr-defined]  # every caller passes a buffered binary file
    with ThreadPoolExecutor(1, thread_name_prefix="ipy_agent-read") as pool:
        turn = 0
        pending = pool.submit(readinto, buffers[turn])
        while n := pending.result():
            block = buffers[turn]
            turn ^= 1
            pending = pool.submit(readinto, buffers[turn])
            _INDEX.add(key, pos, lines_before + seen)
            found = block.count(b"\n", 0, n)
            if count is not None and seen + found >= count:
                idx = -1
                for _ in range(count - seen):
                    idx = block.index(b"\n", idx + 1, n)
                pending.result()  # the read ahead must finish before the position moves
                f.seek(pos + idx + 1)
                return count, True
            seen += found
            pos += n
            last = bytes(block[n - 1 : n])
    return seen, last == b"\n"


def _iter_lines(f: IO[bytes]) -> Iterator[tuple[bytes, bool]]:
    """Yield (bytes, was_cut) per line; a line longer than _KEEP_BYTES keeps only its head."""
    while True:
        chunk = f.readline(_LINE_CHUNK)
        if not chunk:
            return
        if len(chunk) <= _KEEP_BYTES:
            # Shorter than the readline limit, so this is the whole line (or the unterminated last one).
            yield chunk, False
            continue
        head = chunk[:_KEEP_BYTES]
        while len(chunk) == _LINE_CHUNK and not chunk.endswith(b"\n"):
            chunk = f.readline(_LINE_CHUNK)
        yield head, True


def _read_utf16(f: BinaryIO, name: str, start: int, limit: int) -> TextRead:
    # Rare and large: decode as a stream. The wrapper is detached so `f` stays open for the caller.
    wrapper = io.TextIOWrapper(f, encoding="utf-16", newline="\n")
    try:
        lines = iter(wrapper)
        skipped = sum(1 for _ in itertools.islice(lines, start - 1))
        chosen = [_cut(line.rstrip("\n").removesuffix("\r")) for line in itertools.islice(lines, limit)]
        rest = sum(1 for _ in lines)
    except UnicodeDecodeError as exc:
        raise ToolError(_undecodable(name, exc)) from None
    finally:
        wrapper.detach()
    return TextRead(lines=chosen, total_lines=skipped + len(chosen) + rest, raw=None)


def _cut(line: str, known: bool = True, forced: bool = False) -> str:
    if len(line) <= MAX_LINE_CHARS and not forced:
        return line
    size = f" of {len(line):,}" if known else ""
    return f"{line[:MAX_LINE_CHARS]}[... line cut: first {MAX_LINE_CHARS:,}{size} characters shown]"


def _undecodable(name: str, exc: UnicodeDecodeError, line: int | None = None) -> str:
    where = f" on line {line}" if line else f" at byte {exc.start}"
    return (
        f"{name!r} is not UTF-8 or UTF-16 text (undecodable bytes{where}); it is binary or in a legacy encoding. "
        f"Read only shows text: convert it first (for example `iconv -f latin1 -t utf-8` in Bash) or inspect it with a tool for its format."
    )


# Magic numbers of common binary formats, with what to do instead of reading them as text.
_MAGIC: tuple[tuple[bytes, str, str], ...] = (
    (
        b"%PDF",
        "a PDF document",
        "Read does not show PDFs; extract the text in Bash (e.g. `pdftotext` if it is installed) and read that",
    ),
    (b"\x7fELF", "an ELF executable or library", "inspect it with `file` or `readelf` in Bash"),
    (b"MZ", "a Windows executable", "inspect it with `file` in Bash"),
    (
        b"PK\x03\x04",
        "a ZIP archive (or a format built on ZIP: docx, xlsx, jar, wheel)",
        "list it with `unzip -l` in Bash",
    ),
    (b"\x1f\x8b", "a gzip-compressed file", "look inside with `zcat ... | head` in Bash"),
    (b"BZh", "a bzip2-compressed file", "look inside with `bzcat ... | head` in Bash"),
    (b"\xfd7zXZ\x00", "an xz-compressed file", "look inside with `xzcat ... | head` in Bash"),
    (b"(\xb5/\xfd", "a zstd-compressed file", "look inside with `zstdcat ... | head` in Bash"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive", "list it with `7z l` in Bash if it is installed"),
    (b"SQLite format 3\x00", "an SQLite database", "query it with Python's sqlite3 module or the `sqlite3` shell"),
    (b"\x93NUMPY", "a NumPy array file", "load it with numpy.load in Python"),
    (b"PAR1", "a Parquet file", "load it with pandas or pyarrow in Python"),
    (b"\x89HDF\r\n\x1a\n", "an HDF5 file", "open it with h5py in Python"),
)


def binary_kind(head: bytes, path: Path) -> str | None:
    """A refusal message when the first bytes show a binary file, else None."""
    name = repr(str(path))
    if head.startswith(UTF32_BOMS):  # before the UTF-16 check: FF FE 00 00 starts like UTF-16 LE
        return (
            f"{name} is UTF-32 text (by its byte-order mark), which Read does not decode and Edit would corrupt. "
            "Convert it in Bash, e.g. `iconv -f UTF-32 -t UTF-8 FILE > FILE.utf8`, and read the copy."
        )
    for magic, what, advice in _MAGIC:
        if head.startswith(magic):
            return f"{name} is {what}, not text; {advice}."
    if head[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE):
        return None
    if b"\x00" in head:
        what = "a Python bytecode file" if path.suffix == ".pyc" else "a binary file (it contains NUL bytes)"
        return f"{name} is {what}; Read only shows text. Inspect it with a tool for its format via Bash (`file` names the format)."
    try:
        codecs.getincrementaldecoder("utf-8-sig")().decode(head, final=False)
    except UnicodeDecodeError as exc:
        return _undecodable(str(path), exc)
    return None
