"""Where robots start: spaced-out poses on right-lane centres.

Candidates are the right-lane points at a quarter and three quarters of
every straight and curve centreline (never in an intersection), in both
directions of travel. A placement shuffles them with the caller's
``numpy.random.Generator`` and takes each one that is at least
:data:`MIN_START_SPACING_M` from every pose already taken; when a shuffle
leaves fewer than asked, another is drawn, up to :data:`START_TRIES`; if
none fits, the candidates are taken in their fixed order
(:func:`place_in_order`), which always fits a map's capacity. Given the same
generator state the result is always the same.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from dmxshm.world.lanes import Path

Pose = tuple[float, float, float]
"""``(x, y, yaw)``: m, m, rad counter-clockwise from east."""

MIN_START_SPACING_M = 0.35
"""Least distance between two start poses (a Duckiebot is about 0.2 m long)."""

START_TRIES = 20
"""Shuffles a placement tries before it gives up."""

FRACTIONS = (0.25, 0.75)
"""Where along each centreline the candidates lie."""


def lane_candidates(paths: Iterable[Path], lane_offset_m: float) -> list[Pose]:
    """Right-lane poses along ``paths``, both directions, in a fixed order.

    Example:
        >>> from dmxshm.world.lanes import Segment
        >>> [tuple(round(v, 3) for v in p) for p in lane_candidates([Segment(0, 0, 1, 0)], 0.1)]
        [(0.25, -0.1, 0.0), (0.25, 0.1, 3.142), (0.75, -0.1, 0.0), (0.75, 0.1, 3.142)]
    """
    out = []
    for path in paths:
        for fraction in FRACTIONS:
            px, py, yaw = path.point_at(fraction)
            for heading in (yaw, yaw + math.pi):
                # The right of heading h is the direction h - 90 deg.
                out.append((px + lane_offset_m * math.sin(heading),
                            py - lane_offset_m * math.cos(heading),
                            math.atan2(math.sin(heading), math.cos(heading))))
    return out


def place_in_order(candidates: list[Pose], n: int | None = None) -> list[Pose]:
    """Candidates in their fixed order, each one far enough from those taken, up to ``n``
    (None: as many as fit). Its length with ``n=None`` is a map's capacity.

    Example:
        >>> len(place_in_order([(0.0, 0.0, 0.0), (0.1, 0.0, 0.0), (1.0, 0.0, 0.0)]))
        2
    """
    taken: list[Pose] = []
    for x, y, yaw in candidates:
        if n is not None and len(taken) == n:
            break
        if all(math.hypot(x - tx, y - ty) >= MIN_START_SPACING_M for tx, ty, _ in taken):
            taken.append((x, y, yaw))
    return taken


def place(candidates: list[Pose], n: int, rng: np.random.Generator) -> list[Pose]:
    """Up to ``n`` candidates, pairwise at least :data:`MIN_START_SPACING_M` apart.

    Returns:
        ``n`` poses, or the largest placement found when ``n`` did not fit
        in :data:`START_TRIES` shuffles (the caller reports it).
    """
    best: list[Pose] = []
    for _ in range(START_TRIES):
        taken: list[Pose] = []
        for i in rng.permutation(len(candidates)):
            if len(taken) == n:
                break
            x, y, yaw = candidates[int(i)]
            if all(math.hypot(x - tx, y - ty) >= MIN_START_SPACING_M for tx, ty, _ in taken):
                taken.append((x, y, yaw))
        if len(taken) == n:
            return taken
        best = max(best, taken, key=len)
    in_order = place_in_order(candidates, n)
    return in_order if len(in_order) == n else best
