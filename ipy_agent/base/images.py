"""Images as the Messages API accepts them: media type by content, size and dimension limits.

Shared by Read (image files) and notebook rendering (image outputs), which is why it sits in
the bottom layer: both import it, neither imports the other's package for it. The media type is taken
from the bytes, not the file name: a `.png` that is really a JPEG would otherwise be sent with
the wrong type and the whole request rejected. The API refuses an image over about 5 MB of
base64 or over 8000 pixels on a side; we check before sending, because a rejected image fails
the entire next request, not just this tool call. No imaging library is a dependency, so an
image over the limits is refused with a message rather than downscaled.
"""

from __future__ import annotations

import struct

__all__ = [
    "IMAGE_SUFFIXES",
    "MAX_IMAGE_BASE64",
    "MAX_IMAGE_SIDE",
    "base64_len",
    "image_dimensions",
    "image_problem",
    "sniff_image",
]

IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp"})
MAX_IMAGE_BASE64 = 5 * 1024 * 1024
MAX_IMAGE_SIDE = 8000


def sniff_image(head: bytes) -> str | None:
    """The media type of an image the API accepts, judged by its first bytes; None otherwise."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def image_dimensions(data: bytes, media_type: str) -> tuple[int, int] | None:
    """(width, height) read from the header, or None when the header is not understood."""
    try:
        if media_type == "image/png":
            return struct.unpack(">II", data[16:24])
        if media_type == "image/gif":
            return struct.unpack("<HH", data[6:10])
        if media_type == "image/webp":
            return _webp_dimensions(data)
        if media_type == "image/jpeg":
            return _jpeg_dimensions(data)
    except (struct.error, IndexError):
        return None
    return None


def _webp_dimensions(data: bytes) -> tuple[int, int] | None:
    chunk = data[12:16]
    if chunk == b"VP8 ":
        w, h = struct.unpack("<HH", data[26:30])
        return w & 0x3FFF, h & 0x3FFF
    if chunk == b"VP8L":
        b = data[21:25]
        return 1 + (b[0] | (b[1] & 0x3F) << 8), 1 + (b[1] >> 6 | b[2] << 2 | (b[3] & 0x0F) << 10)
    if chunk == b"VP8X":
        return 1 + int.from_bytes(data[24:27], "little"), 1 + int.from_bytes(data[27:30], "little")
    return None


def _jpeg_dimensions(data: bytes) -> tuple[int, int] | None:
    # Walk the marker segments to the first start-of-frame; C4, C8 and CC are not frames.
    i = 2
    while i + 9 < len(data):
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker == 0xFF:
            i += 1
            continue
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            h, w = struct.unpack(">HH", data[i + 5 : i + 9])
            return w, h
        (length,) = struct.unpack(">H", data[i + 2 : i + 4])
        i += 2 + length
    return None


def base64_len(nbytes: int) -> int:
    return 4 * ((nbytes + 2) // 3)


def image_problem(nbytes: int, dims: tuple[int, int] | None) -> str | None:
    """Why the API would refuse this image, in words; None when it is within the limits."""
    encoded = base64_len(nbytes)
    if encoded > MAX_IMAGE_BASE64:
        return (
            f"it is {nbytes / 1e6:.1f} MB ({encoded / 1e6:.1f} MB as base64), over the API's limit of "
            f"{MAX_IMAGE_BASE64 / 1e6:.1f} MB of base64 per image"
        )
    if dims is not None and max(dims) > MAX_IMAGE_SIDE:
        return f"it is {dims[0]}x{dims[1]} pixels, over the API's limit of {MAX_IMAGE_SIDE} pixels per side"
    return None
