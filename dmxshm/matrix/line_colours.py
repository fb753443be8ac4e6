"""The colours Duckietown's lane-marking detector looks for, to check that an image
shows its markings as that detector sees them.

dt-core's ``line_detector`` (its ``default.yaml``: duckietown/dt-core, ``packages/
line_detector/config/line_detector_node/default.yaml``, daffy and ente alike) converts
the camera's BGR image to HSV with OpenCV (H 0-179, S and V 0-255) and keeps, for each
colour, the pixels in its ranges (``cv2.inRange``, bounds included) before it finds
edges and segments:

=======  ======================================================
white    H 0-180, S 0-100, V 150-255
yellow   H 25-45, S 140-255, V 100-255
red      H 0-15 or 165-180, S 140-255, V 100-255
=======  ======================================================

:func:`hsv` is OpenCV's 8-bit RGB to HSV conversion (rounded to the nearest unit, where
OpenCV's fixed-point arithmetic may differ by one);
:func:`classes` applies the ranges.
"""

from __future__ import annotations

import numpy as np

RANGES: dict[str, tuple[tuple[tuple[int, int, int], tuple[int, int, int]], ...]] = {
    "white": (((0, 0, 150), (180, 100, 255)),),
    "yellow": (((25, 140, 100), (45, 255, 255)),),
    "red": (((0, 140, 100), (15, 255, 255)), ((165, 140, 100), (180, 255, 255))),
}
"""dt-core's line detector's default colour ranges (HSV low, high), per colour."""


def hsv(rgb: np.ndarray) -> np.ndarray:
    """``rgb`` (..., 3) uint8 as OpenCV's 8-bit HSV (H 0-179 in 2-degree steps)."""
    c = rgb.astype(np.float64)
    r, g, b = c[..., 0], c[..., 1], c[..., 2]
    v = c.max(axis=-1)
    span = v - c.min(axis=-1)
    s = np.where(v > 0, span * 255.0 / np.where(v > 0, v, 1.0), 0.0)
    safe = np.where(span > 0, span, 1.0)
    h = np.where(v == r, 60.0 * (g - b) / safe,
                 np.where(v == g, 120.0 + 60.0 * (b - r) / safe, 240.0 + 60.0 * (r - g) / safe))
    h = np.where(span > 0, h, 0.0)
    h = np.where(h < 0, h + 360.0, h)
    return np.stack([np.rint(h / 2.0), np.rint(s), v], axis=-1).astype(np.int64)


def classes(rgb: np.ndarray) -> dict[str, np.ndarray]:
    """Each colour's mask of the pixels of ``rgb`` (..., 3) uint8 that dt-core's line
    detector keeps for it."""
    x = hsv(rgb)
    out = {}
    for name, ranges in RANGES.items():
        mask = np.zeros(x.shape[:-1], bool)
        for low, high in ranges:
            mask |= ((x >= np.array(low)) & (x <= np.array(high))).all(axis=-1)
        out[name] = mask
    return out
