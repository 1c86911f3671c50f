"""Where a secret's value occurs in a text: in the forms a shell prints it, whatever the layout.

A program the model runs can print a secret it reads in many ways: as it is, reversed (`rev`),
in another case or rot13 (`tr`), with a character class deleted (`tr -d`), in hex (`xxd -p`,
`od -An -tx1`, byte-swapped 16-bit words by `od -x` and `hexdump`), in base64 or base32, and
laid out any way: wrapped (`fold`, `base64`), one character per column with offsets (`od -c`,
`od -b`), in a dump's hex and text columns (`xxd`, `hexdump -C`), or cut into pieces printed
apart (`cut -c1-10 f; cut -c11- f`).

So a secret is looked for by value, not by layout:

- **Forms.** Each secret's forms are built once per environment (`secret_forms`): the value as
  `rev` and `tr` leave it (as it is, reversed, rot13, upper and lower case, with its digits, its
  punctuation or one punctuation character deleted), and each of those in hex (as it is and as
  16-bit words at both alignments), base64 (standard and URL-safe) and base32, at every
  alignment a value can have inside a longer encoded text (only the characters that depend on
  the value alone), each encoding also reversed.
- **Views.** A text is compared in canonical views: ASCII letters in lower case and whitespace
  removed, so line breaks, columns and case do not matter. The text itself is one view. When it
  holds dump lines (a line that starts with an offset, or `od -An` columns), two more are made
  from those lines: the hex columns without offsets, and the characters (a dump's text column,
  `od -c` and `od -b` decoded). One more leaves punctuation out too (`_SEPARATORS`). Each view
  keeps a map back to the text.
- **Pieces.** Every run of a view that is part of a form and carries `FRAGMENT` or more
  characters of the secret (10 characters of a form as it is, 20 of hex, 12 of base64, 15 of
  base32: with the characters at its ends, 10 decode) is redacted: a whole form, or a piece of one printed apart from the rest. Runs are
  found through 8-byte grams: every 8-byte window of every form is a key of one dict, and a view
  is probed at offsets 0, 3 and 6 of every 8 bytes (three C-level passes over the text, whatever
  the number of secrets and forms), so a run of 10 bytes always holds a probed gram. A probe
  that hits is extended both ways byte by byte against the form. Forms shorter than their
  least run (the value of a secret of 8 or 9 characters, some of its encodings) are looked for
  whole.

Not covered: anything that needs a key or a lost piece to read back (encryption, a hash, a
compressed stream), a secret printed in pieces of fewer than `FRAGMENT` characters (one
character per call, or `cut -c1-9` and so on), arithmetic on its bytes (`od -d`, xor), encodings
of encodings (`base64 | base64`), percent-encoding, UTF-16, a shifted alphabet (`tr a-z b-za`),
and escapes other than those of `od -c`.
"""

from __future__ import annotations

import base64
import bisect
import codecs
import re
import string
import sys
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

__all__ = ["FRAGMENT", "Found", "SecretIndex", "canonical", "secret_forms"]

FRAGMENT = 10  # bytes of a view: the shortest piece of a form that is redacted on its own
_GRAM = 8  # bytes per probe: one unsigned 64-bit integer
_SHIFTS = (0, 3, 6)  # probe offsets within every 8 bytes; the largest gap (3) + _GRAM - 1 = FRAGMENT
_LOWER = bytes.maketrans(string.ascii_uppercase.encode(), string.ascii_lowercase.encode())
_SPACE = b" \t\r\n\v\f"
# Left out by one more view: a secret's characters printed with separators between them (`sed
# 's/./&,/g'`, `list(s)`, JSON, `paste -sd,`, `printf %q`) read as its form with punctuation deleted.
_SEPARATORS = _SPACE + string.punctuation.encode("ascii")


def canonical(text: str) -> bytes:
    """`text` as UTF-8 with ASCII letters in lower case and ASCII whitespace removed."""
    return text.encode("utf-8", "surrogatepass").translate(_LOWER, _SPACE)


def _canonical(text: str, deleted: bytes) -> bytes:  # `canonical`, or with `deleted` left out
    return canonical(text) if deleted is _SPACE else text.encode("utf-8", "surrogatepass").translate(_LOWER, deleted)


