"""Minimal PNG writing (RGB, 8-bit) and contact sheets, with numpy and zlib only."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np


def _chunk(kind: bytes, data: bytes) -> bytes:
    return (struct.pack(">I", len(data)) + kind + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))


def encode_png(rgb: np.ndarray) -> bytes:
    """PNG bytes of an ``(H, W, 3)`` uint8 image.

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
            + _chunk(b"IDAT", zlib.compress(rows.tobytes(), 6)) + _chunk(b"IEND", b""))


def write_png(path: str | Path, rgb: np.ndarray) -> None:
    """Write an ``(H, W, 3)`` uint8 image to ``path``."""
    Path(path).write_bytes(encode_png(rgb))


def contact_sheet(rows: Sequence[Sequence[np.ndarray]], pad_px: int = 2) -> np.ndarray:
    """Tile images into one: one row per sequence (e.g. per robot), left to right.

    Missing images (shorter rows) are left dark.
    """
    frames = [f for row in rows for f in row]
    if not frames:
        raise ValueError("no frames to tile")
    h, w, _ = frames[0].shape
    ncols = max(len(row) for row in rows)
    sheet = np.full((len(rows) * (h + pad_px) + pad_px, ncols * (w + pad_px) + pad_px, 3),
                    32, np.uint8)
    for i, row in enumerate(rows):
        for j, frame in enumerate(row):
            y, x = pad_px + i * (h + pad_px), pad_px + j * (w + pad_px)
            sheet[y:y + h, x:x + w] = frame
    return sheet
