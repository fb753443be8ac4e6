"""Slot dtypes and values shared by the ring tests.

Each value is built from an integer key and carries it, so a test can tell
which write a read returned and that the slot is whole (no mix of two writes).
"""

from __future__ import annotations

import numpy as np

FIELD_DT = np.dtype([("x", "<u8")])
FRAME_SHAPE = (120, 160, 3)  # height x width x RGB
FRAME_DT = np.dtype([("frame", np.uint8, FRAME_SHAPE)])
PAYLOADS = {"field": FIELD_DT, "frame": FRAME_DT}


def make_item(dtype: np.dtype, key: int) -> np.ndarray:
    """A 0-d value of ``dtype`` that encodes ``key``."""
    item = np.zeros((), dtype=dtype)
    fill(item, key)
    return item


def fill(view: np.ndarray, key: int) -> None:
    """Write the value of ``key`` into a 0-d view (a slot or a fresh item)."""
    if view.dtype == FIELD_DT:
        view["x"] = key
        return
    flat = view["frame"].reshape(-1)
    flat[:] = key % 251
    flat[:8] = np.frombuffer(np.uint64(key).tobytes(), dtype=np.uint8)


def key_of(item: np.ndarray) -> int:
    """The key a value encodes; asserts that a frame is whole."""
    if item.dtype == FIELD_DT:
        return int(item["x"])
    flat = item["frame"].reshape(-1)
    key = int(np.frombuffer(flat[:8].tobytes(), dtype="<u8")[0])
    assert (flat[8:] == key % 251).all(), f"frame of key {key} is not whole"
    return key
