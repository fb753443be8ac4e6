"""The world without Bullet's contacts between robots, for many worlds of R robots at
once (compiled): :meth:`PlanarWorld._resolve <dmxshm.sim.planar.PlanarWorld._resolve>`
(the robots pushed out of each other and out past the map's edges, and stopped where
they drove into a contact), :meth:`PlanarWorld._contacts
<dmxshm.sim.planar.PlanarWorld._contacts>` (which robots touch) and the time of
flight against the other robots' footprints (:meth:`PlanarWorld._rays
<dmxshm.sim.planar.PlanarWorld._rays>`), on a map without objects.

Each kernel writes the numpy code's expressions in their order (numpy's ``hypot``
and ``sqrt`` are libm's, as numba's), so that the floats are the same
(``tests/sim/test_planar_kernels.py`` compares them on random and overlapping
robots). The state ``s`` is :class:`~dmxshm.sim.db18.DB18`'s (rows of x, y, r00,
r10, r01, r11, u, w, ...); world ``w`` holds its rows ``w * R`` to ``w * R + R - 1``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=True, error_model="numpy")
def _centres(s: np.ndarray, lo: int, robots: int, discs: np.ndarray,
             out: np.ndarray) -> None:  # pragma: no cover (compiled)
    """:func:`~dmxshm.sim.footprints.robot_discs` of rows ``lo`` to ``lo + robots - 1``:
    ``out`` (robots * K, 2), disc ``k`` of robot ``a`` at ``a * K + k``."""
    k_n = discs.shape[0]
    for a in range(robots):
        x, y, c, sn = s[lo + a, 0], s[lo + a, 1], s[lo + a, 2], s[lo + a, 3]
        for k in range(k_n):
            dx, dy = discs[k, 0], discs[k, 1]
            out[a * k_n + k, 0] = x + c * dx - sn * dy
            out[a * k_n + k, 1] = y + sn * dx + c * dy


@njit(cache=True, error_model="numpy")
def _depth(centres: np.ndarray, i: int, j: int, r: float) -> tuple[float, float, float]:
    """How deep disc ``i`` reaches into disc ``j`` (both of radius ``r``), and the unit
    normal from ``j`` towards ``i`` (:func:`~dmxshm.sim.footprints.disc_penetrations`)."""
    rx = centres[i, 0] - centres[j, 0]
    ry = centres[i, 1] - centres[j, 1]
    dist = math.hypot(rx, ry)
    if dist == 0.0:
        nx, ny = 1.0, 0.0
    else:
        nx, ny = rx / dist, ry / dist
    return (r + r) - dist, nx, ny


@njit(cache=True, error_model="numpy")
def resolve(s: np.ndarray, robots: int, discs: np.ndarray, r: float, width: float,
            height: float, walls: bool, iterations: int) -> None:  # pragma: no cover
    """Every world's robots pushed apart and back inside, ``s`` in place (the module
    docstring): at most ``iterations`` rounds per world, each robot going half way out
    of the deepest overlap with each other robot, and its forward speed zeroed where
    the whole push is against its motion."""
    k_n = discs.shape[0]
    n_d = robots * k_n
    centres = np.empty((n_d, 2))
    push = np.empty((robots, 2))
    total = np.empty((robots, 2))
    for w in range(s.shape[0] // robots):
        lo = w * robots
        total[:] = 0.0
        for _ in range(iterations):
            _centres(s, lo, robots, discs, centres)
            anything = False
            for a in range(robots):
                sx = sy = 0.0
                for b in range(robots):
                    # the deepest of the K x K disc pairs (numpy's argmax: the first);
                    # against itself none (-inf: the first pair's normal, (1, 0))
                    best, bx, by = -np.inf, 1.0, 0.0
                    if b != a:
                        for ka in range(k_n):
                            for kb in range(k_n):
                                d, nx, ny = _depth(centres, a * k_n + ka, b * k_n + kb, r)
                                if (ka == 0 and kb == 0) or d > best or (
                                        d != d and best == best):
                                    best, bx, by = d, nx, ny
                    dd = best if best > 0.0 else 0.0
                    if b == 0:
                        sx, sy = bx * dd, by * dd
                    else:
                        sx += bx * dd
                        sy += by * dd
                px = 0.0 + 0.5 * sx
                py = 0.0 + 0.5 * sy
                if walls:
                    lo_x = lo_y = hi_x = hi_y = 0.0
                    for k in range(k_n):
                        cx, cy = centres[a * k_n + k, 0], centres[a * k_n + k, 1]
                        vx, vy = max(r - cx, 0.0), max(r - cy, 0.0)
                        ux, uy = max(cx + r - width, 0.0), max(cy + r - height, 0.0)
                        if k == 0:
                            lo_x, lo_y, hi_x, hi_y = vx, vy, ux, uy
                        else:
                            lo_x, lo_y = max(lo_x, vx), max(lo_y, vy)
                            hi_x, hi_y = max(hi_x, ux), max(hi_y, uy)
                    px += lo_x - hi_x
                    py += lo_y - hi_y
                push[a, 0], push[a, 1] = px, py
                if px != 0.0 or py != 0.0:
                    anything = True
            if not anything:
                break
            for a in range(robots):
                s[lo + a, 0] = s[lo + a, 0] + push[a, 0]
                s[lo + a, 1] = s[lo + a, 1] + push[a, 1]
                total[a, 0] = total[a, 0] + push[a, 0]
                total[a, 1] = total[a, 1] + push[a, 1]
        for a in range(robots):
            u = s[lo + a, 6]
            if u * (s[lo + a, 2] * total[a, 0] + s[lo + a, 3] * total[a, 1]) < 0.0:
                s[lo + a, 6] = 0.0


@njit(cache=True, error_model="numpy")
def touching(s: np.ndarray, robots: int, discs: np.ndarray, r: float, gap: float,
             out: np.ndarray) -> None:  # pragma: no cover (compiled)
    """``out[w, a, b]`` (a < b; the rest False): robots ``a`` and ``b`` of world ``w``
    are within ``gap`` of each other (:meth:`PlanarWorld._contacts
    <dmxshm.sim.planar.PlanarWorld._contacts>`' robot pairs)."""
    k_n = discs.shape[0]
    centres = np.empty((robots * k_n, 2))
    for w in range(s.shape[0] // robots):
        _centres(s, w * robots, robots, discs, centres)
        for a in range(robots):
            for b in range(robots):
                hit = False
                if a < b:
                    for ka in range(k_n):
                        for kb in range(k_n):
                            d = _depth(centres, a * k_n + ka, b * k_n + kb, r)[0]
                            if d > -gap:
                                hit = True
                out[w, a, b] = hit


@njit(cache=True, error_model="numpy")
def tof_ranges(s: np.ndarray, records: np.ndarray, robots: int, live: np.ndarray,
               discs: np.ndarray, r: float, mount_x: float, mount_y: float,
               max_m: float, out: np.ndarray) -> None:  # pragma: no cover (compiled)
    """``out[i]``: the time of flight of row ``i`` (where ``live[i]``) against the other
    robots of its world (their discs from ``s``; the ray from the state record
    ``records[i]``'s pose), ``max_m`` where it meets none."""
    k_n = discs.shape[0]
    centres = np.empty((robots * k_n, 2))
    for w in range(s.shape[0] // robots):
        lo = w * robots
        if not live[lo:lo + robots].any():
            continue
        _centres(s, lo, robots, discs, centres)
        for a in range(robots):
            i = lo + a
            if not live[i]:
                continue
            x, y, z, qw = records[i, 3], records[i, 4], records[i, 5], records[i, 6]
            h0 = 1 - 2 * (y * y + z * z)
            h1 = 2 * (x * y + qw * z)
            norm = math.sqrt(h0 * h0 + h1 * h1)
            h0, h1 = h0 / norm, h1 / norm
            ox = records[i, 0] + h0 * mount_x + -h1 * mount_y
            oy = records[i, 1] + h1 * mount_x + h0 * mount_y
            best = max_m
            for j in range(robots * k_n):
                if j // k_n == a:
                    continue
                rx, ry = ox - centres[j, 0], oy - centres[j, 1]
                b = rx * h0 + ry * h1
                cc = rx * rx + ry * ry - r * r
                disc = b * b - cc
                t = -b - math.sqrt(max(disc, 0.0))
                if disc >= 0.0 and cc > 0.0 and t >= 0.0 and t < best:
                    best = t
            out[i] = min(best, max_m)
