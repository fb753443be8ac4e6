"""The DB18's step, the map's edges and the state records as compiled loops (numba):
for one robot a numpy step costs tens of microseconds of call overhead, a compiled
one about one; for thousands both are bound by the arithmetic.

:func:`step` writes lib-dt-modeling's expressions in their order (and its libm ``sin``
and ``cos``), so that the two round alike (``tests/sim/test_db18.py``).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=True, error_model="numpy")
def _clip(v: float) -> float:
    if v < -1.0:
        return -1.0
    if v > 1.0:
        return 1.0
    return v


@njit(cache=True, error_model="numpy")
def step(dt: float, left: np.ndarray, right: np.ndarray, p: np.ndarray, s: np.ndarray,
         radius: float, distance: float) -> None:  # pragma: no cover (compiled)
    """Advance every robot by ``dt`` under the duties ``left``, ``right`` (n,).

    ``p`` (n, 10): u1, u2, u3, w1, w2, w3, ua_r, ua_l, wa_r, wa_l. ``s`` (n, 11), in
    place: x, y, r00, r10, r01, r11, u, w, du, axis_l, axis_r."""
    for i in range(s.shape[0]):
        mr, ml = _clip(right[i]), _clip(left[i])
        u0, w0 = s[i, 6], s[i, 7]
        du = (-p[i, 0] * u0 - p[i, 1] * w0 + p[i, 2] * w0 * w0
              + p[i, 6] * mr + p[i, 7] * ml)
        dw = (-p[i, 3] * w0 - p[i, 4] * u0 - p[i, 5] * u0 * w0
              + p[i, 8] * mr - p[i, 9] * ml)
        u = u0 + dt * du
        w = w0 + dt * dw
        angle = dt * w
        dist = dt * u
        if abs(angle) < 1e-8:
            cos_d, sin_d, bx, by = 1.0, 0.0, dist, 0.0
        else:
            sin_d, cos_d = math.sin(angle), math.cos(angle)
            scale = dist / angle
            bx, by = sin_d * scale, (1.0 - cos_d) * scale
        r00, r10, r01, r11 = s[i, 2], s[i, 3], s[i, 4], s[i, 5]
        s[i, 0] = s[i, 0] + r00 * bx + r01 * by
        s[i, 1] = s[i, 1] + r10 * bx + r11 * by
        s[i, 2] = r00 * cos_d + r01 * sin_d
        s[i, 4] = -r00 * sin_d + r01 * cos_d
        s[i, 3] = r10 * cos_d + r11 * sin_d
        s[i, 5] = -r10 * sin_d + r11 * cos_d
        s[i, 6], s[i, 7], s[i, 8] = u, w, du
        half = 0.5 * distance * w
        s[i, 9] = s[i, 9] + (u - half) / radius * dt
        s[i, 10] = s[i, 10] + (u + half) / radius * dt


@njit(cache=True, error_model="numpy")
def keep_inside(s: np.ndarray, discs: np.ndarray, r: float, width: float,
                height: float) -> bool:  # pragma: no cover (compiled)
    """Push each robot (state ``s`` as :func:`step`'s) whose discs (``discs`` (k, 2),
    robot frame) reach past the map's edges back in, and zero its forward speed if it
    drove into the edge. Whether any robot was pushed."""
    pushed = False
    for i in range(s.shape[0]):
        x, y, c, sn = s[i, 0], s[i, 1], s[i, 2], s[i, 3]
        lo_x = lo_y = hi_x = hi_y = 0.0
        for k in range(discs.shape[0]):
            dx, dy = discs[k, 0], discs[k, 1]
            px, py = x + c * dx - sn * dy, y + sn * dx + c * dy
            lo_x, lo_y = max(lo_x, r - px), max(lo_y, r - py)
            hi_x, hi_y = max(hi_x, px + r - width), max(hi_y, py + r - height)
        push_x, push_y = lo_x - hi_x, lo_y - hi_y
        if push_x != 0.0 or push_y != 0.0:
            pushed = True
            s[i, 0], s[i, 1] = x + push_x, y + push_y
            if s[i, 6] * (c * push_x + sn * push_y) < 0.0:
                s[i, 6] = 0.0
    return pushed


@njit(cache=True, error_model="numpy")
def fill_states(s: np.ndarray, z: float, moving: bool, radius: float, distance: float,
                out: np.ndarray) -> None:  # pragma: no cover (compiled)
    """The state records' floats (``out`` (n, 20), zeroed) from state ``s``."""
    for i in range(s.shape[0]):
        c, sn, u, w = s[i, 2], s[i, 3], s[i, 6], s[i, 7]
        yaw = math.atan2(sn, c)
        out[i, 0], out[i, 1], out[i, 2] = s[i, 0], s[i, 1], z
        out[i, 5], out[i, 6] = math.sin(yaw / 2), math.cos(yaw / 2)
        out[i, 7], out[i, 8] = u * c, u * sn
        out[i, 12] = w
        if moving:
            across = u * w
            out[i, 13] = c * s[i, 8] - sn * across
            out[i, 14] = sn * s[i, 8] + c * across
        out[i, 16], out[i, 17] = s[i, 9], s[i, 10]
        half = 0.5 * distance * w
        out[i, 18] = (u - half) / radius
        out[i, 19] = (u + half) / radius
