"""The compiled contacts of many worlds (:mod:`dmxshm.sim.planar_kernels`) against the
world's own numpy code (:class:`~dmxshm.sim.planar.PlanarWorld`), float for float, on
robots drawn close together (most overlapping) and near the map's edges."""

from __future__ import annotations

import numpy as np
import pytest

from dmxshm.matrix.sensors import TimeOfFlight
from dmxshm.sim import footprints as fp
from dmxshm.sim import planar_kernels as pk
from dmxshm.sim.planar import CONTACT_DISTANCE_M, PUSH_ITERATIONS, PlanarWorld

DISCS = np.array(fp.ROBOT_DISCS, float)


def crowded(world: PlanarWorld, rng: np.random.Generator) -> None:
    """Robots dropped within a robot's length of each other, some past the map's
    edges, moving either way."""
    n = world.num_robots
    w, h = world.road_map.size_m
    centre = rng.uniform([0.0, 0.0], [w, h])
    if rng.random() < 0.3:  # at an edge or a corner
        centre = rng.choice([0.0, 0.05], 2) * np.array([w, h]) * rng.choice([0, 1], 2)
    xy = centre + rng.normal(0.0, 0.12, (n, 2))
    yaw = rng.uniform(-np.pi, np.pi, n)
    s = world.model._s
    s[:, 0], s[:, 1] = xy[:, 0], xy[:, 1]
    s[:, 2], s[:, 3], s[:, 4], s[:, 5] = np.cos(yaw), np.sin(yaw), -np.sin(yaw), np.cos(yaw)
    s[:, 6] = rng.normal(0.0, 0.5, n)
    s[:, 7] = rng.normal(0.0, 2.0, n)
    world.step_count = 1


@pytest.mark.parametrize("robots", [2, 4, 7])
def test_the_kernels_are_the_worlds_numpy_float_for_float(robots: int) -> None:
    rng = np.random.default_rng(robots)
    world = PlanarWorld("loop", robots)
    tof = TimeOfFlight()
    width, height = world.road_map.size_m
    before, after, pairs, ranges = [], [], [], []
    for _ in range(150):
        crowded(world, rng)
        before.append(world.model._s.copy())
        world._resolve_numpy()
        after.append(world.model._s.copy())
        robot_pairs, _ = world._contacts_numpy()
        pairs.append(robot_pairs)
        live = rng.random(robots) < 0.7
        live[0] = True
        rows = np.flatnonzero(live)
        r = np.full(robots, np.nan)
        r[rows] = world.tof_ranges(tof, world.state()[rows], rows.tolist())
        ranges.append(r)
    s = np.concatenate(before)
    pk.resolve(s, robots, DISCS, fp.ROBOT_DISC_RADIUS_M, width, height, True,
               PUSH_ITERATIONS)
    moved = s.reshape(-1, robots, s.shape[1])
    pushed = stopped = 0
    for k, want in enumerate(after):
        assert moved[k].tobytes() == want.tobytes(), k
        pushed += not np.array_equal(before[k][:, :2], want[:, :2])
        stopped += int(((before[k][:, 6] != 0.0) & (want[:, 6] == 0.0)).sum())
    assert pushed > 75  # most draws overlap: the rounds of pushing are what is compared
    out = np.zeros((len(after), robots, robots), np.bool_)
    pk.touching(s, robots, DISCS, fp.ROBOT_DISC_RADIUS_M, CONTACT_DISTANCE_M, out)
    for k, want in enumerate(pairs):
        assert sorted(zip(*np.nonzero(out[k]), strict=True)) == want, k
    assert sum(len(p) for p in pairs) > 50
    records = np.zeros((len(s), 20))
    from dmxshm.sim import db18_kernels
    from dmxshm.sim.db18 import WHEEL_DISTANCE_M, WHEEL_RADIUS_M

    db18_kernels.fill_states(s, WHEEL_RADIUS_M, True, WHEEL_RADIUS_M, WHEEL_DISTANCE_M,
                             records)
    live = ~np.isnan(np.concatenate(ranges))
    got = np.full(len(s), np.nan)
    pk.tof_ranges(s, records, robots, live, DISCS, fp.ROBOT_DISC_RADIUS_M,
                  tof.mount_m[0], tof.mount_m[1], tof.max_range_m, got)
    want = np.concatenate(ranges)
    assert got.tobytes() == want.tobytes()
    assert (want[live] < tof.max_range_m).sum() > 30  # rays that met a robot
