"""The camera's exposure and pixel noise on an image, compiled (numba): what
:meth:`Noise.camera <dmxshm.matrix.noise.Noise.camera>` did in numpy (a lookup
table of the gain, the bank's frame rolled by a shift added, clipped to 0-255), in one
pass over the pixels, with the same integers (``tests/matrix/test_noise_kernels.py``
compares the two)."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, error_model="numpy")
def expose(image: np.ndarray, gain: float, frame: np.ndarray,
           shift: int) -> None:  # pragma: no cover (compiled)
    """``image`` (uint8 (h, w, c)) in place: each value ``v`` becomes
    ``clip(int16(clip(v * gain, 0, 255)) + frame[(row - shift) % h], 0, 255)``."""
    lut = np.empty(256, np.int16)
    for k in range(256):
        v = k * gain
        if v < 0.0:
            v = 0.0
        if v > 255.0:
            v = 255.0
        lut[k] = np.int16(v)
    h, w, c = image.shape
    for i in range(h):
        src = i - shift if i >= shift else i - shift + h
        for j in range(w):
            for ch in range(c):
                v16 = np.int16(lut[image[i, j, ch]] + frame[src, j, ch])
                if v16 < 0:
                    v16 = 0
                elif v16 > 255:
                    v16 = 255
                image[i, j, ch] = v16
