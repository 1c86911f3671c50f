"""A bar chart as a PNG, with the standard library only (zlib): the benchmark draws its own.

`bar_chart(path, series, ...)` draws each series as bars side by side per x position, values in
[0, 1], with grid lines at each quarter and a dashed line at `mark`. No text: the caption in
RESULTS.md says what the axes are.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

__all__ = ["bar_chart"]

Color = tuple[int, int, int]
WHITE: Color = (255, 255, 255)
GRID: Color = (225, 225, 225)
AXIS: Color = (90, 90, 90)
MARK: Color = (200, 40, 40)


def bar_chart(
    path: Path,
    series: list[tuple[list[float], Color]],
    *,
    mark: float | None = None,
    bar: int = 6,
    gap: int = 4,
    height: int = 240,
    margin: int = 12,
) -> None:
    """Write the chart to `path`: one group of bars per x position, one bar per series."""
    count = max(len(values) for values, _ in series)
    group = bar * len(series) + gap
    width = margin * 2 + group * count
    full = height + margin * 2
    pixels = [[WHITE] * width for _ in range(full)]

    def y_of(value: float) -> int:
        return margin + round((1 - min(max(value, 0.0), 1.0)) * (height - 1))

    for quarter in (0.25, 0.5, 0.75, 1.0):
        row = pixels[y_of(quarter)]
        for x in range(margin, width - margin):
            row[x] = GRID
    for s, (values, color) in enumerate(series):
        for i, value in enumerate(values):
            left = margin + i * group + s * bar
            for y in range(y_of(value), margin + height):
                for x in range(left, left + bar - 1):
                    pixels[y][x] = color
    if mark is not None:
        row = pixels[y_of(mark)]
        for x in range(margin, width - margin):
            if (x // 4) % 2 == 0:
                row[x] = MARK
    for x in range(margin, width - margin):
        pixels[margin + height - 1][x] = AXIS
    for y in range(margin, margin + height):
        pixels[y][margin - 1] = AXIS
    raw = b"".join(b"\x00" + bytes(c for px in row for c in px) for row in pixels)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, full, 8, 2, 0, 0, 0)
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
    )
