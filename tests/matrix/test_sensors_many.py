"""The renderer's batched sensors read exactly what the one-robot functions read."""

from __future__ import annotations

import numpy as np
import pytest

from dmxshm.matrix.sensors import (
    TimeOfFlight,
    encoders,
    encoders_many,
    imu,
    imu_many,
)
from dmxshm.world.world import World


def _random_states(world: World, rng: np.random.Generator) -> np.ndarray:
    s = world.state()
    n = len(s)
    s["pos_m"][:, :2] += rng.normal(0.0, 0.2, (n, 2))
    q = rng.normal(size=(n, 4))
    s["quat_xyzw"] = q / np.linalg.norm(q, axis=1, keepdims=True)
    s["lin_acc_m_s2"] = rng.normal(size=(n, 3))
    s["ang_vel_rad_s"] = rng.normal(size=(n, 3))
    s["wheel_angle_rad"] = rng.normal(0.0, 50.0, (n, 2))
    return s


@pytest.fixture(scope="module")
def world():  # noqa: ANN201
    with World("loop", 4, seed=0) as w:
        yield w


def test_imu_and_encoders_of_many_robots_are_bit_identical_to_one_at_a_time(world: World) -> None:
    rng = np.random.default_rng(7)
    for _ in range(200):
        s = _random_states(world, rng)
        acc, gyro = imu_many(s)
        ticks = encoders_many(s)
        for j in range(len(s)):
            a, g = imu(s[j])
            assert np.array_equal(acc[j], a) and np.array_equal(gyro[j], g)
            assert np.array_equal(ticks[j], encoders(s[j]))


def test_signed_zeros_read_as_one_at_a_time(world: World) -> None:
    s = world.state()
    s["quat_xyzw"] = [0.0, 0.0, 0.0, 1.0]
    s["lin_acc_m_s2"] = -0.0
    s["ang_vel_rad_s"] = -0.0
    acc, gyro = imu_many(s)
    a, g = imu(s[0])
    assert acc[0].tobytes() == a.tobytes() and gyro[0].tobytes() == g.tobytes()


def test_a_batch_of_rays_from_poses_alone_reads_what_single_rays_read(world: World) -> None:
    tof = TimeOfFlight()
    rng = np.random.default_rng(3)
    hits = 0
    for _ in range(60):
        s = _random_states(world, rng)
        s["quat_xyzw"] = [0.0, 0.0, 0.0, 1.0]  # upright, so rays run along the floor
        s["quat_xyzw"][:, 2] = rng.normal(size=len(s))
        s["quat_xyzw"] /= np.linalg.norm(s["quat_xyzw"], axis=1, keepdims=True)
        world.set_state(s)
        one = [tof.measure(world.client, s[j]) for j in range(len(s))]
        world.set_poses(s)  # what a renderer without a camera does
        assert tof.measure_many(world.client, s) == one
        hits += sum(r < tof.max_range_m for r in one)
    assert hits > 0  # some rays hit something: the comparison saw ranges, not only misses
