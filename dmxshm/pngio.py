"""Minimal PNG writing and reading (RGB, 8-bit) and contact sheets, with numpy and zlib
only."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np


def _chunk(kind: bytes, data: bytes) -> bytes:
    return (struct.pack(">I", len(data)) + kind + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))


def encode_png(rgb: np.ndarray, level: int = 6) -> bytes:
    """PNG bytes of an ``(H, W, 3)`` uint8 image (``level``: zlib's, 0-9).

    Example:
        >>> encode_png(np.zeros((2, 3, 3), np.uint8))[:8]
        b'\\x89PNG\\r\\n\\x1a\\n'
    """
    img = np.ascontiguousarray(rgb, dtype=np.uint8)
    if img.ndim != 3 or img.shape[2] != 3:
        raise ValueError(f"expected an (H, W, 3) image, got shape {img.shape}")
    h, w, _ = img.shape
    rows = np.concatenate([np.zeros((h, 1), np.uint8), img.reshape(h, w * 3)], axis=1)
    header = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header)
            + _chunk(b"IDAT", zlib.compress(rows.tobytes(), level)) + _chunk(b"IEND", b""))


def decode_png(data: bytes) -> np.ndarray:
    """The ``(H, W, 3)`` uint8 image of PNG bytes as :func:`encode_png` writes them (8-bit
    RGB, no interlace, every row unfiltered): what a log's camera frames are.

    Raises:
        ValueError: not such a PNG (another writer's filters are not decoded here).

    Example:
        >>> img = np.arange(18, dtype=np.uint8).reshape(2, 3, 3)
        >>> bool((decode_png(encode_png(img)) == img).all())
        True
    """
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    at, idat, header = 8, [], b""
    while at + 8 <= len(data):
        (n,), kind = struct.unpack(">I", data[at:at + 4]), data[at + 4:at + 8]
        body = data[at + 8:at + 8 + n]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat.append(body)
        at += 12 + n
    if len(header) != 13 or header[8:] != bytes((8, 2, 0, 0, 0)):
        raise ValueError("not an 8-bit RGB PNG without interlace")
    w, h = struct.unpack(">II", header[:8])
    rows = np.frombuffer(zlib.decompress(b"".join(idat)), np.uint8)
    if rows.size != h * (1 + 3 * w):
        raise ValueError("a PNG whose image data does not fill its size")
    rows = rows.reshape(h, 1 + 3 * w)
    if rows[:, 0].any():
        raise ValueError("a PNG with filtered rows (not written by dmxshm)")
    return rows[:, 1:].reshape(h, w, 3).copy()


def write_png(path: str | Path, rgb: np.ndarray) -> None:
    """Write an ``(H, W, 3)`` uint8 image to ``path``."""
    Path(path).write_bytes(encode_png(rgb))


# A 3x5 pixel font for the labels of a contact sheet: digits and a few letters.
_GLYPHS = {
    "0": "111101101101111", "1": "010110010010111", "2": "111001111100111",
    "3": "111001111001111", "4": "101101111001001", "5": "111100111001111",
    "6": "111100111101111", "7": "111001001001001", "8": "111101111101111",
    "9": "111101111001111", "r": "000110101100100", "s": "000011110001110",
    "t": "010111010010011", ".": "000000000000010", " ": "000000000000000",
    "-": "000000111000000",
}
LABEL_PX = 7  # the height of a label strip: 5 pixel rows of text and a margin


def draw_text(img: np.ndarray, text: str, y: int, x: int, value: int = 230,
              width: int | None = None) -> None:
    """Write ``text`` (digits, ``r s t . -`` and spaces) into ``img`` at ``(y, x)``,
    3x5 pixels a character; what does not fit in ``width`` pixels (default: to
    the image's edge) is cut.

    Example:
        >>> img = np.zeros((5, 8, 3), np.uint8)
        >>> draw_text(img, "1", 0, 0)
        >>> (img[:, :3, 0] > 0).astype(int).tolist()
        [[0, 1, 0], [1, 1, 0], [0, 1, 0], [0, 1, 0], [1, 1, 1]]
    """
    for i, char in enumerate(text):
        glyph = np.array([int(b) for b in _GLYPHS.get(char, _GLYPHS[" "])], bool).reshape(5, 3)
        x0 = x + 4 * i
        right = img.shape[1] if width is None else min(img.shape[1], x + width)
        if x0 + 3 > right or y + 5 > img.shape[0]:
            return
        img[y:y + 5, x0:x0 + 3][glyph] = value


def contact_sheet(rows: Sequence[Sequence[np.ndarray]], pad_px: int = 2,
                  labels: Sequence[Sequence[str]] | None = None) -> np.ndarray:
    """Tile images into one: one row per sequence (e.g. per robot), left to right.

    Missing images (shorter rows) are left dark. With ``labels`` (one string
    per image, e.g. ``"r0 s120 t4.0"``: robot, step, simulated time), each
    image gets its label on a strip below it.
    """
    frames = [f for row in rows for f in row]
    if not frames:
        raise ValueError("no frames to tile")
    h, w, _ = frames[0].shape
    strip = LABEL_PX if labels is not None else 0
    ncols = max(len(row) for row in rows)
    sheet = np.full((len(rows) * (h + strip + pad_px) + pad_px,
                     ncols * (w + pad_px) + pad_px, 3), 32, np.uint8)
    for i, row in enumerate(rows):
        for j, frame in enumerate(row):
            y, x = pad_px + i * (h + strip + pad_px), pad_px + j * (w + pad_px)
            sheet[y:y + h, x:x + w] = frame
            if labels is not None and j < len(labels[i]):
                draw_text(sheet, labels[i][j], y + h + 1, x, width=w)
    return sheet
