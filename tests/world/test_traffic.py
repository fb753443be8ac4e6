"""What is ahead of a robot (dmxshm/world/traffic.py): the grid of static discs finds
exactly what a scan of every disc finds."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dmxshm.world.traffic import Discs, ahead


@settings(max_examples=40)
@given(st.integers(0, 2**32 - 1), st.integers(1, 12), st.integers(0, 400))
def test_the_grid_of_discs_finds_what_a_scan_of_all_finds(seed: int, robots: int,
                                                          objects: int) -> None:
    rng = np.random.default_rng(seed)
    poses = [(float(x), float(y), float(t)) for x, y, t in
             zip(rng.uniform(0, 3, robots), rng.uniform(0, 3, robots),
                 rng.uniform(-np.pi, np.pi, robots), strict=True)]
    discs = [(float(x), float(y), float(r), "cone") for x, y, r in
             zip(rng.uniform(-0.5, 3.5, objects), rng.uniform(-0.5, 3.5, objects),
                 rng.uniform(0.005, 0.4, objects), strict=True)]
    grid = Discs(discs)
    for i in range(robots):
        for look in (0.1, 0.2, 0.6):
            assert ahead(i, poses, grid, look) == ahead(i, poses, discs, look)


@settings(max_examples=40)
@given(st.integers(0, 2**32 - 1), st.integers(2, 16))
def test_the_robots_left_out_by_distance_could_not_have_been_ahead(seed: int,
                                                                   robots: int) -> None:
    import math

    from dmxshm.world.traffic import ROBOT_RADIUS_M, _gap, robot_centres

    rng = np.random.default_rng(seed)
    poses = [(float(x), float(y), float(t)) for x, y, t in
             zip(rng.uniform(0, 1.5, robots), rng.uniform(0, 1.5, robots),
                 rng.uniform(-np.pi, np.pi, robots), strict=True)]
    centres = robot_centres(poses)
    for i, (x, y, yaw) in enumerate(poses):
        for look in (0.1, 0.3):
            gaps = [(g, j) for j, (cx, cy) in enumerate(centres) if j != i and (
                g := _gap(x, y, math.cos(yaw), math.sin(yaw), cx, cy, ROBOT_RADIUS_M,
                          look)) is not None]
            found = ahead(i, poses, [], look)
            assert (found is None) == (not gaps)
            if gaps:
                assert found is not None and (found.gap_m, found.robot) == min(gaps)