def _pieces_of(data: bytes, alphabet_bits: int, block: int) -> list[str]:
    """The characters of `data`'s base64 (6 bits) or base32 (5 bits) encoding that depend on
    `data` alone, at each alignment it can have inside a longer encoded text."""
    encode = base64.b64encode if alphabet_bits == 6 else base64.b32encode
    out = []
    for pad in range(block):
        encoded = encode(b"\0" * pad + data).decode("ascii")
        start, end = -(-8 * pad // alphabet_bits), 8 * (pad + len(data)) // alphabet_bits
        out.append(encoded[start:end])
    return out


def _swapped(data: bytes) -> str:
    """Hex of `data` as 16-bit little-endian words print it (`od -x`, `hexdump`)."""
    even = data[: len(data) // 2 * 2]
    out = bytearray(even)
    out[0::2], out[1::2] = even[1::2], even[0::2]
    return out.hex()


def secret_forms(value: str) -> list[tuple[str, str]]:
    """(text, how) of the forms a program may print `value` in, `how` empty for the value itself:
    each way `rev` and `tr` change it (reversed, rot13, upper and lower case, digits, punctuation
    or one punctuation character deleted), as it is and in each encoding, and each encoding
    reversed (`base64 -w0 | rev`)."""
    shown = {
        "": value,
        "reversed": value[::-1],
        "rot13": codecs.encode(value, "rot13"),
        "upper case": value.upper(),
        "lower case": value.lower(),
        "digits deleted": "".join(c for c in value if not c.isdigit()),
        "punctuation deleted": "".join(c for c in value if c.isalnum()),
    }
    for c in sorted(set(value)):
        if c in string.punctuation:
            shown[f"{c!r} deleted"] = value.replace(c, "")
    forms: list[tuple[str, str]] = []
    for how, text in shown.items():
        forms.append((text, how))
        for encoded, encoding in _encodings(text.encode("utf-8", "surrogatepass")):
            named = f"{how}, {encoding}" if how else encoding
            forms += [(encoded, named), (encoded[::-1], f"{named}, reversed")]
    return list(dict.fromkeys(forms))


def _encodings(data: bytes) -> list[tuple[str, str]]:
    """(text, encoding) of `data` in hex (as it is and as 16-bit words at both alignments),
    base64 (both alphabets) and base32, at every alignment."""
    out = [(data.hex(), "hex"), (_swapped(data), "hex"), (_swapped(data[1:]), "hex")]
    for piece in _pieces_of(data, 6, 3):
        out += [(piece, "base64"), (piece.translate(_URLSAFE), "base64")]
    out += [(piece, "base32") for piece in _pieces_of(data, 5, 5)]
    return out


_URLSAFE = str.maketrans("+/", "-_")
# An encoding prints more characters than the secret has: a piece of one is long enough on its
# own when a reader can decode FRAGMENT characters of the secret from it (5 bytes of hex would
# match any word). Hex: 2 characters a byte. Base64 and base32: the characters that depend on the
# secret alone, and one at each end that holds up to 4 more of its bits (6 * 12 + 8 >= 80 bits;
# 5 * 15 + 8 >= 80 bits).
_LEAST = {"hex": 2 * FRAGMENT, "base64": 12, "base32": 15}


@dataclass(frozen=True)
class Found:
    """A span of the text that held (part of) a secret, and what replaces it."""

    start: int
    end: int
    label: str


@dataclass(frozen=True)
class _Form:
    data: bytes  # canonical
    name: str
    how: str
    least: int  # the shortest run of `data` redacted on its own: FRAGMENT characters of the secret

    @classmethod
    def of(cls, data: bytes, name: str, how: str) -> _Form:
        encoding = next((e for e in _LEAST if e in how), "")
        return cls(data, name, how, _LEAST.get(encoding, FRAGMENT))

    def label(self, whole: bool) -> str:
        how = self.how if whole else f"part, {self.how}" if self.how else "part"
        return f"[redacted ${self.name}{f' ({how})' if how else ''}]"


def _char_at(text: str, begin: int, end: int, offset: int, deleted: bytes = _SPACE) -> int:
    """The character of text[begin:end] that byte `offset` of its canonical bytes came from: the
    last position whose canonical prefix is no longer than `offset` (a binary search)."""
    lo, hi = begin, end - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if len(_canonical(text[begin:mid], deleted)) <= offset:
            lo = mid
        else:
            hi = mid - 1
    return lo


@dataclass
class _View:
    """Canonical bytes made of pieces of the text, with the map back. A piece copied from the
    text (`exact`) maps character by character; a decoded one (an `od -c` token) maps to its
    whole token."""

    text: str
    data: bytes = b""
    starts: list[int] = field(default_factory=list)  # offset in `data` of each piece
    spans: list[tuple[int, int, bool]] = field(default_factory=list)  # (start, end, exact) in the text
    deleted: bytes = _SPACE  # what the canonical bytes leave out

    @classmethod
    def whole(cls, text: str, deleted: bytes = _SPACE) -> _View:
        """The whole text: its canonical bytes at once (one C-level pass); its pieces (blocks of
        the text) only when a span is mapped back."""
        return cls(text, _canonical(text, deleted), deleted=deleted)

    def to_text(self, start: int, end: int) -> tuple[int, int]:
        """The span of the text that bytes [start, end) of the view came from."""
        if not self.starts:
            self._blocks()
        return self._at(start, last=False), self._at(end - 1, last=True)

    def _at(self, offset: int, *, last: bool) -> int:
        piece = bisect.bisect_right(self.starts, offset) - 1
        begin, end, exact = self.spans[piece]
        if not exact:
            return end if last else begin
        return _char_at(self.text, begin, end, offset - self.starts[piece], self.deleted) + (1 if last else 0)

    def _blocks(self, size: int = 2048) -> None:
        at = 0
        for begin in range(0, len(self.text), size):
            end = min(begin + size, len(self.text))
            length = len(_canonical(self.text[begin:end], self.deleted))
            if length:
                self.starts.append(at)
                self.spans.append((begin, end, True))
                at += length


class _ViewBuilder:
    def __init__(self, text: str) -> None:
        self.parts: list[bytes] = []
        self.view = _View(text)
        self.size = 0

    def copy(self, start: int, end: int) -> None:
        """Text [start, end) as it is (canonical)."""
        self._piece(canonical(self.view.text[start:end]), start, end, exact=True)

    def decoded(self, data: bytes, start: int, end: int) -> None:
        self._piece(data.translate(_LOWER, _SPACE), start, end, exact=False)

    def _piece(self, data: bytes, start: int, end: int, *, exact: bool) -> None:
        if not data:
            return
        self.view.starts.append(self.size)
        self.view.spans.append((start, end, exact))
        self.parts.append(data)
        self.size += len(data)

    def build(self) -> _View:
        self.view.data = b"".join(self.parts)
        return self.view


_NON_SPACE = re.compile(r"[^ \t\r\n\v\f]+")

# Dump lines: the offset that starts them, then the columns.
_DUMP_HINT = re.compile(r"\n(?:[0-9a-fA-F]{7,8}[: \n]| +\S{1,3} +\S{1,3} +\S{1,3}(?: |$))", re.MULTILINE)
_XXD = re.compile(r"[0-9a-f]{7,9}: ((?:[0-9a-f]+ )*[0-9a-f]+)(?:  +(.*))?")
_HEXDUMP_C = re.compile(r"[0-9a-f]{8}((?:  ?[0-9a-f]{2})+) +\|(.*)\|")
# `od` and `hexdump` after the offset (`od -An` has none): characters, escapes and octal bytes
# of one to three characters, or hex words.
_OFFSET_LINE = re.compile(r"(?:[0-9a-f]{7,8})?((?: +(?:\S{1,3}|[0-9a-f]{4}|[0-9a-f]{8}))+) *")
_HEX_TOKEN = re.compile(r"[0-9a-f]{2}|[0-9a-f]{4}|[0-9a-f]{8}")
_DUMP_START = frozenset("0123456789abcdef ")
_OD_ESCAPES = {"\\0": 0, "\\a": 7, "\\b": 8, "\\f": 12, "\\n": 10, "\\r": 13, "\\t": 9, "\\v": 11, "\\\\": 92}


def _dump_views(text: str) -> list[_View]:
    """The hex columns and the characters of the dump lines in `text` (none when it has none)."""
    if not _DUMP_HINT.search("\n" + text):
        return []
    hexes, chars = _ViewBuilder(text), _ViewBuilder(text)
    pos = 0
    for line in text.split("\n"):
        start, pos = pos, pos + len(line) + 1
        if not line or line[0] not in _DUMP_START:
            continue
        line = line.rstrip("\r")
        if m := _XXD.fullmatch(line):
            hexes.copy(start + m.start(1), start + m.end(1))
            if m.group(2) is not None:
                chars.copy(start + m.start(2), start + m.end(2))
        elif m := _HEXDUMP_C.fullmatch(line):
            hexes.copy(start + m.start(1), start + m.end(1))
            chars.copy(start + m.start(2), start + m.end(2))
        elif m := _OFFSET_LINE.fullmatch(line):
            _od_columns(text, start + m.start(1), start + m.end(1), hexes, chars)
    return [v for v in (hexes.build(), chars.build()) if v.data]


def _od_columns(text: str, start: int, end: int, hexes: _ViewBuilder, chars: _ViewBuilder) -> None:
    """An `od` or `hexdump` line after its offset: hex bytes or words go to the hex view; the
    characters, escapes and octal bytes of `od -c` and `od -b` are decoded into the characters."""
    tokens = list(_NON_SPACE.finditer(text, start, end))
    if all(_HEX_TOKEN.fullmatch(t.group()) for t in tokens):
        hexes.copy(start, end)
        return
    decoded: list[tuple[bytes, int, int]] = []
    for t in tokens:
        token = t.group()
        if len(token) == 1:
            data = token.encode("utf-8", "surrogatepass")
        elif token in _OD_ESCAPES:
            data = bytes([_OD_ESCAPES[token]])
        elif len(token) == 3 and all(c in "01234567" for c in token) and int(token, 8) < 256:
            data = bytes([int(token, 8)])
        elif token == "**":  # a multi-byte character's continuation: shown whole before it
            continue
        else:
            return  # not a character dump (`od -d`, a line of prose that starts with a hex word)
        decoded.append((data, t.start(), t.end()))
    for data, begin, end_ in decoded:
        chars.decoded(data, begin, end_)


class SecretIndex:
    """Every form of every secret, as 8-byte grams in one set; built once per environment."""

    def __init__(self, secrets: Iterable[tuple[str, str]]) -> None:
        forms: dict[bytes, _Form] = {}
        for name, value in secrets:
            for text, how in secret_forms(value):
                data = canonical(text)
                if len(data) >= 8:
                    forms.setdefault(data, _Form.of(data, name, how))
        self.forms = tuple(forms.values())
        self.short = tuple(f for f in self.forms if len(f.data) < f.least)
        # gram -> (form, offset) of each place it occurs: a probe that hits is extended from there
        self.grams: dict[int, list[tuple[_Form, int]]] = {}
        for form in self.forms:
            for i in range(len(form.data) - _GRAM + 1):
                gram = int.from_bytes(form.data[i : i + _GRAM], sys.byteorder)
                self.grams.setdefault(gram, []).append((form, i))

    def __bool__(self) -> bool:
        return bool(self.forms)

    def find(self, text: str) -> list[Found]:
        """The spans of `text` that hold a form of a secret or a piece of one, merged, in order."""
        if not self.forms:
            return []
        views = [_View.whole(text), *_dump_views(text)]
        separated = _View.whole(text, _SEPARATORS)
        if _SEPARATORS is not _SPACE and len(separated.data) < len(
            views[0].data
        ):  # the text has punctuation to leave out
            views.append(separated)
        found: list[Found] = []
        for view in views:
            found += self._in_view(view)
        return _merged(found)

    def _in_view(self, view: _View) -> list[Found]:
        data = view.data
        runs: list[tuple[int, int, _Form, bool]] = []
        for form in self.short:
            at = data.find(form.data)
            while at >= 0:
                runs.append((at, at + len(form.data), form, True))
                at = data.find(form.data, at + 1)
        covered = 0  # the end of the runs found so far (hits come in order)
        for at, gram in sorted(self._probe_hits(data)):
            if at + _GRAM <= covered:
                continue
            found = self._extend(data, at, self.grams[gram])
            runs += found
            covered = max([covered, *(e for _, e, _, _ in found)])
        return [Found(*view.to_text(s, e), form.label(whole)) for s, e, form, whole in runs]

    def _probe_hits(self, data: bytes) -> Iterator[tuple[int, int]]:
        """(offset, gram) of each probe of `data` that is a gram of a form."""
        grams = self.grams.keys()
        for shift in _SHIFTS:
            probes = data[shift:]
            words = array("Q", probes[: len(probes) // _GRAM * _GRAM])
            if grams.isdisjoint(words):
                continue
            yield from ((shift + _GRAM * i, w) for i, w in enumerate(words) if w in grams)

    @staticmethod
    def _extend(data: bytes, at: int, places: list[tuple[_Form, int]]) -> list[tuple[int, int, _Form, bool]]:
        """The runs around the gram at `at` that match a form there and are long enough alone."""
        out: list[tuple[int, int, _Form, bool]] = []
        for form, o in places:
            left = 0
            while left < o and left < at and data[at - left - 1] == form.data[o - left - 1]:
                left += 1
            right = 0
            limit = min(len(form.data) - o - _GRAM, len(data) - at - _GRAM)
            while right < limit and data[at + _GRAM + right] == form.data[o + _GRAM + right]:
                right += 1
            if left + _GRAM + right >= form.least:
                whole = left == o and o + _GRAM + right == len(form.data)
                out.append((at - left, at + _GRAM + right, form, whole))
        return out


def _merged(found: list[Found]) -> list[Found]:
    """Overlapping spans as one, labelled by the longest (a whole form before a part of one)."""
    out: list[Found] = []
    for f in sorted(found, key=lambda f: (f.start, -(f.end - f.start), "(part" in f.label)):
        if out and f.start < out[-1].end:
            last = out[-1]
            if f.end > last.end:
                out[-1] = Found(last.start, f.end, last.label)
            continue
        out.append(f)
    return out
